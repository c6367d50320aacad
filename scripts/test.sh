#!/usr/bin/env bash
# The one test command (the README's and CI's): install what is missing, lint, type-check, test.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# ZooKeeper (Debian's package) and a JRE for the real-server tests.
if [ ! -f /usr/share/java/zookeeper.jar ] || ! command -v java >/dev/null 2>&1; then
    echo "installing Debian's zookeeper package (and a JRE)..."
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper default-jre-headless >/dev/null
fi

# etcd (Debian's etcd-server package) for the etcd metadata-store tests.
if ! command -v etcd >/dev/null 2>&1 && [ ! -x /usr/bin/etcd ]; then
    echo "installing Debian's etcd-server package..."
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
fi

# Prometheus (Debian's package): promtool checks and unit-tests the alerting rules, and the
# server scrapes a running sidecar in tests/deploy/test_real_prometheus.py.
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
    echo "installing Debian's prometheus package..."
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
fi

# Chromium (Debian's package) opens the audit's HTML report headless in the report tests.
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
    echo "installing Debian's chromium package..."
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

# A JDK 17 and Maven for the real Apache Pulsar the suite starts (tests/real_pulsar): Maven
# fetches its distribution and offloaders from Maven Central into ~/.m2 once (about 300 MB;
# harness/pulsar_dist.py), javac builds the tests' small Java programs against its jars.
if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
    echo "installing Debian's maven and openjdk-17-jdk-headless packages..."
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven openjdk-17-jdk-headless >/dev/null
fi

# The project with its test extra (pulsar-client, pulsar-lite, kazoo, hypothesis, ...).
python3 -m pip install -q --disable-pip-version-check -e '.[test]'

ruff check .
ruff format --check .
mypy
lint-imports  # the layer contracts in pyproject.toml
python3 -m pytest "$@"
