"""deploy/prometheus: the alerting rules pass `promtool check rules`, their unit tests pass
`promtool test rules` (Debian's prometheus package), every alert is shown both firing and
not firing there, and the scrape configuration finds the port the manifests open."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.deploy_files import DEPLOY, containers

RULES = DEPLOY / "prometheus" / "ledger-janitor-rules.yml"
RULE_TESTS = DEPLOY / "prometheus" / "ledger-janitor-rules.test.yml"
SCRAPE = DEPLOY / "prometheus" / "scrape-config.yml"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=120)


def alert_names() -> set[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"] for group in groups for rule in group["rules"]}


def test_the_rules_pass_promtool_check() -> None:
    checked = promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alert_names())} rules found" in checked.stdout


def test_the_rules_unit_tests_pass_and_show_each_alert_firing_and_not() -> None:
    tested = promtool("test", "rules", str(RULE_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for check in case["alert_rule_test"]:
            (firing if check["exp_alerts"] else quiet).add(check["alertname"])
    assert firing == alert_names()
    assert quiet == alert_names()


def test_the_unit_tests_catch_a_broken_rule(tmp_path: Path) -> None:
    """A threshold changed in the rules makes `promtool test rules` fail."""
    broken = RULES.read_text().replace("ledger_janitor_audit_dangling_references) > 0", "x) > 0")
    assert broken != RULES.read_text()
    (tmp_path / RULES.name).write_text(broken)
    (tmp_path / RULE_TESTS.name).write_text(RULE_TESTS.read_text())
    assert promtool("test", "rules", str(tmp_path / RULE_TESTS.name)).returncode != 0


def test_the_scrape_config_finds_the_manifests_port(tmp_path: Path) -> None:
    config: dict[str, Any] = yaml.safe_load(SCRAPE.read_text())
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "ledger-janitor"]
    assert 'job="ledger-janitor"' in RULES.read_text()
    (keep,) = [r for r in job["relabel_configs"] if r.get("action") == "keep"]
    port_names = {
        port["name"]
        for _, container, _ in containers()
        if container["args"][0] == "run"
        for port in container["ports"]
    }
    assert port_names == {keep["regex"]}
    # Debian's Prometheus is built without Kubernetes discovery: check the rest with a
    # static target in its place.
    del job["kubernetes_sd_configs"]
    job["static_configs"] = [{"targets": ["127.0.0.1:9464"]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    (tmp_path / RULES.name).write_text(RULES.read_text())
    checked = promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
