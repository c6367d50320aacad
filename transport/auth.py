"""Credentials from Pulsar-style authentication settings, never from the command line."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from core.errors import ConfigurationError

TOKEN_PLUGINS = frozenset(
    {"org.apache.pulsar.client.impl.auth.AuthenticationToken", "AuthenticationToken", "token"}
)


def token_from(auth_plugin: str, auth_params: str) -> str | None:
    """The bearer token of an AuthenticationToken configuration, in any of its forms:
    `token:<jwt>`, `file:<path>` (or a file:// URL), `env:<VAR>`, `data:;base64,<...>`, raw."""
    if auth_plugin not in TOKEN_PLUGINS or not auth_params:
        return None
    scheme, _, rest = auth_params.partition(":")
    if scheme == "token":
        return rest.strip()
    if scheme == "file":
        path = unquote(urlparse(auth_params).path) if rest.startswith("//") else rest
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ConfigurationError(f"cannot read the token file {path}: {exc.strerror}") from None
    if scheme == "env":
        if rest not in os.environ:
            raise ConfigurationError(f"the token variable {rest} is not set")
        return os.environ[rest].strip()
    if scheme == "data":
        return base64.b64decode(rest.split(",", 1)[-1]).decode().strip()
    return auth_params.strip()
