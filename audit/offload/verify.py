"""Looking again, on the driver, for a complete offload's objects the listing did not show.

They may have been written after the listing (the offloader sets `complete` last): only
what is still absent now is reported missing. Any error other than "not found" fails the
audit rather than raising a false data-loss alarm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from audit.errors import AuditError
from audit.offload.targets import OffloadTargets
from deletion.adapters.offload import data_key, index_key
from deletion.adapters.offload.s3 import head_object
from deletion.domain.topics import TopicName


class Presence:
    """Looks objects up again; one S3 client for all the candidates."""

    def __init__(self, targets: OffloadTargets) -> None:
        self._targets = targets
        self._client: Any = None

    def __call__(self, row: Any) -> bool:
        """Whether all of the offload's objects are there now (`row`: a missing_offloaded row)."""
        ledger_id, uuid = int(row["ledger_id"]), str(row["offload_uuid"])
        if row["store"] == "s3":
            return self._in_s3(ledger_id, uuid)
        if self._targets.filesystem is None:
            raise AuditError("a filesystem offload was judged with no base path configured")
        name = TopicName.parse(str(row["topic"])).managed_ledger_name
        base = Path(self._targets.filesystem.base_path)
        directory = base.joinpath(*name.split("/"), f"{ledger_id}-{uuid}")
        return (directory / "data").is_file() and (directory / "index").is_file()

    def _in_s3(self, ledger_id: int, uuid: str) -> bool:
        s3 = self._targets.s3
        if s3 is None:
            raise AuditError("an S3 offload was judged with no S3 storage configured")
        if self._client is None:
            self._client = s3.client()
        keys = (data_key(ledger_id, uuid), index_key(ledger_id, uuid))
        return all(_exists(self._client, s3.bucket, key) for key in keys)


def _exists(client: Any, bucket: str, key: str) -> bool:
    return head_object(client, bucket, key) is not None
