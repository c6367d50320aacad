"""docker-compose.yml read as Docker would read it (this machine runs no Docker engine): the
host can reach the broker through the address the broker hands out, the sidecar's command is
a valid configuration on the admin-API in-use source, and the data outlives the containers."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from config import load_configuration

REPO = Path(__file__).resolve().parents[2]
COMPOSE: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]


def listeners(value: str) -> dict[str, tuple[str, int]]:
    """`name:pulsar://host:port,...` as {name: (host, port)}."""
    found = {}
    for item in value.split(","):
        name, _, url = item.strip().partition(":")
        parsed = urlparse(url)
        assert parsed.hostname is not None and parsed.port is not None, item
        found[name] = (parsed.hostname, parsed.port)
    return found


def published(service: dict[str, Any]) -> dict[int, int]:
    """{host port: container port}."""
    pairs = (str(mapping).split(":") for mapping in service.get("ports", []))
    return {int(host): int(container) for host, container in pairs}


def test_a_host_client_is_told_an_address_the_host_can_reach() -> None:
    broker = SERVICES["broker"]
    env = broker["environment"]
    # Pulsar refuses advertisedAddress beside advertisedListeners.
    assert "advertisedAddress" not in env
    advertised = listeners(env["PULSAR_PREFIX_advertisedListeners"])
    internal = advertised[env["PULSAR_PREFIX_internalListenerName"]]
    assert internal == ("broker", 6650)  # what the other containers reach
    bound = listeners(env["PULSAR_PREFIX_bindAddresses"])
    ports = published(broker)
    external_name = next(name for name, (host, _) in advertised.items() if host == "localhost")
    _, port = advertised[external_name]
    # The host's connection lands on the external listener's own bind port, so the lookup
    # answers with the external address, which is the host port that leads back to it.
    assert ports[port] == bound[external_name][1] != internal[1]
    assert ports[8080] == 8080


def test_the_sidecar_command_is_a_valid_configuration_on_the_admin_in_use_source() -> None:
    words = shlex.split(SERVICES["janitor"]["command"])
    assert words[0] == "run"
    pairs = list(zip(words[1::2], words[2::2], strict=True))
    options = dict(pairs)
    overrides = dict(value.split("=", 1) for flag, value in pairs if flag == "--set")
    overrides["metadataStoreUrl"] = options["--metadata-store"]
    overrides["brokerServiceUrl"] = options["--broker-url"]
    config = load_configuration(None, {}, overrides).config
    assert config.in_use_ledgers_source == "ADMIN"
    assert urlparse(config.web_service_url).hostname == "broker"
    assert urlparse(config.bookie_http_service_url).hostname == "bookie"
    assert config.metrics_bind_address == "0.0.0.0"
    assert urlparse(config.broker_service_url).port == 6650


def dockerfile(instruction: str) -> list[str]:
    lines = (REPO / "Dockerfile").read_text().splitlines()
    return [line.split(None, 1)[1] for line in lines if line.startswith(instruction + " ")]


def test_zookeeper_the_bookie_and_the_sidecar_keep_their_data_in_volumes() -> None:
    declared = set(COMPOSE.get("volumes") or {})

    def named_volume_at(service: str, path: str) -> bool:
        for mount in SERVICES[service].get("volumes", []):
            source, _, target = str(mount).partition(":")
            if target.split(":")[0] == path and source in declared:
                return True
        return False

    # The upstream image's data directory (owned by its user, so a fresh volume is writable).
    assert named_volume_at("zookeeper", "/pulsar/data")
    assert named_volume_at("bookie", "/pulsar/data")
    (state,) = dockerfile("VOLUME")
    assert dockerfile("WORKDIR")[-1] == state  # relative paths (a sqlite: store) land there
    assert named_volume_at("janitor", state)


def test_the_metadata_store_is_published_for_host_commands() -> None:
    assert published(SERVICES["zookeeper"]).get(2181) == 2181


STANDALONE: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.standalone.yml").read_text())[
    "services"
]["standalone"]


def test_the_standalone_stack_runs_the_suites_pulsar_version_with_its_settings() -> None:
    from harness.pulsar_dist import PULSAR_VERSION

    assert STANDALONE["image"].endswith(f":${{PULSAR_VERSION:-{PULSAR_VERSION}}}")
    assert (
        "./harness/pulsar/standalone.conf:/ledger-janitor/standalone.conf:ro"
        in (STANDALONE["volumes"])
    )
    assert STANDALONE["environment"]["PULSAR_STANDALONE_USE_ZOOKEEPER"] == "1"


def test_the_standalone_stack_lays_the_settings_over_the_image_conf_as_the_harness_does(
    tmp_path: Path,
) -> None:
    """The compose command's script, run here on a sample of Pulsar's own standalone.conf,
    gives every key of harness/pulsar/standalone.conf the value the test harness gives it."""
    import subprocess

    from harness.pulsar_standalone import OVERRIDES, overlay, read_settings

    script = STANDALONE["command"][2].replace("$$", "$")
    script = script.replace("/ledger-janitor/standalone.conf", str(OVERRIDES))
    script = script.replace("exec bin/pulsar standalone", "echo")
    (tmp_path / "conf").mkdir()
    sample = "# stock\ngcWaitTime=300000\nbrokerServicePort=6650\nlogSizeLimit=1073741824\n"
    (tmp_path / "conf" / "standalone.conf").write_text(sample)
    subprocess.run(["bash", "-c", script], cwd=tmp_path, check=True, capture_output=True)
    composed = read_settings(tmp_path / "conf" / "standalone.conf")
    harnessed = read_settings_text(overlay(sample, read_settings(OVERRIDES)))
    assert {k: composed[k] for k in harnessed} == harnessed
    assert composed["fileSystemURI"] == "file:///pulsar/offload"


def read_settings_text(text: str) -> dict[str, str]:
    return {
        line.split("=", 1)[0]: line.split("=", 1)[1]
        for line in text.splitlines()
        if "=" in line and not line.startswith("#")
    }
