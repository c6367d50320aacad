"""Apache Pulsar's server distribution and its offloaders, from Maven Central, cached.

`mvn dependency:copy` fetches `org.apache.pulsar:pulsar-server-distribution:<v>:tar.gz:bin`
(about 235 MiB) and the filesystem and jcloud offloaders (NARs published with a `.jar`
extension, about 60 MiB together) into `~/.m2` once; they are unpacked under
`~/.cache/ledger-janitor/` once. A second run is offline. No repository is named: Maven's
default one serves them.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

# The 4.0 LTS line; the newest 4.0.x whose distribution Maven Central serves here.
PULSAR_VERSION = os.environ.get("LEDGER_JANITOR_PULSAR_VERSION", "4.0.8")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ledger-janitor"
OFFLOADERS = ("tiered-storage-file-system", "tiered-storage-jcloud")


@dataclass(frozen=True)
class Distribution:
    home: Path  # bin/ conf/ lib/
    offloaders: Path  # *.nar
    version: str

    @property
    def lib(self) -> Path:
        return self.home / "lib"

    def classpath(self) -> str:
        """Every jar of the distribution: the broker's own BookKeeper and Pulsar clients."""
        return str(self.lib / "*")


def distribution(version: str = PULSAR_VERSION) -> Distribution:
    """The unpacked distribution and offloaders, fetching and unpacking what is missing.
    Safe to call from several processes at once (a lock file serializes them)."""
    root = CACHE / f"pulsar-{version}"
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        home = root / f"apache-pulsar-{version}"
        if not (home / "bin" / "pulsar").exists():
            archive = _fetch(f"org.apache.pulsar:pulsar-server-distribution:{version}:tar.gz:bin")
            _unpack(archive, root, home)
        offloaders = root / "offloaders"
        offloaders.mkdir(exist_ok=True)
        for artifact in OFFLOADERS:
            nar = offloaders / f"{artifact}-{version}.nar"
            if not nar.exists():
                # The broker loads `*.nar` from offloadersDirectory (OffloaderUtils).
                shutil.copyfile(_fetch(f"org.apache.pulsar:{artifact}:{version}"), nar)
    return Distribution(home, offloaders, version)


def _fetch(artifact: str) -> Path:
    """One artifact through Maven into ~/.m2 (a no-op when it is there), copied to a scratch
    directory; its path."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("Apache Maven (mvn) is needed to fetch Pulsar from Maven Central")
    out = Path(tempfile.mkdtemp(prefix="pulsar-fetch-", dir=CACHE))
    result = subprocess.run(
        [mvn, "-q", "-B", "dependency:copy", f"-Dartifact={artifact}",
         f"-DoutputDirectory={out}"],
        cwd=out, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    files = list(out.iterdir())
    if result.returncode != 0 or len(files) != 1:
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"mvn could not fetch {artifact}: {' / '.join(tail)}")
    return files[0]


def _unpack(archive: Path, root: Path, home: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix="unpack-", dir=root))
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(staging, filter="tar")
        (unpacked,) = staging.iterdir()
        if home.exists():
            shutil.rmtree(home)
        unpacked.rename(home)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(archive.parent, ignore_errors=True)
