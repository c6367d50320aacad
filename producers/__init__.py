"""Phase one: enqueue delayed pending deletions before metadata is committed."""

from .phase_one import PhaseOne
from .pool import ProducerPool

__all__ = ["PhaseOne", "ProducerPool"]
