"""One JVM of the cluster: `bin/pulsar <command>` of the distribution, with its own
configuration file, data and log directory under its own root (absolute: `bin/pulsar` changes
into the distribution's folder), in a process group of its own.

`start` writes the configuration (the distribution's file, keys replaced where they stand:
BookKeeper would turn a repeated key into a list) and launches; `wait_ready` polls the
node's own readiness check. `stop` is SIGTERM then SIGKILL after a bound, `kill` SIGKILL (a
crash), `pause`/`resume` SIGSTOP/SIGCONT; `start` again reuses the data left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from harness.pulsar_dist import Distribution
from harness.pulsar_standalone import overlay

# What every JVM of the cluster shares: G1 without pre-touch (the default is ZGC with
# AlwaysPreTouch of the whole heap), C1 only (starts faster), and the distribution's own
# extra options, which setting PULSAR_EXTRA_OPTS would otherwise drop.
JVM_OPTIONS: Mapping[str, str] = {
    "PULSAR_GC": "-XX:+UseG1GC -XX:+PerfDisableSharedMem",
    "PULSAR_EXTRA_OPTS": "-XX:TieredStopAtLevel=1 -Dpulsar.allocator.exit_on_oom=true "
    "-Dio.netty.recycler.maxCapacityPerThread=4096",
}
POLL_SECONDS = 0.25


class NodeFailedError(RuntimeError):
    """A node exited, or did not become ready in time; the message ends with its log's tail."""


class JvmNode:
    command = ""  # bin/pulsar's: zookeeper, bookie, broker
    conf_variable = ""  # PULSAR_ZK_CONF, PULSAR_BOOKKEEPER_CONF, PULSAR_BROKER_CONF
    conf_name = ""  # the distribution's conf/<file> this node's is made from

    def __init__(self, name: str, root: Path, dist: Distribution, memory: Mapping[str, str]):
        self.name = name
        self.root = root.absolute()
        self.dist = dist
        self.memory = dict(memory)
        self.process: subprocess.Popen[bytes] | None = None
        # How it last ended: its exit code, and whether SIGKILL had to follow a SIGTERM.
        self.exit_code: int | None = None
        self.forced = False

    # What a kind of node defines.
    def settings(self) -> dict[str, object]:
        raise NotImplementedError

    def ready(self) -> bool:
        """One readiness check; False (not an exception) while the node is not ready."""
        raise NotImplementedError

    def prepare(self) -> None:
        """Anything the data directory needs before the first start."""

    # Paths.
    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def conf_path(self) -> Path:
        return self.root / "conf" / self.conf_name

    @property
    def stdout_log(self) -> Path:
        return self.log_dir / "stdout.log"

    def write_conf(self) -> Path:
        base = (self.dist.home / "conf" / self.conf_name).read_text()
        self.conf_path.parent.mkdir(parents=True, exist_ok=True)
        self.conf_path.write_text(overlay(base, self.settings()))
        return self.conf_path

    # Life cycle.
    def launch(self) -> None:
        """Start the JVM without waiting for it (a second launch while running is an error)."""
        if self.running:
            raise RuntimeError(f"{self.name} is already running")
        for directory in (self.data_dir, self.log_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.prepare()
        env = {
            **os.environ,
            **JVM_OPTIONS,
            **self.memory,
            self.conf_variable: str(self.write_conf()),
            "PULSAR_LOG_DIR": str(self.log_dir),
        }
        with self.stdout_log.open("ab") as log:
            log.write(f"--- {time.strftime('%H:%M:%S')} starting {self.name}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [str(self.dist.home / "bin" / "pulsar"), self.command],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True,
            )  # fmt: skip

    def wait_ready(self, timeout: float) -> float:
        """Seconds until ready; NodeFailedError if the process exits or time runs out first."""
        started = time.monotonic()
        while not self.ready():
            if self.process is None or self.process.poll() is not None:
                raise NodeFailedError(f"{self.name} exited before it was ready\n{self.log_tail()}")
            if time.monotonic() - started > timeout:
                late = f"{self.name} not ready within {timeout:.0f}s"
                raise NodeFailedError(f"{late}\n{self.log_tail()}")
            time.sleep(POLL_SECONDS)
        return time.monotonic() - started

    def start(self, timeout: float = 300.0) -> float:
        self.launch()
        return self.wait_ready(timeout)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError(f"{self.name} is not running")
        return self.process.pid

    def stop(self, grace: float = 60.0) -> float:
        """SIGTERM to the group, SIGKILL after `grace` seconds; the seconds it took."""
        return self._end(signal.SIGTERM, grace)

    def kill(self) -> None:
        """SIGKILL to the group: a crash, nothing flushed or closed."""
        self._end(signal.SIGKILL, 30.0)

    def pause(self) -> None:
        os.killpg(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.pid, signal.SIGCONT)

    def _end(self, sent: signal.Signals, grace: float) -> float:
        process, self.process = self.process, None
        started = time.monotonic()
        if process is None:
            return 0.0
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGCONT)  # a paused JVM cannot act on SIGTERM
            os.killpg(process.pid, sent)
        self.forced = False
        try:
            self.exit_code = process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.forced = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            self.exit_code = process.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):  # anything else of the group goes too
            os.killpg(process.pid, signal.SIGKILL)
        return time.monotonic() - started

    # What a test or a failure report reads.
    def rss_bytes(self) -> int:
        """Resident memory of the JVM (bin/pulsar execs java: the same process)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def data_bytes(self) -> int:
        """Every file under the data directory (files deleted meanwhile count as 0)."""
        total = 0
        for path in self.data_dir.rglob("*"):
            with contextlib.suppress(FileNotFoundError):
                if path.is_file():
                    total += path.stat().st_size
        return total

    def log_tail(self, lines: int = 40) -> str:
        if not self.stdout_log.exists():
            return f"({self.stdout_log} does not exist)"
        tail = self.stdout_log.read_text(errors="replace").splitlines()[-lines:]
        return f"--- last {len(tail)} lines of {self.stdout_log}:\n" + "\n".join(tail)
