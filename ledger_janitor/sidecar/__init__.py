"""The sidecar: `run`, the wiring of its parts, its endpoint, monitor, metrics, reachability."""
