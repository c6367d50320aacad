"""A Spark standalone cluster from PySpark's own distribution: one master and its workers,
each a `spark-class` JVM on loopback, and `spark-submit` against it.

Every daemon runs in its own session (process group): a worker's executors, and their
Python workers, are its descendants in that group, so stopping the cluster kills each group
whole and leaves nothing behind. The daemons get the caller's environment without PYTHONPATH:
executors see this project only through what a submission ships (`--py-files`) or what is
installed, as on a real cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from ledger_janitor.demo.embedded import free_port

REPO = Path(__file__).resolve().parent.parent
# The distribution's top-level packages ([tool.setuptools.packages.find] in pyproject.toml).
PROJECT_PACKAGES = (
    "core",
    "config",
    "transport",
    "deletion",
    "producers",
    "consumers",
    "cursor",
    "audit",
    "ledger_janitor",
)
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def build_project_zip(dest: Path, root: Path = REPO) -> Path:
    """This project's packages, data files included, as one `--py-files` archive."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in PROJECT_PACKAGES:
            for path in sorted((root / package).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    archive.write(path, path.relative_to(root).as_posix())
    return dest


def _daemon_environment(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="256m",  # the master's and workers' own heaps, not the executors'
        PYSPARK_PYTHON=sys.executable,
    )
    env.update(extra)
    return env


def _get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


def _stop_group(process: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    """SIGTERM the process's whole group (its executors and their Python workers), then
    SIGKILL whatever is still there; the group is gone when this returns."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)
        deadline = time.monotonic() + grace
        while _group_members(process.pid) and time.monotonic() < deadline:
            time.sleep(0.1)  # members re-parented to init: nobody tells us of their exit
        if not _group_members(process.pid):
            return
    raise RuntimeError(f"process group {process.pid} survived SIGKILL")


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a group, from /proc: a zombie left to an init that
    does not reap still counts for killpg, yet runs nothing."""
    members: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (command) "
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


@dataclass(frozen=True)
class Submission:
    """A finished `spark-submit`: `pid` is the driver's JVM (the script execs into it)."""

    pid: int
    returncode: int
    stdout: str
    stderr: str


class SparkCluster:
    """`workers` workers of `cores` cores and `memory` each, and their master, under `root`."""

    def __init__(
        self,
        root: Path,
        workers: int = 2,
        cores: int = 1,
        memory: str = "512m",
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.root = root
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self.conf_dir = root / "conf"  # empty: no site configuration leaks in
        self.env = _daemon_environment({"SPARK_CONF_DIR": str(self.conf_dir), **(env or {})})
        self._processes: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}"

    def work_dir(self, index: int) -> Path:
        return self.root / f"worker-{index}" / "work"

    def start(self, timeout: float = 120.0) -> SparkCluster:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._spawn(
                "master",
                [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.port),
                 "--webui-port", str(self.ui_port)],
            )  # fmt: skip
            self._wait(lambda state: state.get("status") == "ALIVE", timeout, "the master")
            for index in range(self.workers):
                self.work_dir(index).mkdir(parents=True)
                self._spawn(
                    f"worker-{index}",
                    [WORKER_CLASS, "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                     "--cores", str(self.cores), "--memory", self.memory,
                     "--work-dir", str(self.work_dir(index)), self.url],
                )  # fmt: skip
            self._wait(
                lambda state: state.get("aliveworkers") == self.workers, timeout, "the workers"
            )
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, arguments: list[str]) -> None:
        log = (self.root / f"{name}.log").open("ab")
        command = [str(spark_home() / "bin" / "spark-class"), *arguments]
        self._processes.append(
            subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.root,
                start_new_session=True,
            )
        )
        log.close()

    def _wait(self, ready: Callable[[dict[str, Any]], bool], timeout: float, what: str) -> None:
        """Poll the master's JSON status: another process cannot tell us it is ready."""
        deadline = time.monotonic() + timeout
        while True:
            for process in self._processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited ({process.args!r}); see {self.root}")
            with contextlib.suppress(OSError, ValueError):
                if ready(self.master_state()):
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} not ready within {timeout}s; see {self.root}/*.log")
            time.sleep(0.2)

    def master_state(self) -> dict[str, Any]:
        """The master web UI's JSON: workers, active and completed applications."""
        state: dict[str, Any] = _get_json(f"{self.ui_url}/json/")
        return state

    def worker_states(self) -> list[dict[str, Any]]:
        """Each worker's own JSON (its executors, running and finished), via the master's list."""
        return [
            _get_json(f"{worker['webuiaddress']}/json/")
            for worker in self.master_state()["workers"]
            if worker["state"] == "ALIVE"
        ]

    def submit(
        self,
        app: Path,
        arguments: Sequence[str],
        *,
        py_files: Sequence[Path] = (),
        conf: Mapping[str, str] | None = None,
        timeout: float = 600.0,
    ) -> Submission:
        """`spark-submit` in client mode (the driver runs here), killed whole on a time-out."""
        settings = {
            "spark.driver.host": "127.0.0.1",
            "spark.driver.memory": "512m",
            "spark.executor.memory": self.memory,  # the default (1g) fits no worker here
            **(conf or {}),
        }
        command = [str(spark_home() / "bin" / "spark-submit"), "--master", self.url]
        command += ["--deploy-mode", "client"]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        if py_files:
            command += ["--py-files", ",".join(map(str, py_files))]
        command += [str(app), *arguments]
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=self.env,
            cwd=self.root,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # a straggling Python worker, say
        return Submission(process.pid, process.returncode, stdout, stderr)

    def stop(self) -> None:
        """Workers first (their executors with them), then the master; every group whole."""
        errors: list[BaseException] = []
        for process in reversed(self._processes):
            try:
                _stop_group(process)
            except RuntimeError as exc:
                errors.append(exc)
        self._processes.clear()
        if errors:
            raise errors[0]

    def __enter__(self) -> SparkCluster:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()
