"""The durable cursor against real metadata stores and the worker."""
