"""What an audit is asked to do: one value, below the pipeline and every part it runs (the
tiered-storage audit reads it too), so that nothing in audit/ imports in a circle."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from audit.offload.targets import OffloadTargets
from deletion.adapters.opening import StoreSpec


@dataclass(frozen=True)
class AuditOptions:
    now_ms: int
    min_age_ms: int
    metadata: StoreSpec | None = None  # where Pulsar's metadata lives (references)
    ledgers: StoreSpec | None = None  # where the ledgers live (inventory, dangling re-check)
    inventory_file: Path | None = None
    references_file: Path | None = None
    output: Path | None = None
    offload: OffloadTargets | None = None  # tiered storage to audit too (None: not configured)
