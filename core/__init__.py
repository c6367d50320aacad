"""The bottom layer: the project's one exception hierarchy, its clocks and its retry policy.

Imports nothing of ours."""
