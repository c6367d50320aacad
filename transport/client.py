"""The Pulsar client: connecting, sending with a future, and naming message ids as Java does."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Mapping
from concurrent.futures import Future
from datetime import timedelta
from pathlib import Path
from typing import Any

import pulsar

from config import ServiceConfiguration
from core.errors import BrokerError, ConfigurationError, TransientBrokerError
from transport.auth import pulsar_authentication
from transport.oauth2 import issuer_refusal
from transport.tls_probe import broker_refusal

TRANSIENT_RESULTS = frozenset(
    {
        pulsar.Result.Timeout,
        pulsar.Result.ConnectError,
        pulsar.Result.NotConnected,
        pulsar.Result.ServiceUnitNotReady,
        pulsar.Result.TooManyLookupRequestException,
        pulsar.Result.ProducerQueueIsFull,
        pulsar.Result.LookupError,
    }
)
_TRANSIENT_EXCEPTIONS = (
    pulsar.Timeout,
    pulsar.ConnectError,
    pulsar.NotConnected,
    pulsar.LookupError,
)


def connect(config: ServiceConfiguration, log_file: Path | None = None) -> pulsar.Client:
    """A client whose own (C++) log says warnings and errors only: on the console, or in
    `log_file` if given.

    Not through Python's logging: whenever that logger cannot take the GIL, the C++ client
    falls back to logging everything down to DEBUG on stdout.
    """
    logger: Any = pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn)
    if log_file is not None:
        logger = pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(log_file))
    # Tokens, client certificates and OAuth2 read as the admin REST client reads them.
    authentication = pulsar_authentication(config.auth_plugin, config.auth_params)
    refusal = broker_refusal(config) or issuer_refusal(config)
    if refusal is not None:
        raise ConfigurationError(refusal)
    return pulsar.Client(
        config.broker_service_url,
        authentication=authentication,
        operation_timeout_seconds=config.operation_timeout_seconds,
        message_listener_threads=1,
        logger=logger,
        tls_trust_certs_file_path=config.tls_trust_certs_file_path or None,
        tls_allow_insecure_connection=config.tls_allow_insecure_connection,
    )


# How long a close may take past the client's own time-out, which answers a close the broker
# does not.
CLOSE_MARGIN_SECONDS = 10.0
# What pulsar.Client, Producer and Consumer wrap (a Producer holds its client's `_client` too).
_NATIVE = {pulsar.Client: "_client", pulsar.Producer: "_producer", pulsar.Consumer: "_consumer"}


class _OnClosed:
    """The callback `close_async` is given: what it was answered, and when the C++ client let
    go of it (the object is then freed)."""

    def __init__(self, closed: threading.Event) -> None:
        self.results: list[Any] = []
        self.closed = closed

    def __call__(self, result: Any) -> None:
        self.results.append(result)
        self.closed.set()


def close_within(closable: Any, seconds: float) -> str | None:
    """Close a client, producer or consumer through its native `close_async`, waiting at most
    `seconds`; None when closed, else what went wrong (for the caller to log).

    Not through `close()`: that waits on a C++ promise, and a partitioned producer whose
    partitions fail to close together (their CLOSE_PRODUCER requests time out on the one
    connection to a broker that stopped answering) calls back once per failed partition
    (pulsar-client-cpp lib/PartitionedProducerImpl.cc, handleSinglePartitionProducerClose
    checks and sets its Failed state without a lock). The second call sets the promise again
    and the whole process dies in std::terminate (exit -6), taking what a command had still
    to print with it. A callback here may be called any number of times.

    Nor is the answer enough: the client calls back from a thread of its own that it detaches
    (lib/ClientImpl.cc, handleClose's shutdownTask), and that thread frees its copy of the
    callback after calling it, which takes the GIL (pybind11's func_handle). A command that
    prints and exits in between has Python finalizing: the thread taking the GIL is ended by
    pthread_exit, whose unwinding through a noexcept destructor is std::terminate (exit -6,
    `terminate called without an active exception`: 4 of 100 runs of a bare close and exit).
    So this waits, within the same bound, until the client has let go of the callback."""
    native = next(
        (getattr(closable, name) for kind, name in _NATIVE.items() if isinstance(closable, kind)),
        closable,
    )
    closed, released = threading.Event(), threading.Event()
    on_closed = _OnClosed(closed)
    results = on_closed.results
    weakref.finalize(on_closed, released.set)
    deadline = time.monotonic() + seconds
    try:
        native.close_async(on_closed)
    except pulsar.PulsarException as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        del on_closed
    if not closed.wait(seconds):
        return f"no answer within {seconds:g} s"
    released.wait(max(0.0, deadline - time.monotonic()))
    if results[0] not in (pulsar.Result.Ok, pulsar.Result.AlreadyClosed):
        return str(results[0])
    return None


def translate(exc: Exception, doing: str) -> BrokerError:
    """Map a pulsar-client exception to ours: transient ones are worth a quick retry."""
    kind = TransientBrokerError if isinstance(exc, _TRANSIENT_EXCEPTIONS) else BrokerError
    return kind(f"{doing}: {type(exc).__name__}: {exc}")


def java_message_id(message_id: Any) -> str:
    """`ledgerId:entryId:partition[:batchIndex]`, as MessageIdImpl.toString() prints it."""
    text = f"{message_id.ledger_id()}:{message_id.entry_id()}:{message_id.partition()}"
    batch_index = message_id.batch_index()
    return f"{text}:{batch_index}" if batch_index >= 0 else text


def send_async(
    producer: Any,
    payload: bytes,
    properties: Mapping[str, str],
    key: str | None = None,
    delay_seconds: float = 0.0,
    ordering_key: str | None = None,
) -> Future[Any]:
    """Send and return a future that completes with the message id once the broker has it."""
    future: Future[Any] = Future()

    def on_sent(result: Any, message_id: Any) -> None:
        if result == pulsar.Result.Ok:
            future.set_result(message_id)
            return
        kind = TransientBrokerError if result in TRANSIENT_RESULTS else BrokerError
        future.set_exception(kind(f"send to {producer.topic()} failed: {result}"))

    extra: dict[str, Any] = {}
    if delay_seconds > 0:
        extra["deliver_after"] = timedelta(seconds=delay_seconds)
    if ordering_key:
        extra["ordering_key"] = ordering_key
    try:
        producer.send_async(
            payload, on_sent, properties=dict(properties), partition_key=key, **extra
        )
    except pulsar.PulsarException as exc:
        future.set_exception(translate(exc, f"send to {producer.topic()}"))
    return future
