"""metadataStoreConfigPath: a ZooKeeper client properties file, read when loaded; its TLS
reaches every ZooKeeper store, the audit's executors included (through the StoreSpec)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from config import ServiceConfiguration
from config.zookeeper_tls import ZooKeeperTls, ZooKeeperTlsError, load_zookeeper_tls
from core.errors import ConfigurationError
from deletion.adapters.opening import StoreSpec
from harness.pki import make_mutual_pki
from harness.zookeeper import pem_store


@pytest.fixture
def stores(tmp_path: Path) -> tuple[Path, Path]:
    pki = make_mutual_pki(tmp_path / "pki", ("janitor",))
    return pem_store(pki.clients["janitor"]), pki.ca_file


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "zk-client.properties"
    path.write_text(text)
    return str(path)


def test_the_pem_stores_and_hostname_verification_are_read(
    tmp_path: Path, stores: tuple[Path, Path]
) -> None:
    keystore, ca = stores
    path = write(
        tmp_path,
        "# Pulsar's metadataStoreConfigPath file\nzookeeper.client.secure = true\n"
        f"zookeeper.ssl.keyStore.location={keystore}\nzookeeper.ssl.keyStore.type=PEM\n"
        f"zookeeper.ssl.trustStore.location: {ca}\n"
        "zookeeper.ssl.hostnameVerification=false\nzookeeper.ssl.keyStore.password=\n",
    )
    assert load_zookeeper_tls(path) == ZooKeeperTls(str(keystore), str(ca), False)


def test_a_file_without_client_secure_asks_for_no_tls(tmp_path: Path) -> None:
    assert load_zookeeper_tls(write(tmp_path, "zookeeper.client.secure=yes\n")) is None


@pytest.mark.parametrize(
    ("name", "head", "declared", "kind", "command"),
    [
        ("client.jks", b"\xfe\xed\xfe\xed", "", "JKS", "keytool -importkeystore"),
        ("client.pem", b"\xfe\xed\xfe\xed", "PEM", "JKS", "keytool -importkeystore"),
        ("client.p12", b"\x30\x82", "", "PKCS12", "openssl pkcs12 -in"),
        ("client", b"", "PKCS12", "PKCS12", "openssl pkcs12 -in"),
    ],
)
def test_a_store_not_pem_is_refused_with_the_command_converting_it(
    tmp_path: Path, name: str, head: bytes, declared: str, kind: str, command: str
) -> None:
    store = tmp_path / name
    store.write_bytes(head)
    typed = f"zookeeper.ssl.keyStore.type={declared}\n" if declared else ""
    path = write(
        tmp_path,
        f"zookeeper.client.secure=true\nzookeeper.ssl.keyStore.location={store}\n{typed}",
    )
    with pytest.raises(ZooKeeperTlsError) as caught:
        load_zookeeper_tls(path)
    assert f"is {kind}: only PEM stores are supported; convert it with: {command}" in str(
        caught.value
    )
    with pytest.raises(ConfigurationError) as loaded:
        ServiceConfiguration(metadata_store_url="zk:h:2181", metadata_store_config_path=path)
    assert str(loaded.value).startswith(f"metadataStoreConfigPath={path!r}: ")
    assert "\n" not in str(loaded.value)


def test_a_missing_store_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "zookeeper.client.secure=true\nzookeeper.ssl.trustStore.location=/no\n")
    with pytest.raises(ZooKeeperTlsError, match=r"trustStore\.location /no: no readable file"):
        load_zookeeper_tls(path)


def test_the_file_is_read_only_where_a_store_is_zookeeper(tmp_path: Path) -> None:
    missing = str(tmp_path / "absent.properties")
    config = ServiceConfiguration(metadata_store_config_path=missing)  # sqlite: unread
    assert StoreSpec.metadata(config).tls is None
    with pytest.raises(ConfigurationError, match="cannot read it"):
        ServiceConfiguration(
            metadata_store_url="sqlite:x.db",
            bookkeeper_metadata_service_uri="zk:b:2181/ledgers",
            metadata_store_config_path=missing,
        )


def test_a_spec_carries_the_tls_to_executors(tmp_path: Path, stores: tuple[Path, Path]) -> None:
    keystore, ca = stores
    path = write(
        tmp_path,
        f"zookeeper.client.secure=true\nzookeeper.ssl.keyStore.location={keystore}\n"
        f"zookeeper.ssl.trustStore.location={ca}\n",
    )
    config = ServiceConfiguration(
        metadata_store_url="zk:m:2181/pulsar", metadata_store_config_path=path
    )
    expected = ZooKeeperTls(str(keystore), str(ca))
    for spec in (StoreSpec.metadata(config), StoreSpec.ledgers(config)):
        shipped = pickle.loads(pickle.dumps(spec))  # as the driver hands it to executors
        assert shipped == spec and shipped.tls == expected
    assert "hush" not in repr(ZooKeeperTls(str(keystore), keystore_password="hush"))
