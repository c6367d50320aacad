"""Credentials and TLS: token auth to the broker, TLS settings passed through to the Pulsar
client, and ZooKeeper digest ACLs against the real server.

pulsar-lite has no authentication (it accepts any token, see the first test) and no TLS, so
the broker side is checked on the wire instead: a loopback endpoint that speaks just enough
of Pulsar's binary protocol to read the client's CONNECT command, in plain TCP or in TLS
with a CA made here. Credentials come only from files and the environment.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
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
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl

from config import ServiceConfiguration, load_configuration, parse_store_url
from core.clock import EpochSeconds
from core.errors import ConfigurationError, MetadataError
from deletion.adapters.pulsar_metadata import MetadataInUseLedgers
from deletion.adapters.stores.zookeeper import DIGEST_ENV, ZooKeeperMetadataStore
from deletion.domain.decision import Decision, Verdict
from deletion.domain.topics import NamespaceName, TopicName
from harness.janitor import ZkLedgerFactory
from harness.process import wait_until
from harness.zookeeper import ZooKeeperServer
from ledger_janitor.embedded import EmbeddedBroker
from ledger_janitor.wiring import open_sidecar
from tests.reliability.oracle import GroundTruth, ml_path, pending
from tests.reliability.raw_ledgers import ZooKeeperLedgers
from tests.reliability.support import start_worker
from transport import client as pulsar_broker

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"


# --- a loopback endpoint that reads CONNECT ------------------------------------------------


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


# --- token auth ----------------------------------------------------------------------------


def test_pulsar_lite_accepts_any_token(
    broker: EmbeddedBroker,
    tmp_path: Path,
) -> None:
    """Why the token tests below use a fake endpoint: pulsar-lite enforces nothing."""
    config = ServiceConfiguration().with_overrides(
        broker_service_url=broker.service_url,
        auth_plugin=TOKEN_PLUGIN,
        auth_params="token:not-a-valid-jwt",
    )
    client = pulsar_broker.connect(config, tmp_path / "client.log")
    try:
        client.create_producer("persistent://auth-check/ns/t").send(b"accepted")
    finally:
        client.close()


@pytest.mark.parametrize("form", ["file:", "file://", "env:", "token:", "environment only"])
def test_the_token_reaches_the_broker_from_files_and_the_environment(
    form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"jwt-{form.strip(':/').replace(' ', '-')}"
    token_file = tmp_path / "token"
    token_file.write_text(secret + "\n")  # as editors and `kubectl create secret` write it
    monkeypatch.setenv("JANITOR_TEST_TOKEN", secret)
    params = {
        "file:": f"file:{token_file}",
        "file://": f"file://{token_file}",
        "env:": "env:JANITOR_TEST_TOKEN",
        "token:": f"token:{secret}",
        "environment only": f"file:{token_file}",
    }[form]
    with fake_broker() as fake:
        if form == "environment only":  # nothing on a command line: LEDGER_JANITOR_* only
            environ = {
                "LEDGER_JANITOR_AUTH_PLUGIN": TOKEN_PLUGIN,
                "LEDGER_JANITOR_AUTH_PARAMS": params,
                "LEDGER_JANITOR_BROKER_SERVICE_URL": fake.url,
                "LEDGER_JANITOR_OPERATION_TIMEOUT_SECONDS": "2",
            }
            config = load_configuration(None, environ, {}).config
        else:
            config = config_for(fake.url, auth_plugin=TOKEN_PLUGIN, auth_params=params)
        attempt(config, fake, tmp_path / "client.log")
    assert fake.seen, fake.handshake_failures
    assert set(fake.seen) == {Connect("token", secret.encode())}  # on every (re)connect


# --- TLS -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    ca_file: Path
    server: ssl.SSLContext


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "reliability test CA")])
    window = datetime.timedelta(hours=1)

    def certificate(
        subject: x509.Name, public_key: ec.EllipticCurvePublicKey
    ) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .issuer_name(ca_name)
            .subject_name(subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - window)
            .not_valid_after(now + window)
        )

    ca = (
        certificate(ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    leaf = (
        certificate(
            x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "broker")]), key.public_key()
        )
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (directory / "ca.pem").write_bytes(ca.public_bytes(pem))
    (directory / "broker.pem").write_bytes(
        leaf.public_bytes(pem)
        + key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(directory / "broker.pem")
    return Pki(directory / "ca.pem", server)


@pytest.mark.parametrize("trust", ["ca file", "insecure", "none"])
def test_tls_settings_reach_the_pulsar_client(trust: str, pki: Pki, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("jwt-over-tls\n")
    with fake_broker(pki.server) as fake:
        settings: dict[str, object] = {
            "auth_plugin": TOKEN_PLUGIN,
            "auth_params": f"file:{token_file}",
        }
        if trust == "ca file":
            settings["tls_trust_certs_file_path"] = str(pki.ca_file)
        elif trust == "insecure":
            settings["tls_allow_insecure_connection"] = True
        attempt(config_for(fake.url, **settings), fake, tmp_path / "client.log")
    if trust == "none":  # our CA is in no system store: the handshake must fail
        assert fake.seen == [] and fake.handshake_failures
    else:
        assert fake.seen and set(fake.seen) == {Connect("token", b"jwt-over-tls")}


# --- ZooKeeper digest ACLs -----------------------------------------------------------------

USER, PASSWORD = "janitor", "s3cret-digest"


def test_zookeeper_digest_acls(
    zookeeper: ZooKeeperServer,
    broker: EmbeddedBroker,
    chroot: str,
    namespace: NamespaceName,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The operator's part: a chroot only `janitor` may touch.
    admin = KazooClient(hosts=zookeeper.hosts, auth_data=[("digest", f"{USER}:{PASSWORD}")])
    admin.start()
    admin.create(chroot, b"", acl=[make_digest_acl(USER, PASSWORD, all=True)])
    admin.stop()
    admin.close()
    url = f"zk:{zookeeper.hosts}{chroot}"

    # With the credentials from the environment: seed Pulsar's layout, enqueue, commit.
    monkeypatch.setenv(DIGEST_ENV, f"{USER}:{PASSWORD}")
    store = ZooKeeperMetadataStore.connect(parse_store_url(url))
    truth = GroundTruth(store, ZkLedgerFactory(store))
    seeded = truth.seed(TopicName(namespace, "secure"), 6)
    released = seeded.ledgers[:4]
    config = ServiceConfiguration().with_overrides(
        metadata_store_url=url,
        broker_service_url=broker.service_url,
        send_delay_seconds_of_two_phase_deletion=0,
    )
    sidecar = open_sidecar(config, client_log=tmp_path / "client.log")
    try:
        sidecar.phase_one.enqueue_then_commit(
            [pending(seeded.topic, i) for i in released],
            lambda: truth.release(seeded.topic, released),
        )
    finally:
        sidecar.close()

    # What we create is ours alone (CREATOR_ALL_ACL): nobody else can even read it.
    anonymous = KazooClient(hosts=zookeeper.hosts + chroot)
    anonymous.start()
    try:
        with pytest.raises(NoAuthError):
            anonymous.get(ml_path(seeded.topic))
    finally:
        anonymous.stop()
        anonymous.close()

    # Without credentials, or with a wrong password: "unknown", so never deleted.
    for credentials in (None, f"{USER}:wrong"):
        if credentials is None:
            monkeypatch.delenv(DIGEST_ENV)
        else:
            monkeypatch.setenv(DIGEST_ENV, credentials)
        blind = open_sidecar(config, client_log=tmp_path / "client.log")
        try:
            with pytest.raises(MetadataError):
                MetadataInUseLedgers(blind.metadata).fetch(seeded.topic)
            ruling = blind.handler().decide(
                pending(seeded.topic, released[0]), namespace, EpochSeconds(0.0)
            )
            assert isinstance(ruling, Decision) and ruling.verdict is Verdict.NOT_YET
            assert "cannot tell" in ruling.reason
        finally:
            blind.close()

    # A malformed value is refused without echoing it.
    monkeypatch.setenv(DIGEST_ENV, "no-separator-" + PASSWORD)
    with pytest.raises(ConfigurationError) as refused:
        ZooKeeperMetadataStore.connect(parse_store_url(url))
    assert PASSWORD not in str(refused.value)

    # `ledger-janitor run` with the credentials in its environment only.
    worker = start_worker(
        "secure",
        tmp_path,
        url,
        broker.service_url,
        env={DIGEST_ENV: f"{USER}:{PASSWORD}"},
        quiet=False,
        settings={"sendDelaySecondsOfTwoPhaseDeletion": 0},
    )
    raw = ZooKeeperLedgers(store.client)  # BookKeeper's tree, read with kazoo
    try:
        wait_until(lambda: not set(released) & raw.alive(), 60, "deletions")
    finally:
        worker.stop()
    assert raw.alive() == truth.referenced()
    for output in (worker.log_text(), worker.out.read_text()):
        assert PASSWORD not in output
    assert '"event": "deleted"' in worker.log_text()  # the log was on, and said what it did
    store.close()
