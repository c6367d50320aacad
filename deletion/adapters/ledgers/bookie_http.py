"""LedgerStorage that deletes through a bookie's HTTP API (`DELETE /api/v1/ledger/delete`).

The bookie deletes with the BookKeeper client, exactly as Pulsar would. Reads (for the
ownership check) still come from the ledger metadata in the metadata store.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from core.errors import (
    LedgerStorageError,
    TransientLedgerStorageError,
    VersionConflictError,
)
from deletion.adapters.ledgers.bookkeeper import BookKeeperLedgerStorage
from deletion.domain.ports import ANY_VERSION, LedgerRecord, LedgerStorage, Session


class BookieHttpLedgerStorage(LedgerStorage):
    def __init__(
        self,
        metadata: BookKeeperLedgerStorage,
        base_url: str,
        timeout_seconds: float = 10.0,
        client: httpx.Client | None = None,
    ) -> None:
        self._metadata = metadata
        self._url = base_url.rstrip("/") + "/api/v1/ledger/delete"
        self._client = client or httpx.Client(timeout=timeout_seconds, trust_env=False)

    def verify_layout(self) -> None:
        self._metadata.verify_layout()

    def session(self) -> Session:
        return self._metadata.session()

    def ledger(self, ledger_id: int) -> LedgerRecord | None:
        return self._metadata.ledger(ledger_id)

    def ledgers(self, ledger_ids: Sequence[int]) -> dict[int, LedgerRecord | None]:
        return self._metadata.ledgers(ledger_ids)

    def delete_ledger(self, ledger_id: int, expected_version: int = ANY_VERSION) -> bool:
        current = self._metadata.ledger(ledger_id)
        if current is None:
            return False
        # The HTTP API deletes unconditionally; check the version as close to it as we can.
        if expected_version not in (ANY_VERSION, current.version):
            raise VersionConflictError(f"ledger {ledger_id} changed (version {current.version})")
        try:
            response = self._client.delete(self._url, params={"ledger_id": str(ledger_id)})
        except httpx.TransportError as exc:
            raise TransientLedgerStorageError(f"bookie HTTP unreachable: {exc}") from exc
        if response.is_success:
            return True
        if self._metadata.ledger(ledger_id) is None:
            return False  # someone else deleted it meanwhile
        kind = TransientLedgerStorageError if response.status_code >= 500 else LedgerStorageError
        raise kind(f"bookie refused to delete ledger {ledger_id}: HTTP {response.status_code}")

    def close(self) -> None:
        self._client.close()
        self._metadata.close()
