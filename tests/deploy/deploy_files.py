"""The repository's deployment files as data, for the tests that check them against the
project: its Dockerfile, its command line, its settings."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ledger_janitor.sidecar.run import SHUTDOWN_SECONDS

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
HELM_VALUES = KUBERNETES / "pulsar-helm-values.yaml"
KUBERNETES_VERSION = "1.30.0"
# The sidecar's SIGTERM bound: it stops within this whatever is unreachable.
SHUTDOWN_BOUND_SECONDS = SHUTDOWN_SECONDS

Container = dict[str, Any]


def manifests() -> list[tuple[Path, dict[str, Any]]]:
    """Every Kubernetes object under deploy/kubernetes (the Helm values snippet is not one)."""
    return [
        (path, doc)
        for path in sorted(KUBERNETES.glob("*.yaml"))
        if path != HELM_VALUES
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]


def helm_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load(HELM_VALUES.read_text())
    return values


def pod_spec(doc: dict[str, Any]) -> dict[str, Any] | None:
    spec = doc.get("spec", {})
    if doc["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    template = spec.get("template")
    return template["spec"] if template else None


def containers() -> Iterator[tuple[str, Container, dict[str, Any]]]:
    """(where, container, its pod spec) for every container, the Helm snippet's included."""
    for path, doc in manifests():
        spec = pod_spec(doc)
        for container in (spec or {}).get("containers", []):
            yield f"{path.name}:{doc['metadata'].get('name')}", container, spec or {}
    broker = helm_values()["broker"]
    for container in broker["initContainers"]:
        spec = {"volumes": broker["extraVolumes"], "gracePeriod": broker["gracePeriod"]}
        yield f"{HELM_VALUES.name}:broker.initContainers", container, spec


def project_version() -> str:
    found = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert found is not None
    return found.group(1)


def dockerfile_entrypoint(path: Path) -> list[str] | None:
    for line in path.read_text().splitlines():
        if line.startswith("ENTRYPOINT "):
            return yaml.safe_load(line.removeprefix("ENTRYPOINT "))  # type: ignore[no-any-return]
    return None


def dockerfile_copies(path: Path) -> list[str]:
    return [line.split()[1] for line in path.read_text().splitlines() if line.startswith("COPY ")]


@cache
def help_text(*command: str) -> str:
    """What `--help` prints for a command path: `("run",)`, or `("audit_main",)` for the
    audit alone (spark-submit's application)."""
    if command[:1] == ("audit_main",):
        argv = [sys.executable, "-m", "ledger_janitor.audit_main", *command[1:]]
    else:
        argv = [sys.executable, "-m", "ledger_janitor", *command]
    done = subprocess.run([*argv, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def subcommands(*command: str) -> set[str]:
    text = help_text(*command)
    if "Commands:" not in text:
        return set()
    block = text.split("Commands:", 1)[1]
    return {m.group(1) for m in re.finditer(r"^  ([a-z][a-z-]*)\b", block, re.MULTILINE)}


def invocations(container: Container) -> list[tuple[tuple[str, ...], list[str]]]:
    """(command path, its arguments) of each ledger-janitor command a container runs: its
    args under the image's entry point, or each `ledger-janitor ...` / `audit_main.py ...`
    line of a shell script."""
    if "command" not in container:
        return [_split_command(list(container["args"]))]
    script = " ".join(container["args"]).replace("\\\n", " ")
    found = []
    for line in script.splitlines():
        words = shlex.split(line, comments=True) if line.strip() else []
        for i, word in enumerate(words):
            if word == "ledger-janitor":
                found.append(_split_command(words[i + 1 :]))
            elif word.endswith("/audit_main.py"):
                found.append((("audit_main",), words[i + 1 :]))
    return found


def _split_command(words: list[str]) -> tuple[tuple[str, ...], list[str]]:
    path: tuple[str, ...] = ()
    while words and words[0] in subcommands(*path):
        path, words = (*path, words[0]), words[1:]
    return path, words
