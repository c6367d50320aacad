"""Does a TLS broker refuse us? Asked once, before the Pulsar client connects.

A broker that does not trust our client certificate ends the TLS session, and one that wants
credentials we do not send closes the connection after CONNECT; the C++ client takes either
for a network fault, retries until its operation time-out and says only "TimeOut". This
sends one CONNECT (PulsarApi.proto) over TLS and names the refusal instead.
"""

from __future__ import annotations

import socket
import ssl
import struct
from urllib.parse import urlsplit

from config import ServiceConfiguration
from core.errors import ConfigurationError
from transport.auth import ClientCertificate, certificate_from

PROBE_SECONDS = 3.0
_VERSION = b"ledger-janitor-probe"


def connect_frame(auth_method: bytes) -> bytes:
    """BaseCommand{type: CONNECT, connect: {client_version, protocol_version: 6,
    auth_method_name}}: a broker that accepts answers CONNECTED at once."""
    connect = b"\x0a" + bytes([len(_VERSION)]) + _VERSION + b"\x20\x06"
    if auth_method:
        connect += b"\x2a" + bytes([len(auth_method)]) + auth_method
    command = b"\x08\x02\x12" + bytes([len(connect)]) + connect
    return struct.pack(">II", len(command) + 4, len(command)) + command


def refusal(
    service_url: str,
    context: ssl.SSLContext,
    certificate: ClientCertificate | None,
    timeout: float,
) -> str | None:
    """One line if the broker at `service_url` (pulsar+ssl://) refuses our certificate, or,
    without one, closes the connection on a CONNECT without credentials; None if it takes
    us, or cannot be asked (unreachable: someone else's question)."""
    parts = urlsplit(service_url.split(",", 1)[0])
    if parts.scheme != "pulsar+ssl" or not parts.hostname:
        return None
    host, port = parts.hostname, parts.port or 6651
    try:
        with (
            socket.create_connection((host, port), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=host) as tls,
        ):
            tls.sendall(connect_frame(b"tls" if certificate else b""))
            answer = _answer(tls)
    except ssl.SSLCertVerificationError as exc:
        return f"the broker's certificate at {host}:{port} is not trusted: {exc.verify_message}"
    except ssl.SSLError as exc:
        if certificate is None:
            return f"the broker at {host}:{port} ended the TLS session: {exc.reason or exc}"
        return (
            f"the broker at {host}:{port} refused our TLS client certificate "
            f"{certificate.cert_file} ({exc.reason or exc})"
        )
    except OSError:
        return None
    if answer is None or answer == "CONNECTED":
        return None
    whose = "our TLS client certificate" if certificate else "a CONNECT without credentials"
    hint = "" if certificate else " (set authPlugin and authParams)"
    return f"the broker at {host}:{port} refused {whose}: {answer}{hint}"


def _answer(tls: ssl.SSLSocket) -> str | None:
    """ "CONNECTED", the broker's error message, "connection closed", or None (unreadable)."""
    received = b""
    while len(received) < 4 or len(received) < 4 + struct.unpack(">I", received[:4])[0]:
        chunk = tls.recv(4096)
        if not chunk:
            return "connection closed" if not received else None
        received += chunk
    fields = _fields(received[8:])
    if fields.get(1) == 3:
        return "CONNECTED"
    error = fields.get(14)  # BaseCommand.error: CommandError{request_id, error, message}
    if fields.get(1) == 14 and isinstance(error, bytes):
        message = _fields(error).get(3, b"")
        return message.decode(errors="replace") if isinstance(message, bytes) else None
    return None


def _fields(data: bytes) -> dict[int, int | bytes]:
    """The varint and length-delimited fields of one protobuf message (the last of each)."""
    found: dict[int, int | bytes] = {}
    at = 0
    try:
        while at < len(data):
            key, at = _varint(data, at)
            if key & 7 == 0:
                found[key >> 3], at = _varint(data, at)
            elif key & 7 == 2:
                size, at = _varint(data, at)
                found[key >> 3], at = data[at : at + size], at + size
            else:
                break
    except IndexError:
        pass
    return found


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        value, at, shift = value | (byte & 0x7F) << shift, at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def client_context(
    trust_file: str | None, insecure: bool, certificate: ClientCertificate | None
) -> ssl.SSLContext:
    """As the Pulsar client checks the broker: the trust file (else the system's CAs), no
    host name check (the C++ client's default), our certificate presented."""
    try:
        context = ssl.create_default_context(cafile=trust_file)
        context.check_hostname = False
        if insecure:
            context.verify_mode = ssl.CERT_NONE
        if certificate is not None:
            context.load_cert_chain(certificate.cert_file, certificate.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigurationError(f"cannot load the TLS files for the broker: {exc}") from exc
    return context


def broker_refusal(config: ServiceConfiguration) -> str | None:
    """Why the configured TLS broker refuses the configured client certificate, or, with no
    authentication configured, refuses us; None otherwise (other plugins are not probed)."""
    certificate = certificate_from(config.auth_plugin, config.auth_params)
    if config.auth_plugin and certificate is None:
        return None
    trust = config.tls_trust_certs_file_path or None
    context = client_context(trust, config.tls_allow_insecure_connection, certificate)
    timeout = min(float(config.operation_timeout_seconds), PROBE_SECONDS)
    return refusal(config.broker_service_url, context, certificate, timeout)
