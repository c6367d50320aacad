"""Phase one against a broker that stops answering: a pulsar-lite of the test's own, stopped
with SIGSTOP while sends are in flight (its sockets stay open, the kernel still takes the
bytes, nothing is answered), then continued.

A send the broker never answers is not enqueued: the metadata change waits for every
acknowledgement and never runs. Phase one's wait is cut to a few seconds here, well inside
the client's own send time-out, so the sends are still unanswered (not failed) when it ends.
`ledger-janitor enqueue` says so too: exit 2 when nothing was enqueued, 3 with the ledgers
to enqueue again when some were.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from core.errors import EnqueueError
from deletion.domain.message import decode
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import JanitorFactory, embedded_store, sqlite_backend
from harness.process import paused, run_cli, start_cli
from ledger_janitor.demo.embedded import EmbeddedBroker
from producers.phase_one import PhaseOne
from tests.reliability.oracle import GroundTruth, ml_path, pending

WAIT = 3.0  # phase one's wait for acknowledgements (the client's own send time-out: 60 s)
ENQUEUED = re.compile(r"enqueued MANAGED_LEDGER LEDGER (\d+) of \S+ as \((\d+),(\d+),(\d+),-1\)$")
NOT_ENQUEUED = re.compile(r"not enqueued MANAGED_LEDGER LEDGER (\d+) of \S+: (.+)$")


@pytest.fixture
def factory(own_broker: EmbeddedBroker, tmp_path: Path) -> Iterator[JanitorFactory]:
    backend = sqlite_backend(str(tmp_path / "janitor.db"))
    opened = JanitorFactory(backend, own_broker.service_url, tmp_path)
    yield opened
    opened.close()
    backend.ledgers.close()
    backend.metadata.close()


def test_sends_the_broker_never_answers_are_not_enqueued_and_nothing_commits(
    factory: JanitorFactory, own_broker: EmbeddedBroker, namespace: NamespaceName
) -> None:
    backend = factory.backend
    seeder = GroundTruth(backend.metadata, backend.factory)
    topic = TopicName(namespace, "orders")
    seeded = seeder.seed(topic, ledgers=4)
    first, *rest = seeded.ledgers[:4]
    sidecar = factory.sidecar(operation_timeout_seconds=60)
    phase_one = PhaseOne(sidecar.pool, sidecar.registry, 1, timeout_seconds=WAIT)
    # The broker answers: the producer is made, a first release goes through.
    phase_one.enqueue_then_commit([pending(topic, first)], lambda: seeder.release(topic, [first]))
    node = backend.metadata.get(ml_path(topic))
    assert node is not None
    committed: list[list[int]] = []

    def commit() -> None:
        committed.append(rest)
        seeder.release(topic, rest)

    assert own_broker.process is not None
    with paused(own_broker.process):
        started = time.monotonic()
        with pytest.raises(EnqueueError) as refused:
            phase_one.enqueue_then_commit([pending(topic, ledger) for ledger in rest], commit)
        waited = time.monotonic() - started
    assert committed == []
    after = backend.metadata.get(ml_path(topic))
    assert after is not None and after.stat.version == node.stat.version  # untouched
    listed = str(refused.value).splitlines()[1:]
    assert listed == [
        f"MANAGED_LEDGER LEDGER {ledger} of {topic}: not acknowledged within {WAIT:g} s"
        for ledger in rest
    ]
    assert WAIT <= waited < WAIT + 30  # the wait, not the client's 60 s send time-out
    # Continued, the broker answers again: the same release goes through now.
    phase_one.enqueue_then_commit([pending(topic, ledger) for ledger in rest], commit)
    assert committed == [rest]


def _cli_store(tmp_path: Path) -> str:
    return embedded_store(tmp_path / "cli.db")  # the operator's store exists already


def test_enqueue_to_a_broker_that_does_not_answer_exits_2_after_one_time_out(
    own_broker: EmbeddedBroker, tmp_path: Path, namespace: NamespaceName
) -> None:
    """Stopped before `enqueue` starts: the connection is accepted and never answered. Every
    ledger is "not enqueued", one `error:` line says none was, exit 2; and that after one
    connection time-out (10 s), not one per ledger (the five took five, 50 s)."""
    topic = f"{namespace}/orders"
    args = ("enqueue", topic, "1", "2", "3", "4", "5",
            "--metadata-store", _cli_store(tmp_path), "--broker-url", own_broker.service_url,
            "--set", "operationTimeoutSeconds=3")  # fmt: skip
    assert own_broker.process is not None
    with paused(own_broker.process):
        started = time.monotonic()
        hung = run_cli(*args, timeout=300)
        took = time.monotonic() - started
    assert hung.returncode == 2, hung.stderr
    lines = hung.stdout.splitlines()
    assert [NOT_ENQUEUED.match(line)[1] for line in lines] == ["1", "2", "3", "4", "5"]  # type: ignore[index]
    assert not any(line.startswith("enqueued") for line in lines)
    (error,) = [line for line in hung.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith("error: none of 5 ledgers enqueued: "), error
    assert "ConnectError" in error or "Timeout" in error, error
    # The client says each connection it gave up on: one for the namespace, not one a ledger.
    assert hung.stderr.count("was not established in") == 1, hung.stderr
    assert took < 60, f"{took:.1f} s"
    # Continued: the broker answers, and the same command enqueues all five.
    again = run_cli(*args, timeout=120)
    assert again.returncode == 0, again.stderr
    assert [ENQUEUED.match(line)[1] for line in again.stdout.splitlines()] == [  # type: ignore[index]
        "1", "2", "3", "4", "5",
    ]  # fmt: skip


def test_enqueue_cut_off_mid_batch_exits_3_naming_what_was_not_enqueued(
    own_broker: EmbeddedBroker, tmp_path: Path, namespace: NamespaceName
) -> None:
    """The broker stops answering while `enqueue` sends: what it acknowledged is enqueued,
    and is on the topic; the rest are named in one line to enqueue again, exit 3."""
    count = 20_000  # far more than the broker persists before the test stops it
    topic = TopicName(namespace, "orders")
    watcher_client = pulsar.Client(
        own_broker.service_url,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(tmp_path / "watcher.log")),
    )
    try:
        watcher = watcher_client.subscribe(
            namespace.deletion_topic, "watch", consumer_type=pulsar.ConsumerType.Shared,
            initial_position=pulsar.InitialPosition.Earliest,
        )  # fmt: skip
        process = start_cli(
            "enqueue", str(topic), *map(str, range(1, count + 1)),
            "--metadata-store", _cli_store(tmp_path), "--broker-url", own_broker.service_url,
            "--set", "operationTimeoutSeconds=3", columns=None,
        )  # fmt: skip
        try:
            seen = [watcher.receive(120_000) for _ in range(100)]  # persisted, and answered
            assert own_broker.process is not None
            with paused(own_broker.process):
                stdout, stderr = process.communicate(timeout=300)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert process.returncode == 3, stderr[-2000:]
        enqueued, failed = set(), {}
        for line in stdout.splitlines():
            if match := ENQUEUED.match(line):
                enqueued.add(int(match[1]))
            elif match := NOT_ENQUEUED.match(line):
                failed[int(match[1])] = match[2]
            else:
                raise AssertionError(f"unexpected line: {line}")
        assert enqueued and failed and len(enqueued) + len(failed) == count
        assert set(failed.values()) <= {
            f"not acknowledged within {WAIT:g} s",
            f"send to {namespace.deletion_topic} failed: Result.Timeout",
        }, set(failed.values())
        (error,) = [line for line in stderr.splitlines() if line.startswith("error:")]
        named = re.fullmatch(r"error: ([\d,]+) of ([\d,]+) ledgers not enqueued \(([\d ]+)\): "
                             r"enqueue them again", error)  # fmt: skip
        assert named is not None, error
        assert {int(ledger) for ledger in named[3].split()} == set(failed)
        # Everything said to be enqueued is on the topic (the broker, continued, delivers it).
        on_topic = {decode(message.data()).ledger_id for message in seen}
        while not enqueued <= on_topic:
            message = watcher.receive(60_000)
            watcher.acknowledge(message)
            on_topic.add(decode(message.data()).ledger_id)
    finally:
        watcher_client.close()
