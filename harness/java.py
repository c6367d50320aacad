"""Small Java programs of the tests', compiled with javac against the Pulsar distribution's own
jars (its Pulsar and BookKeeper clients, Avro, protobuf) and run with them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from harness.pulsar_dist import Distribution


class JavaPrograms:
    def __init__(self, sources: Path, out: Path, dist: Distribution) -> None:
        self.sources, self.out, self.dist = sources, out, dist

    def compile(self) -> JavaPrograms:
        javac = shutil.which("javac")
        if javac is None:
            raise RuntimeError("javac (a JDK) is needed to build the tests' Java programs")
        files = sorted(str(path) for path in self.sources.rglob("*.java"))
        self.out.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [javac, "-nowarn", "-cp", self.dist.classpath(), "-d", str(self.out), *files],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"javac failed:\n{result.stderr}")
        return self

    def run(self, main: str, *args: object, timeout: float = 180) -> list[dict[str, Any]]:
        """Run `main`; its stdout's JSON lines (it must exit 0)."""
        classpath = f"{self.out}:{self.dist.classpath()}"
        result = subprocess.run(
            ["java", "-Xmx256m", "-cp", classpath, main, *map(str, args)],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise AssertionError(
                f"{main} {args} exited {result.returncode}:\n{result.stderr[-3000:]}"
            )
        return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
