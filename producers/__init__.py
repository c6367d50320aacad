"""Phase one: enqueue delayed pending deletions before metadata is committed."""

from producers.phase_one import PhaseOne
from transport.producer_pool import ProducerPool

__all__ = ["PhaseOne", "ProducerPool"]
