"""A tiny OAuth2 issuer on loopback, for the client-credentials flow as Pulsar's clients run
it: its discovery document (`/.well-known/openid-configuration`) names its token endpoint,
which hands out `token` (a JWT the broker trusts, made by the distribution's `pulsar tokens`)
to the one client id and secret it knows, and `invalid_client` to anyone else."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import parse_qs


@dataclass
class Issuer:
    client_id: str
    client_secret: str
    token: str
    expires_in: int = 3600
    # (user agent, audience) of every token request granted, and how many were refused.
    granted: list[tuple[str, str]] = field(default_factory=list)
    refused: int = 0
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def credentials(self, secret: str | None = None) -> str:
        """The credentials file's JSON (Pulsar's `privateKey`)."""
        found = {"client_id": self.client_id, "client_secret": secret or self.client_secret}
        return json.dumps({**found, "issuer_url": self.url})

    def __enter__(self) -> Issuer:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != "/.well-known/openid-configuration":
                    self._answer(404, {"error": "not_found"})
                    return
                self._answer(200, {"issuer": issuer.url, "token_endpoint": f"{issuer.url}/token"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                known = (issuer.client_id, issuer.client_secret)
                if self.path != "/token" or form.get("grant_type") != "client_credentials":
                    self._answer(400, {"error": "unsupported_grant_type"})
                elif (form.get("client_id"), form.get("client_secret")) != known:
                    issuer.refused += 1
                    self._answer(401, {"error": "invalid_client"})
                else:
                    agent = self.headers.get("User-Agent", "")
                    issuer.granted.append((agent, form.get("audience", "")))
                    body = {"access_token": issuer.token, "token_type": "Bearer",
                            "expires_in": issuer.expires_in}  # fmt: skip
                    self._answer(200, body)

            def _answer(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
