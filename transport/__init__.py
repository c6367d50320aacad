"""The Pulsar transport below producers and consumers: the client, the producer pool, admin REST."""
