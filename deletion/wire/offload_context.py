"""Decoding an offloaded ledger's `LedgerInfo.offloadContext`, and building one for tests.

What Pulsar writes (managed-ledger/.../offload/OffloadUtils.java, setOffloadDriverMetadata and
getOffloadDriverMetadata): `uidMsb`/`uidLsb`, the two signed halves of a `java.util.UUID`;
`complete`, set only once the offloader has finished writing; and `driverMetadata{name,
properties}`, the offloader's `getOffloadDriverMetadata()` as key/value pairs (a HashMap in
Java, so a repeated key means the last one wins).
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from core.errors import DecodeError
from deletion.wire.proto.ml_data_formats_pb2 import ManagedLedgerInfo

_MASK64 = (1 << 64) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


class IncompleteOffloadError(DecodeError):
    """`complete` is not set: Pulsar may still be writing the objects, so they must stay."""


@dataclass(frozen=True)
class OffloadedLedger:
    """Where one ledger's offloaded copy is, as far as its own context says."""

    ledger_id: int
    uuid: str
    driver_name: str | None
    properties: Mapping[str, str] = field(default_factory=dict)

    def property(self, key: str) -> str | None:
        """A driver property; Pulsar writes "" for settings that were not configured."""
        value = self.properties.get(key)
        return value if value else None


def java_uuid(msb: int, lsb: int) -> str:
    """`new UUID(msb, lsb).toString()`: the 128 bits as unsigned 8-4-4-4-12 lowercase hex."""
    for half in (msb, lsb):
        if not _INT64_MIN <= half <= _INT64_MAX:
            raise DecodeError(f"UUID half {half} is not a signed 64-bit integer")
    return str(uuid_lib.UUID(int=((msb & _MASK64) << 64) | (lsb & _MASK64)))


def java_uuid_bits(value: str | uuid_lib.UUID) -> tuple[int, int]:
    """The inverse of `java_uuid`: `(getMostSignificantBits(), getLeastSignificantBits())`."""
    parsed = value if isinstance(value, uuid_lib.UUID) else uuid_lib.UUID(value)
    return _signed(parsed.int >> 64), _signed(parsed.int & _MASK64)


def _signed(half: int) -> int:
    return half - (1 << 64) if half > _INT64_MAX else half


def parse_ledger_info(data: bytes) -> ManagedLedgerInfo.LedgerInfo:
    info = ManagedLedgerInfo.LedgerInfo()
    try:
        info.ParseFromString(data)
    except Exception as exc:  # protobuf reports bad bytes with its own DecodeError and others
        raise DecodeError(f"context is not a ManagedLedgerInfo.LedgerInfo: {exc}") from exc
    return info


def decode_offload(ledger_id: int, info: ManagedLedgerInfo.LedgerInfo) -> OffloadedLedger:
    """Validate the context and say where the offloaded copy is; DecodeError if we cannot tell."""
    if info.ledgerId != ledger_id:
        raise DecodeError(f"context describes ledger {info.ledgerId}, not ledger {ledger_id}")
    if not info.HasField("offloadContext"):
        raise DecodeError(f"ledger {ledger_id}: context has no offloadContext")
    ctx = info.offloadContext
    if len(ctx.offloadSegment) > 0:
        # Streaming offload segments may hold several ledgers: deleting one would delete others.
        raise DecodeError(
            f"ledger {ledger_id}: streaming offload segments are not supported for deletion"
        )
    if not (ctx.HasField("uidMsb") and ctx.HasField("uidLsb")):
        raise DecodeError(f"ledger {ledger_id}: offloadContext has no uid")
    uid = java_uuid(ctx.uidMsb, ctx.uidLsb)
    if not ctx.complete:
        raise IncompleteOffloadError(
            f"ledger {ledger_id}: offload {uid} is not complete; Pulsar may still be writing it,"
            " so it is not deleted"
        )
    driver_name: str | None = None
    properties: dict[str, str] = {}
    if ctx.HasField("driverMetadata"):
        metadata = ctx.driverMetadata
        driver_name = metadata.name or None
        for pair in metadata.properties:
            properties[pair.key] = pair.value
    return OffloadedLedger(ledger_id, uid, driver_name, MappingProxyType(properties))


def offload_context(
    ledger_id: int,
    uuid: str | uuid_lib.UUID,
    driver_name: str,
    properties: Mapping[str, str],
    *,
    complete: bool = True,
) -> bytes:
    """A serialized `LedgerInfo` as Pulsar records an offloaded ledger (for tests and the demo)."""
    msb, lsb = java_uuid_bits(uuid)
    info = ManagedLedgerInfo.LedgerInfo(ledgerId=ledger_id)
    ctx = info.offloadContext
    ctx.uidMsb = msb
    ctx.uidLsb = lsb
    ctx.complete = complete
    ctx.driverMetadata.name = driver_name
    for key, value in properties.items():
        ctx.driverMetadata.properties.add(key=key, value=value)
    return info.SerializeToString()
