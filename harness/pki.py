"""A throw-away PKI for TLS tests: a CA and a server certificate for 127.0.0.1."""

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


@dataclass(frozen=True)
class Pki:
    """A test CA's certificate file, and a server context presenting a certificate it signed
    for 127.0.0.1."""

    ca_file: Path
    server: ssl.SSLContext


def make_pki(directory: Path) -> Pki:
    """A CA and a loopback server certificate it signed, with the extensions strict
    verifiers (OpenSSL 3, the Pulsar C++ client) check; written under `directory`."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ledger-janitor test CA")])
    ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    usage = dict.fromkeys(
        ["content_commitment", "key_encipherment", "data_encipherment", "key_agreement"], False
    )
    hour = datetime.timedelta(hours=1)

    def certificate(subject: x509.Name, public_key: Any) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .issuer_name(ca_name)
            .subject_name(subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - hour)
            .not_valid_after(now + hour)
        )

    ca = (
        certificate(ca_name, ca_key.public_key())
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
        .add_extension(ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    broker_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "broker")])
    loopback = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
    leaf = (
        certificate(broker_name, key.public_key())
        .add_extension(x509.SubjectAlternativeName([loopback]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
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
