"""A second real standalone that speaks TLS and authenticates clients by their certificate
(AuthenticationProviderTls: the role is the certificate's common name), with authorization
on; optionally it also accepts JWTs signed by a key pair (AuthenticationProviderToken with
a public key), as an OAuth2 issuer hands them out.

Only settings laid over the default suite broker's (harness/pulsar/standalone.conf); the
plain ports stay open, but with authentication on they serve no one without credentials.
The broker's own client (standalone's set-up, its system topics) talks TLS with the
superuser's certificate.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from pathlib import Path

import httpx

from harness.pki import MutualPki
from harness.pulsar_standalone import PulsarStandalone
from ledger_janitor.demo.embedded import free_port

PROVIDERS = "org.apache.pulsar.broker.authentication.AuthenticationProvider"
TLS_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationTls"


class TlsPulsarStandalone(PulsarStandalone):
    def __init__(
        self,
        root: Path,
        pki: MutualPki,
        superuser: str = "admin",
        token_public_key: Path | None = None,
        settings: Mapping[str, object] | None = None,
    ) -> None:
        self.pki, self.superuser = pki, superuser
        self.broker_tls_port, self.web_tls_port = free_port(), free_port()
        own = pki.clients[superuser]
        providers = [f"{PROVIDERS}Tls"] + ([f"{PROVIDERS}Token"] if token_public_key else [])
        tls: dict[str, object] = {
            "brokerServicePortTls": self.broker_tls_port,
            "webServicePortTls": self.web_tls_port,
            "tlsCertificateFilePath": pki.broker.cert_file,
            "tlsKeyFilePath": pki.broker.key_file,
            "tlsTrustCertsFilePath": pki.ca_file,
            "tlsAllowInsecureConnection": "false",
            "authenticationEnabled": "true",
            "authorizationEnabled": "true",
            "authenticationProviders": ",".join(providers),
            "superUserRoles": superuser,
            "brokerClientTlsEnabled": "true",
            "brokerClientTrustCertsFilePath": pki.ca_file,
            "brokerClientAuthenticationPlugin": TLS_PLUGIN,
            "brokerClientAuthenticationParameters": (
                f"tlsCertFile:{own.cert_file},tlsKeyFile:{own.key_file}"
            ),
        }
        if token_public_key is not None:
            tls["tokenPublicKey"] = f"file://{token_public_key}"
        super().__init__(root, {**tls, **(settings or {})})

    @property
    def service_url_tls(self) -> str:
        return f"pulsar+ssl://127.0.0.1:{self.broker_tls_port}"

    @property
    def web_url_tls(self) -> str:
        return f"https://127.0.0.1:{self.web_tls_port}"

    @property
    def health_url(self) -> str:
        return f"{self.web_url_tls}/admin/v2/brokers/health"

    def tls_context(self, role: str | None = None) -> ssl.SSLContext:
        """Trusting the broker's CA, presenting `role`'s certificate (none: no certificate)."""
        context = ssl.create_default_context(cafile=self.pki.ca_file)
        if role is not None:
            pair = self.pki.clients[role]
            context.load_cert_chain(pair.cert_file, pair.key_file)
        return context

    def health_client(self) -> httpx.Client:
        return httpx.Client(timeout=5, trust_env=False, verify=self.tls_context(self.superuser))
