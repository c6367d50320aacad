"""The JSON of etcd's v3 gateway requests, keyed as Pulsar keys its metadata.

Keys are paths in UTF-8, base64 on the wire; a node's children are the keys under `path/`;
a version is etcd's per-key `version` minus one (see etcd.py for the sources).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from core.errors import MetadataError
from deletion.domain.ports import ANY_VERSION

# etcd's default --max-txn-ops: the most compares, or operations of one branch, in a transaction.
MAX_TXN_OPS = 128
# A delete takes two compares (version, nothing below) and two reads when the compares fail.
DELETES_PER_TXN = MAX_TXN_OPS // 2


def check_path(path: str) -> None:
    segments = path.split("/")[1:]
    bad = not path.startswith("/") or (path != "/" and not all(segments))
    if bad or any(segment in (".", "..") for segment in segments):
        raise MetadataError(f"invalid metadata path {path!r}")


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode("ascii")


def key(path: str) -> str:
    return b64(path.encode("utf-8"))


def below(path: str) -> bytes:
    """The prefix of every key below `path`."""
    return path.encode("utf-8") if path == "/" else f"{path}/".encode()


def range_end(prefix: bytes) -> bytes:
    """The first key after every key starting with `prefix` (which ends in "/")."""
    return prefix[:-1] + bytes([prefix[-1] + 1])


def compare(
    key: bytes, target: str, result: str, end: bytes | None = None, **value: int
) -> dict[str, Any]:
    compared: dict[str, Any] = {"key": b64(key), "target": target, "result": result}
    if end is not None:
        compared["range_end"] = b64(end)  # every key of the range must pass; none passes
    compared.update({name: str(number) for name, number in value.items()})
    return compared


def absent(path: str) -> dict[str, Any]:
    return compare(path.encode("utf-8"), "CREATE", "EQUAL", create_revision=0)


def nothing_below(path: str) -> dict[str, Any]:
    prefix = below(path)
    return compare(prefix, "CREATE", "EQUAL", range_end(prefix), create_revision=0)


def version_is(path: str, expected_version: int) -> dict[str, Any]:
    encoded = path.encode("utf-8")
    if expected_version == ANY_VERSION:
        return compare(encoded, "VERSION", "GREATER", version=0)  # it exists
    return compare(encoded, "VERSION", "EQUAL", version=expected_version + 1)


def read(path: str, **options: Any) -> dict[str, Any]:
    return {"request_range": {"key": key(path), **options}}


def first_below(path: str) -> dict[str, Any]:
    prefix = below(path)
    return {
        "request_range": {
            "key": b64(prefix),
            "range_end": b64(range_end(prefix)),
            "keys_only": True,
            "limit": 1,
        }
    }


def put(path: str, data: bytes, **options: Any) -> dict[str, Any]:
    return {"request_put": {"key": key(path), "value": b64(data), **options}}


def create_if_missing(path: str) -> dict[str, Any]:
    """A nested transaction: etcd applies it inside the outer one, atomically."""
    return {"request_txn": {"compare": [absent(path)], "success": [put(path, b"")]}}


def kvs(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The key-values of a range answer, alone or as one answer of a transaction."""
    found: list[dict[str, Any]] = response.get("response_range", response).get("kvs", [])
    return found


def parents(path: str) -> list[str]:
    segments = path.split("/")[1:-1]
    return ["/" + "/".join(segments[: i + 1]) for i in range(len(segments))]


def delete_chunks(versions: Sequence[tuple[str, int]]) -> Iterator[list[int]]:
    """Indexes in transactions of at most DELETES_PER_TXN, no path twice in one (etcd refuses
    a transaction that deletes a key twice; the second delete then finds it gone)."""
    chunk: list[int] = []
    paths: set[str] = set()
    for i, (path, _) in enumerate(versions):
        if len(chunk) == DELETES_PER_TXN or path in paths:
            yield chunk
            chunk, paths = [], set()
        chunk.append(i)
        paths.add(path)
    if chunk:
        yield chunk
