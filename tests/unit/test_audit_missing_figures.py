"""audit.json's missing-data figures count ledgers, as the MISSING DATA block and the
`missing_data_ledgers` metric do: a ledger two references name is one ledger gone (issue 31:
`"missing_bookkeeper": 4` beside a block and a metric that said 3)."""

from __future__ import annotations

from typing import Any, cast

from pyspark.sql import Row

from audit.offload.tiered import TieredAudit
from audit.report.console import missing_ledgers
from audit.schema import MISSING_BOOKKEEPER, MISSING_OFFLOADED


def _row(what: str, ledger_id: int, topic: str, component: str) -> Row:
    nothing = {"offload_uuid": None, "store": None, "entries": None, "size": None}
    return Row(
        what=what, ledger_id=ledger_id, topic=topic, namespace="a/b", component=component, **nothing
    )


def test_a_ledger_named_by_two_references_counts_once() -> None:
    rows = [
        _row(MISSING_BOOKKEEPER, 7, "a/b/t", "MANAGED_LEDGER"),
        _row(MISSING_BOOKKEEPER, 7, "a/b/u", "MANAGED_LEDGER"),  # the same ledger, twice
        _row(MISSING_BOOKKEEPER, 8, "a/b/t", "MANAGED_CURSOR"),
        _row(MISSING_BOOKKEEPER, 9, "a/b/t", "MANAGED_LEDGER"),
        _row(MISSING_OFFLOADED, 9, "a/b/t", "MANAGED_LEDGER"),
    ]
    audit = TieredAudit(None, cast(Any, None), rows)
    figures = audit.figures()
    assert figures["missing_bookkeeper"] == 3
    assert figures["missing_offloaded"] == 1
    assert len(missing_ledgers(rows)) == 3  # the block's and the metric's count
