"""Versioned deletes in ZooKeeper `multi` requests, the rest one by one.

A delete sent as its own request costs, per ledger, a trip through the server's request
pipeline and a transaction-log write, and in kazoo an async result and a wake-up of its
connection thread: about half of what the worker waited for. One multi of up to
`DELETES_PER_REQUEST` deletes pays them once.

A multi is all or nothing. When one of its deletes fails, the server answers that one with
its own error, those before it with OK and those after it with RUNTIMEINCONSISTENCY, and
applies none (apache/zookeeper `DataTree.processTxn`, the `post_failed` loop over a failed
multi's transactions; kazoo reads OK there as `RolledBackError`). The failing delete's
answer is then final: gone, or changed since it was read, or an error. The others were not
applied, so they are sent again, each as its own request (pipelined): one gone or changed
ledger costs the batch one more round trip, never one per failure.

A request is kazoo's own `Transaction` of `Delete` operations, sent and answered through its
connection as `TransactionRequest.commit_async` sends it; the paths are put under the chroot
as the reads' are (`zookeeper_multiread.chrooted`), without kazoo's per-operation checks and
logging, which cost more than the rest of building the request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import MarshallingError, RolledBackError, RuntimeInconsistency
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.serialization import Delete, Transaction

from deletion.adapters.stores.zookeeper_multiread import chrooted

DELETES_PER_REQUEST = 1000  # ~60 KiB of request: far below the server's 1 MiB jute.maxbuffer
_NOT_TRIED = (RolledBackError, RuntimeInconsistency)


@dataclass(frozen=True)
class MultiDelete:
    """One multi request in flight: its deletes' places in the batch, and its reply."""

    places: range
    reply: IAsyncResult


@dataclass(frozen=True)
class Answer:
    """A multi's answer: `failed` is the place and error of the delete that failed it (None
    if all were applied), `again` the places of those it kept from being applied."""

    applied: bool
    failed: tuple[int, Exception] | None = None
    again: tuple[int, ...] = ()


def send(client: KazooClient, versions: Sequence[tuple[str, int]]) -> list[MultiDelete]:
    """Every delete sent, in multi requests of up to DELETES_PER_REQUEST, none awaited. A
    path kazoo refuses (RequestFailedError) fails the batch before anything is sent."""
    paths = chrooted(client, [path for path, _ in versions])
    built: list[tuple[range, Transaction]] = []
    for start in range(0, len(versions), DELETES_PER_REQUEST):
        places = range(start, min(start + DELETES_PER_REQUEST, len(versions)))
        deletes = [Delete(paths[place], versions[place][1]) for place in places]
        built.append((places, Transaction(deletes)))
    return [MultiDelete(places, _sent(client, request)) for places, request in built]


def _sent(client: KazooClient, request: Transaction) -> IAsyncResult:
    reply = client.handler.async_result()
    client._call(request, reply)
    return reply


def answer(multi: MultiDelete, timeout: float) -> Answer:
    """What became of a multi's deletes. Raises what kazoo raises for a request that failed
    as a whole (a lost connection, say): whether it was applied is then unknown."""
    results = multi.reply.get(timeout=timeout)
    if len(results) != len(multi.places):
        raise MarshallingError(f"{len(results)} results for {len(multi.places)} deletes")
    if all(result is True for result in results):
        return Answer(applied=True)
    failed = next(
        (
            (place, result)
            for place, result in zip(multi.places, results, strict=True)
            if isinstance(result, Exception) and not isinstance(result, _NOT_TRIED)
        ),
        None,
    )
    again = tuple(place for place in multi.places if failed is None or place != failed[0])
    return Answer(applied=False, failed=failed, again=again)
