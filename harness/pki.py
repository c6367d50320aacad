"""A throw-away PKI for TLS tests: a CA, a server certificate for 127.0.0.1 and, for mutual
TLS, client certificates whose common name is the role a broker grants."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_PEM = serialization.Encoding.PEM
_HOUR = datetime.timedelta(hours=1)


@dataclass(frozen=True)
class Pki:
    """A test CA's certificate file, and a server context presenting a certificate it signed
    for 127.0.0.1."""

    ca_file: Path
    server: ssl.SSLContext


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key (PKCS#8, as the broker's Java reads it), apart."""

    cert_file: Path
    key_file: Path


class _Authority:
    """A CA that signs leaves with the extensions strict verifiers (OpenSSL 3, the Pulsar
    C++ client, the JDK) check."""

    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.ski = x509.SubjectKeyIdentifier.from_public_key(self.key.public_key())
        usage = dict.fromkeys(
            ["content_commitment", "key_encipherment", "data_encipherment", "key_agreement"],
            False,
        )
        self.certificate = (
            self._builder(self.name, self.key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                    **usage,
                ),
                critical=True,
            )
            .add_extension(self.ski, critical=False)
            .sign(self.key, hashes.SHA256())
        )

    def _builder(self, subject: x509.Name, public_key: Any) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.timezone.utc)
        return (
            x509.CertificateBuilder()
            .issuer_name(self.name)
            .subject_name(subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _HOUR)
            .not_valid_after(now + _HOUR)
        )

    def leaf(self, common_name: str, server: bool) -> tuple[x509.Certificate, bytes]:
        """A certificate for `common_name` (a server's for 127.0.0.1, or a client's), and
        its key as PKCS#8 PEM."""
        key = ec.generate_private_key(ec.SECP256R1())
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        builder = self._builder(subject, key.public_key())
        if server:
            loopback = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
            builder = builder.add_extension(x509.SubjectAlternativeName([loopback]), False)
        certificate = (
            builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(self.ski), False
            )
            .sign(self.key, hashes.SHA256())
        )
        pkcs8 = serialization.PrivateFormat.PKCS8
        return certificate, key.private_bytes(_PEM, pkcs8, serialization.NoEncryption())

    def write(self, directory: Path, common_name: str, server: bool = False) -> KeyPair:
        certificate, key = self.leaf(common_name, server)
        pair = KeyPair(directory / f"{common_name}.cert.pem", directory / f"{common_name}.key.pem")
        pair.cert_file.write_bytes(certificate.public_bytes(_PEM))
        pair.key_file.write_bytes(key)
        return pair


def make_pki(directory: Path) -> Pki:
    """A CA and a loopback server certificate it signed, written under `directory`."""
    authority = _Authority("ledger-janitor test CA")
    leaf, key = authority.leaf("broker", server=True)
    (directory / "ca.pem").write_bytes(authority.certificate.public_bytes(_PEM))
    (directory / "broker.pem").write_bytes(leaf.public_bytes(_PEM) + key)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(directory / "broker.pem")
    return Pki(directory / "ca.pem", server)


@dataclass(frozen=True)
class MutualPki:
    """For a broker with TLS authentication: the CA, the broker's pair, and a client pair
    per role; `foreign` is a client pair of another CA, which the broker must not trust."""

    ca_file: Path
    broker: KeyPair
    clients: dict[str, KeyPair]
    foreign: KeyPair


def make_mutual_pki(directory: Path, roles: tuple[str, ...]) -> MutualPki:
    directory.mkdir(parents=True, exist_ok=True)
    authority = _Authority("ledger-janitor test CA")
    (directory / "ca.pem").write_bytes(authority.certificate.public_bytes(_PEM))
    foreign_dir = directory / "foreign"
    foreign_dir.mkdir(exist_ok=True)
    return MutualPki(
        ca_file=directory / "ca.pem",
        broker=authority.write(directory, "broker", server=True),
        clients={role: authority.write(directory, role) for role in roles},
        foreign=_Authority("someone else's CA").write(foreign_dir, roles[0]),
    )
