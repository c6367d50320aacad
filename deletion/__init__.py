"""The two-phase deletion domain: the message, topic names, ports, the in-use rule."""
