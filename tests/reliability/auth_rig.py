"""Shared helpers of the authentication tests."""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pulsar
import pytest

from config import ServiceConfiguration
from harness.pki import Pki, make_pki
from transport import client as pulsar_broker

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _fields(data: bytes) -> dict[int, bytes | int]:
    found: dict[int, bytes | int] = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        if key & 7 == 0:
            found[key >> 3], at = _varint(data, at)
        elif key & 7 == 2:
            size, at = _varint(data, at)
            found[key >> 3], at = data[at : at + size], at + size
        else:
            raise ValueError(f"wire type {key & 7}")
    return found


@dataclass(frozen=True)
class Connect:
    """What the client sent in CommandConnect (PulsarApi.proto: BaseCommand.connect = 2)."""

    auth_method_name: str
    auth_data: bytes


@dataclass
class FakeBroker:
    port: int
    tls: bool
    seen: list[Connect] = field(default_factory=list)
    handshake_failures: list[str] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        return f"pulsar{'+ssl' if self.tls else ''}://127.0.0.1:{self.port}"


@contextmanager
def fake_broker(context: ssl.SSLContext | None = None) -> Iterator[FakeBroker]:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)  # so that the loop sees `stopping`
    fake = FakeBroker(listener.getsockname()[1], context is not None)
    stopping = threading.Event()

    def serve() -> None:
        while not stopping.is_set():
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                continue
            raw.settimeout(10)
            try:
                conn = context.wrap_socket(raw, server_side=True) if context else raw
            except (ssl.SSLError, OSError) as exc:
                fake.handshake_failures.append(str(exc))
                raw.close()
                fake.done.set()
                continue
            with conn:
                frame = _read_frame(conn)
                if frame is not None:
                    connect = _fields(_fields(frame)[2])  # type: ignore[arg-type]
                    name = connect.get(5, b"")
                    assert isinstance(name, bytes)
                    data = connect.get(3, b"")
                    assert isinstance(data, bytes)
                    fake.seen.append(Connect(name.decode(), data))
            fake.done.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        stopping.set()
        thread.join(5)
        listener.close()


def _read_frame(conn: socket.socket) -> bytes | None:
    head = _read(conn, 8)
    if head is None:
        return None
    total, command = struct.unpack(">II", head)
    body = _read(conn, total - 4)
    return None if body is None else body[:command]


def _read(conn: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def attempt(config: ServiceConfiguration, fake: FakeBroker, log: Path) -> None:
    """Connect through the product's own client factory, as the sidecar does."""
    client = pulsar_broker.connect(config, log)

    def produce() -> None:
        with contextlib.suppress(pulsar.PulsarException):
            client.create_producer("persistent://t/ns/x")  # the fake never answers

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        assert fake.done.wait(10), "the client never reached the endpoint"
    finally:
        client.close()
        thread.join(10)


def config_for(url: str, **overrides: object) -> ServiceConfiguration:
    return ServiceConfiguration().with_overrides(
        broker_service_url=url, operation_timeout_seconds=2, **overrides
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))
