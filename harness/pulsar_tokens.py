"""JWT tokens for a broker with token authentication, made by the distribution's own tool
(`bin/pulsar tokens create-secret-key`, `create-key-pair` and `tokens create`), not by hand."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from harness.pulsar_dist import Distribution


def _tool(dist: Distribution, *args: str) -> str:
    env = {**os.environ, "PULSAR_LOG_DIR": str(Path(os.environ.get("TMPDIR", "/tmp")))}
    done = subprocess.run(
        [str(dist.home / "bin" / "pulsar"), "tokens", *args],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"pulsar tokens {args[0]} failed: {done.stderr[-2000:]}")
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def make_tokens(
    dist: Distribution, directory: Path, subjects: Iterable[str]
) -> tuple[Path, dict[str, str]]:
    """A secret key (HS256) under `directory`, and a token for each subject signed with it."""
    directory.mkdir(parents=True, exist_ok=True)
    key = directory / "secret.key"
    _tool(dist, "create-secret-key", "--output", str(key))
    tokens = {
        subject: _tool(dist, "create", "--secret-key", f"file://{key}", "--subject", subject)
        for subject in subjects
    }
    return key, tokens


def make_signed_token(dist: Distribution, directory: Path, subject: str) -> tuple[Path, str]:
    """A key pair (RS256) under `directory`, as an OAuth2 issuer holds one: its public key's
    file (what the broker trusts: tokenPublicKey), and a token for `subject` signed with the
    private key."""
    directory.mkdir(parents=True, exist_ok=True)
    private, public = directory / "private.key", directory / "public.key"
    _tool(dist, "create-key-pair", "--output-private-key", str(private),
          "--output-public-key", str(public))  # fmt: skip
    return public, _tool(dist, "create", "--private-key", f"file://{private}", "--subject", subject)
