"""Why a TLS connection to ZooKeeper failed, which kazoo only logs.

kazoo's connection loop catches a failed handshake, logs it and keeps retrying until the
start times out: `client.start` then says only "Connection time-out". A witness is the
client's logger (a child of kazoo's, so nothing it logs is lost) that remembers the last
TLS error, so the one line a person reads names the certificate problem.
"""

from __future__ import annotations

import logging
import ssl
from itertools import count

_SERIAL = count()


class _Remember(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        text = str(error) if isinstance(error, ssl.SSLError) else record.getMessage()
        start = text.find("[SSL")  # "Connection dropped: socket connection error: [SSL: ..."
        if start >= 0:
            self.last = f"TLS handshake failed: {text[start:]}"


class TlsFailureWitness:
    def __init__(self) -> None:
        self._remember = _Remember()
        self.logger = logging.Logger(f"kazoo.client.tls-{next(_SERIAL)}")
        self.logger.parent = logging.getLogger("kazoo.client")
        self.logger.addHandler(self._remember)

    def reason(self) -> str:
        """The last TLS failure seen, or empty."""
        return self._remember.last
