"""The sidecar's operations port: `/metrics` (Prometheus), `/health` (live), `/ready`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

Check = Callable[[], tuple[bool, str]]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:  # scrapes every few seconds would flood the log
        pass


class OperationsEndpoint:
    def __init__(
        self, registry: CollectorRegistry, live: Check, ready: Check, host: str, port: int
    ) -> None:
        self._metrics = make_wsgi_app(registry)
        self._checks = {"/health": live, "/ready": ready}
        self._server = make_server(host, port, self._app, _Server, _QuietHandler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="endpoint", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> OperationsEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return self._metrics(environ, start_response)  # type: ignore[no-any-return]
        check = self._checks.get(path)
        if check is None:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found: try /metrics, /health or /ready\n"]
        try:
            ok, detail = check()
        except Exception as exc:  # a failing check means "not ready", never a crash
            ok, detail = False, f"check failed: {exc}"
        status = "200 OK" if ok else "503 Service Unavailable"
        start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
        return [f"{'ok' if ok else 'not ok'}: {detail}\n".encode()]
