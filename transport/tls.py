"""TLS for the admin REST client and the OAuth2 issuer: whom to trust, the certificate we
present, and telling a refused client certificate from an untrusted server."""

from __future__ import annotations

import ssl

from core.errors import ConfigurationError
from transport.auth import ClientCertificate


def verify(
    trust_file: str | None, insecure: bool, certificate: ClientCertificate | None = None
) -> ssl.SSLContext | bool:
    if certificate is None and (insecure or trust_file is None):
        return not insecure
    context = trust_context(trust_file, insecure)
    if certificate is not None:
        try:
            context.load_cert_chain(certificate.cert_file, certificate.key_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigurationError(
                f"cannot load the TLS client certificate {certificate.cert_file!r} "
                f"with its key {certificate.key_file!r}: {exc}"
            ) from exc
    return context


def issuer_verify(trust_file: str | None, insecure: bool) -> ssl.SSLContext:
    """An OAuth2 issuer is trusted through the system's CAs and the configured trust file."""
    context = trust_context(None, insecure)
    if trust_file is not None and not insecure:
        try:
            context.load_verify_locations(cafile=trust_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigurationError(f"cannot load TLS trust file {trust_file!r}: {exc}") from exc
    return context


def trust_context(trust_file: str | None, insecure: bool) -> ssl.SSLContext:
    """Trusting `trust_file` (else the system's CAs), or anything when `insecure`."""
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    try:
        return ssl.create_default_context(cafile=trust_file)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigurationError(f"cannot load TLS trust file {trust_file!r}: {exc}") from exc


def certificate_rejected(exc: BaseException) -> bool:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def ssl_refusal(exc: BaseException) -> str:
    """The TLS alert the server ended the session with (not our own verification), or ""."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLError) and not isinstance(cause, ssl.SSLCertVerificationError):
            return str(cause.reason or cause)
        cause = cause.__cause__ or cause.__context__
    return ""
