"""deploy/kubernetes: valid against the Kubernetes API's schemas, and naming only what the
project has (the Dockerfile's entry point, the CLI's commands and flags, settings keys, the
metrics port and the probe paths), so the files cannot drift from the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import javaproperties
import kubernetes_validate
import pytest
from prometheus_client import CollectorRegistry

from config.loader import NOT_SETTINGS, env_var
from config.settings import SPECS
from ledger_janitor.sidecar.endpoint import OperationsEndpoint
from tests.deploy.deploy_files import (
    KUBERNETES,
    KUBERNETES_VERSION,
    ROOT,
    SHUTDOWN_BOUND_SECONDS,
    Container,
    containers,
    dockerfile_copies,
    dockerfile_entrypoint,
    helm_values,
    help_text,
    invocations,
    manifests,
    project_version,
)

# Flags the manifests use that other open work adds (the lead empties this after merging):
# each is allowed to be missing from `--help` for the reason given.
# Broker keys (not ours) in the ConfigMap's broker.conf, which the loader must ignore.
BROKER_KEYS: set[str] = set()
# Sizing figures from the README's benchmarks (MB of peak RSS).
WORKER_PEAK_MB, LOAD_TEST_PEAK_MB = 91, 173
MIB = {"Mi": 2**20, "Gi": 2**30}


def mebibytes(quantity: str) -> float:
    number, unit = re.fullmatch(r"(\d+)(Mi|Gi)", quantity).groups()  # type: ignore[union-attr]
    return int(number) * MIB[unit] / 2**20


def broker_conf() -> str:
    (config,) = [d for _, d in manifests() if d["kind"] == "ConfigMap"]
    return str(config["data"]["broker.conf"])


def janitor_containers() -> list[tuple[str, Container]]:
    return [(w, c) for w, c, _ in containers() if c["image"].startswith("ledger-janitor:")]


def test_every_manifest_is_valid_against_the_kubernetes_schemas() -> None:
    kinds = set()
    for _path, doc in manifests():
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        kinds.add(doc["kind"])
    assert {"ConfigMap", "Secret", "Deployment", "CronJob", "Job", "Role"} <= kinds


def test_the_helm_snippet_makes_a_valid_broker_pod() -> None:
    """The chart copies broker.initContainers and broker.extraVolumes into its broker pod:
    the pod they make is valid, the sidecar is a native sidecar (restartPolicy Always), and
    its mounts name the volumes the snippet adds."""
    broker = helm_values()["broker"]
    # Keys of the chart's broker values (charts/pulsar 4.7.0 values.yaml) the snippet sets.
    assert set(broker) <= {"gracePeriod", "initContainers", "extraVolumes"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pulsar-broker-0"},
        "spec": {
            "terminationGracePeriodSeconds": broker["gracePeriod"],
            "initContainers": broker["initContainers"],
            "containers": [{"name": "pulsar-broker", "image": "apachepulsar/pulsar:4.0.7"}],
            "volumes": broker["extraVolumes"],
        },
    }
    kubernetes_validate.validate(pod, KUBERNETES_VERSION, strict=True)
    (sidecar,) = broker["initContainers"]
    assert sidecar["restartPolicy"] == "Always"
    volumes = {v["name"] for v in broker["extraVolumes"]}
    assert {m["name"] for m in sidecar["volumeMounts"]} == volumes
    # The broker's own 30 s default, then the sidecar's bounded shutdown.
    assert broker["gracePeriod"] >= 30 + SHUTDOWN_BOUND_SECONDS


def test_the_sidecar_never_takes_its_broker_out_of_service() -> None:
    """A native sidecar's readiness counts towards its pod's: with /ready (503 whenever
    ZooKeeper is unreachable) as its probe, a ZooKeeper blip marked every broker pod NotReady
    and stalled rolling updates (issue 32, item 7). The broker pod's sidecar has no readiness
    or startup probe; its liveness is /health, which a store outage does not fail
    (tests/integration/test_run_unreachable.py); the standalone Deployment keeps /ready."""
    (sidecar,) = helm_values()["broker"]["initContainers"]
    assert "readinessProbe" not in sidecar and "startupProbe" not in sidecar
    assert sidecar["livenessProbe"]["httpGet"]["path"] == "/health"
    deployment = [c for w, c, _ in containers() if "broker.initContainers" not in w]
    assert any(c.get("readinessProbe", {}).get("httpGet", {}).get("path") == "/ready"
               for c in deployment)  # fmt: skip


def test_images_match_the_dockerfiles_and_the_version() -> None:
    assert dockerfile_entrypoint(ROOT / "Dockerfile") == ["ledger-janitor"]
    audit_dockerfile = KUBERNETES / "audit.Dockerfile"
    # The audit image installs exactly the packages the sidecar's image does.
    assert dockerfile_copies(audit_dockerfile) == dockerfile_copies(ROOT / "Dockerfile")
    assert '".[audit]"' in audit_dockerfile.read_text()
    images = {c["image"] for _, c, _ in containers()}
    version = project_version()
    assert images == {f"ledger-janitor:{version}", f"ledger-janitor-audit:{version}"}
    for where, container in janitor_containers():
        # The Dockerfile's ENTRYPOINT runs: args are a ledger-janitor command line.
        assert "command" not in container, where


def test_every_command_and_flag_exists_in_the_cli() -> None:
    for where, container, _ in containers():
        runs = invocations(container)
        assert runs, f"{where} runs no ledger-janitor command"
        for path, words in runs:
            assert path in {("run",), ("audit",), ("archive", "drain"), ("audit_main",)}, where
            assert not words or words[0].startswith("-"), f"{where}: {path} {words}"
            known = set(re.findall(r"--[a-z][a-z-]*", help_text(*path)))
            for flag in (w.split("=")[0] for w in words if w.startswith("--")):
                assert flag in known, f"{where}: {flag}"


def test_the_configmap_is_a_broker_conf_the_loader_accepts(tmp_path: Path) -> None:
    text = broker_conf()
    keys = set(javaproperties.loads(text))
    ours = {spec.key for spec in SPECS}
    assert keys <= ours | BROKER_KEYS, keys - ours
    path = tmp_path / "broker.conf"
    path.write_text(text)
    shown = subprocess.run(
        [sys.executable, "-m", "ledger_janitor", "config", "show", "-c", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert '"metricsBindAddress"' in shown.stdout and "0.0.0.0" in shown.stdout


def test_ports_probes_env_and_secrets_match_the_project() -> None:
    props = javaproperties.loads(broker_conf())
    port = int(props["metricsPort"])
    assert port == next(s.default for s in SPECS if s.key == "metricsPort")
    token_dir = str(Path(props["authParams"].removeprefix("file:")).parent)
    token_key = Path(props["authParams"]).name
    secrets = {
        d["metadata"]["name"]: d["stringData"] for _, d in manifests() if d["kind"] == "Secret"
    }
    assert token_key in secrets["ledger-janitor-token"]
    env_names = {env_var(spec.key) for spec in SPECS} | NOT_SETTINGS
    checked = 0
    for where, container, spec in containers():
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        mounts = {m["mountPath"]: volumes[m["name"]] for m in container.get("volumeMounts", [])}
        assert mounts["/etc/ledger-janitor/broker.conf"]["configMap"]["name"] == "ledger-janitor"
        assert mounts[token_dir]["secret"]["secretName"] == "ledger-janitor-token", where
        for env in container.get("env", []):
            if env["name"].startswith("LEDGER_JANITOR_"):
                assert env["name"] in env_names, f"{where}: {env['name']}"
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                assert ref["key"] in secrets[ref["name"]], where
        if container["args"][0] == "run":
            assert [p["containerPort"] for p in container["ports"]] == [port], where
            checked += 1
    assert checked == 2  # the Deployment and the broker pod's sidecar


def test_probe_paths_exist_on_the_operations_endpoint() -> None:
    paths = {
        probe["httpGet"]["path"]
        for _, container in janitor_containers()
        for probe in (container.get("livenessProbe"), container.get("readinessProbe"))
        if probe
    }
    assert paths == {"/health", "/ready"}
    endpoint = OperationsEndpoint(
        CollectorRegistry(), lambda: (True, "ok"), lambda: (True, "ok"), "127.0.0.1", 0
    ).start()
    try:
        for path in [*paths, "/metrics"]:
            assert httpx.get(f"http://127.0.0.1:{endpoint.port}{path}").status_code == 200
    finally:
        endpoint.stop()


@pytest.mark.parametrize("kind", ["Deployment", "helm"])
def test_grace_period_and_resources_fit_the_measured_sidecar(kind: str) -> None:
    (where, container, spec) = next(
        (w, c, s)
        for w, c, s in containers()
        if c["args"][0] == "run" and (kind == "helm") == ("broker.initContainers" in w)
    )
    grace = int(spec.get("terminationGracePeriodSeconds", spec.get("gracePeriod", 0)))
    assert grace >= 2 * SHUTDOWN_BOUND_SECONDS, where
    resources = container["resources"]
    assert mebibytes(resources["requests"]["memory"]) >= WORKER_PEAK_MB
    assert mebibytes(resources["limits"]["memory"]) >= 2 * LOAD_TEST_PEAK_MB
    assert resources["limits"]["cpu"] == "1"  # one interpreter: one core at most


def test_the_audit_report_is_written_to_a_persistent_volume() -> None:
    """The audit CronJob wrote report.html to an emptyDir: gone with the pod. Every audit a
    manifest runs writes its report (`--output`) under a mount of a PersistentVolumeClaim
    that the manifests define, writable by the pod's user."""
    claims = {d["metadata"]["name"] for _, d in manifests() if d["kind"] == "PersistentVolumeClaim"}
    reports = []
    for where, container, spec in containers():
        for path, words in invocations(container):
            if path not in {("audit",), ("audit_main",)}:
                continue
            given = [w for i, w in enumerate(words) if i and words[i - 1] == "--output"]
            given += [w.removeprefix("--output=") for w in words if w.startswith("--output=")]
            assert len(given) == 1, f"{where}: the audit writes no report (--output DIR)"
            # A run's own directory may be named as it runs (`/reports/$stamp`): its parent.
            directory = given[0].split("$", 1)[0]
            mount = max(
                (m for m in container["volumeMounts"] if directory.startswith(m["mountPath"])),
                key=lambda m: len(m["mountPath"]),
            )
            volume = {v["name"]: v for v in spec["volumes"]}[mount["name"]]
            assert "persistentVolumeClaim" in volume, f"{where}: {given[0]} is on {volume}"
            assert volume["persistentVolumeClaim"]["claimName"] in claims, where
            assert not mount.get("readOnly") and not volume["persistentVolumeClaim"].get("readOnly")
            assert spec["securityContext"]["fsGroup"] == spec["securityContext"]["runAsUser"]
            reports.append(where)
    assert any(where.startswith("audit-cronjob.yaml") for where in reports), reports
