"""ZooKeeper TLS, read from a ZooKeeper client properties file, as Pulsar reads it.

Pulsar's broker names that file with `metadataStoreConfigPath` (apache/pulsar
ServiceConfiguration.metadataStoreConfigPath, handed to the metadata store as
MetadataStoreConfig.configFilePath, as ZKMetadataStore and the other stores receive their
configuration; PulsarClusterMetadataSetup takes the same file as
`--metadata-store-config-path`). Its documentation there long said "supported by
RocksdbMetadataStore for now": we read it as a ZooKeeper client configuration (the file
ZKClientConfig(path) loads, as zkCli's `-client-configuration` does), whose TLS keys are
ZooKeeper's own (ZooKeeper Administrator's Guide, "Client configuration"):

    zookeeper.client.secure=true
    zookeeper.ssl.keyStore.location=/etc/pulsar/zk-client.pem   # certificate + private key
    zookeeper.ssl.keyStore.type=PEM
    zookeeper.ssl.trustStore.location=/etc/pulsar/zk-ca.pem
    zookeeper.ssl.trustStore.type=PEM
    zookeeper.ssl.hostnameVerification=true

kazoo speaks TLS with Python's ssl module, which reads PEM only (ZooKeeper reads PEM stores
since 3.6): a JKS or PKCS12 store is refused here, when the configuration is loaded, with the
command that converts it. The store files are read again by every process that connects,
the audit's Spark executors included: they must be readable there at the same paths.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field
from pathlib import Path

import javaproperties

_PREFIX = "zookeeper.ssl."
_TYPES_BY_SUFFIX = {".pem": "PEM", ".crt": "PEM", ".jks": "JKS", ".p12": "PKCS12", ".pfx": "PKCS12"}
_CONVERT = {
    "keyStore": "keytool -importkeystore -srckeystore {0} -destkeystore {1}.p12 "
    "-deststoretype PKCS12 && openssl pkcs12 -in {1}.p12 -out {1}.pem -nodes",
    "trustStore": "keytool -exportcert -rfc -keystore {0} -alias <alias> -file {1}.pem",
}
_CONVERT_PKCS12 = {
    "keyStore": "openssl pkcs12 -in {0} -out {1}.pem -nodes",
    "trustStore": "openssl pkcs12 -in {0} -nokeys -out {1}.pem",
}


class ZooKeeperTlsError(ValueError):
    """The file is unreadable or asks for what we cannot do; the message is one line."""


@dataclass(frozen=True)
class ZooKeeperTls:
    """TLS to ZooKeeper: `keystore` holds our certificate and its private key (PEM), if the
    server asks for one; `truststore` the CAs trusted for the server (else the system's)."""

    keystore: str | None = None
    truststore: str | None = None
    verify_hostname: bool = True
    keystore_password: str = field(default="", repr=False)


def _java_true(text: str | None, default: bool) -> bool:
    return default if text is None or not text.strip() else text.strip().lower() == "true"


def _sniffed(path: Path) -> str:
    """A store's type by its first bytes: JKS's magic number, DER (PKCS12), else PEM."""
    with path.open("rb") as file:
        head = file.read(4)
    if head == b"\xfe\xed\xfe\xed":
        return "JKS"
    return "PKCS12" if head[:1] == b"\x30" else "PEM"


def _store(properties: dict[str, str], which: str) -> str | None:
    """The PEM file of `which` (keyStore, trustStore); a store of another type is refused,
    whether its type is declared, told by its name (as ZooKeeper does) or by its bytes."""
    location = properties.get(f"{_PREFIX}{which}.location", "").strip()
    if not location:
        return None
    path = Path(location)
    if not os.access(location, os.R_OK) or not path.is_file():
        raise ZooKeeperTlsError(f"{_PREFIX}{which}.location {location}: no readable file")
    declared = properties.get(f"{_PREFIX}{which}.type", "").strip().upper()
    kind = declared or _TYPES_BY_SUFFIX.get(path.suffix.lower(), "PEM")
    if kind == "PEM":
        kind = _sniffed(path)
    if kind != "PEM":
        how = (_CONVERT if kind == "JKS" else _CONVERT_PKCS12).get(which, "")
        stem = path.with_suffix("")
        raise ZooKeeperTlsError(
            f"{_PREFIX}{which} {location} is {kind}: only PEM stores are supported; "
            f"convert it with: {how.format(location, stem)}"
        )
    return location


def _checked(tls: ZooKeeperTls) -> ZooKeeperTls:
    """Loaded once here, so a store that is not PEM fails now, not at the first connection."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    which = ""
    try:
        if tls.keystore:
            which = f"keyStore {tls.keystore}"
            password = tls.keystore_password or None
            context.load_cert_chain(tls.keystore, tls.keystore, password)
        if tls.truststore:
            which = f"trustStore {tls.truststore}"
            context.load_verify_locations(tls.truststore)
    except (ssl.SSLError, OSError) as exc:
        raise ZooKeeperTlsError(
            f"{_PREFIX}{which} is not a PEM store (a keyStore holds a certificate and its "
            f"private key, a trustStore CA certificates): {exc}"
        ) from None
    return tls


def load_zookeeper_tls(path: str) -> ZooKeeperTls | None:
    """The TLS a ZooKeeper client properties file asks for; None if it does not set
    zookeeper.client.secure=true (the file may configure something else)."""
    try:
        with open(path, encoding="latin-1") as file:  # java.util.Properties' encoding
            properties: dict[str, str] = javaproperties.load(file)
    except OSError as exc:
        raise ZooKeeperTlsError(f"cannot read it: {exc.strerror}") from None
    if not _java_true(properties.get("zookeeper.client.secure"), False):
        return None
    return _checked(
        ZooKeeperTls(
            keystore=_store(properties, "keyStore"),
            truststore=_store(properties, "trustStore"),
            verify_hostname=_java_true(properties.get(f"{_PREFIX}hostnameVerification"), True),
            keystore_password=properties.get(f"{_PREFIX}keyStore.password", ""),
        )
    )
