"""Why a TLS connection to ZooKeeper failed, which kazoo only logs.

kazoo's connection loop catches a failed handshake, logs it and keeps retrying until the
start times out: `client.start` then says only "Connection time-out". A witness is the
client's logger that remembers the last TLS error, so the one line a person reads names
the certificate problem. It hears every level (kazoo's own loggers are kept at ERROR while
it retries, ledger_janitor.logs) and hands on to kazoo's logger what that one lets through.
"""

from __future__ import annotations

import logging
import ssl
from itertools import count

_SERIAL = count()


class _Remember(logging.Handler):
    def __init__(self, parent: logging.Logger) -> None:
        super().__init__(logging.DEBUG)
        self.last = ""
        self._parent = parent

    def emit(self, record: logging.LogRecord) -> None:
        if self._parent.isEnabledFor(record.levelno):
            self._parent.handle(record)
        error = record.exc_info[1] if record.exc_info else None
        text = str(error) if isinstance(error, ssl.SSLError) else record.getMessage()
        start = text.find("[SSL")  # "Connection dropped: socket connection error: [SSL: ..."
        if start >= 0:
            self.last = f"TLS handshake failed: {text[start:]}"


class TlsFailureWitness:
    def __init__(self) -> None:
        parent = logging.getLogger("kazoo.client")
        self._remember = _Remember(parent)
        self.logger = logging.Logger(f"kazoo.client.tls-{next(_SERIAL)}", logging.DEBUG)
        self.logger.propagate = False
        self.logger.addHandler(self._remember)

    def reason(self) -> str:
        """The last TLS failure seen, or empty."""
        return self._remember.last
