"""The two-phase deletion domain: the message, topic names, the ports, the decision and the deleter.

Imports no adapter and no transport; adapters and the worker depend on it, never the reverse."""
