"""The sidecar's operations port: `/metrics` (Prometheus), `/health` (live), `/ready`."""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from core.errors import ConfigurationError

Check = Callable[[], tuple[bool, str]]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:  # scrapes every few seconds would flood the log
        pass


def bind_failure(host: str, port: int, exc: BaseException) -> str:
    """Why the operations port could not be opened, as one line naming the setting."""
    where = f"{host}:{port}"
    if isinstance(exc, (socket.gaierror, UnicodeError)):
        return f"metrics bind address {host!r} cannot be resolved (metricsBindAddress): {exc}"
    if isinstance(exc, OverflowError):
        return f"metrics port {port} is out of range (metricsPort: 1-65535, 0 = off)"
    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        return (
            f"metrics port {where} is in use by another process "
            "(set metricsPort to a free port, or 0 to turn the port off)"
        )
    if isinstance(exc, OSError) and exc.errno == errno.EADDRNOTAVAIL:
        return f"metrics bind address {host} is not an address of this machine (metricsBindAddress)"
    if isinstance(exc, OSError) and exc.errno == errno.EACCES:
        return f"metrics port {where} needs privileges (metricsPort: use a port above 1023)"
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"cannot listen on metrics port {where} (metricsPort, metricsBindAddress): {reason}"


class OperationsEndpoint:
    def __init__(
        self, registry: CollectorRegistry, live: Check, ready: Check, host: str, port: int
    ) -> None:
        self.registry = registry
        self._metrics = make_wsgi_app(registry)
        self._checks = {"/health": live, "/ready": ready}
        try:
            self._server = make_server(host, port, self._app, _Server, _QuietHandler)
        except (OSError, OverflowError, UnicodeError) as exc:
            raise ConfigurationError(bind_failure(host, port, exc)) from None
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
