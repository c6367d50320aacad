"""The PromQL the project ships: every alert rule's expression and every dashboard panel's
query, read from deploy/prometheus and deploy/grafana."""

from __future__ import annotations

import json
import re

import yaml

from tests.deploy.deploy_files import DEPLOY

RULES = DEPLOY / "prometheus" / "ledger-janitor-rules.yml"
DASHBOARD = DEPLOY / "grafana" / "ledger-janitor.json"
# Grafana's variables, as Grafana would fill them in for a short time range.
GRAFANA_VARIABLES = {"$__rate_interval": "1m"}
METRIC = re.compile(r"\b(ledger_janitor_[a-z_]+|up)\b")


def rule_expressions() -> dict[str, str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"]: rule["expr"].strip() for group in groups for rule in group["rules"]}


def panel_queries() -> dict[str, str]:
    """'<panel title>/<refId>' -> its query, Grafana's variables filled in."""
    queries = {}
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for name, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(name, value)
            queries[f"{panel['title']}/{target['refId']}"] = expr
    return queries


def metric_names(*exprs: str) -> set[str]:
    return {name for expr in exprs for name in METRIC.findall(expr)}
