"""A sidecar reading its broker's broker.conf reaches that broker: the broker's own service
and web URLs, from its ports and advertised address, as the broker works them out."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import load_configuration
from config.broker_urls import broker_urls
from tests.unit.config_rig import write

PORTS = "brokerServicePort=6651\nwebServicePort=8081\n"


def urls(tmp_path: Path, text: str) -> tuple[str, str]:
    config = load_configuration(write(tmp_path, text), {}, {}).config
    return config.broker_service_url, config.web_service_url


def test_the_ports_and_the_advertised_address_make_both_urls(tmp_path: Path) -> None:
    path = write(tmp_path, PORTS + "advertisedAddress=10.1.2.3\nbindAddress=0.0.0.0\n")
    loaded = load_configuration(path, {}, {})
    assert loaded.config.broker_service_url == "pulsar://10.1.2.3:6651"
    assert loaded.config.web_service_url == "http://10.1.2.3:8081"
    origin = f"file:{path}, advertisedAddress+brokerServicePort"
    assert loaded.source_of("brokerServiceUrl") == origin
    assert loaded.source_of("webServiceUrl") == f"file:{path}, advertisedAddress+webServicePort"


def test_without_an_advertised_address_the_host_is_the_local_name_as_the_brokers() -> None:
    derived = broker_urls({"brokerServicePort": "6650"}, local_name=lambda: "broker-0.pulsar")
    assert derived["brokerServiceUrl"].url == "pulsar://broker-0.pulsar:6650"
    assert derived["brokerServiceUrl"].origin == "brokerServicePort+the local host name"
    assert "webServiceUrl" not in derived  # no port, no URL: the default stays


def test_the_internal_listener_names_the_host_when_no_address_does() -> None:
    listeners = "external:pulsar://public:6650,internal:pulsar://broker:6650"
    given = {"advertisedListeners": listeners, "brokerServicePort": "6650"}
    assert broker_urls(given)["brokerServiceUrl"].url == "pulsar://public:6650"  # the first
    given["internalListenerName"] = "internal"
    assert broker_urls(given)["brokerServiceUrl"].url == "pulsar://broker:6650"


@pytest.mark.parametrize(
    ("lines", "service", "web"),
    [
        # The broker's own clients use TLS when brokerClientTlsEnabled is true.
        ("brokerServicePortTls=6652\nwebServicePortTls=8443\nbrokerClientTlsEnabled=true\n",
         "pulsar+ssl://h:6652", "https://h:8443"),
        ("brokerServicePortTls=6652\nwebServicePortTls=8443\n", "pulsar://h:6651", "http://h:8081"),
    ],
)  # fmt: skip
def test_tls_ports_when_the_brokers_own_clients_use_them(
    tmp_path: Path, lines: str, service: str, web: str
) -> None:
    assert urls(tmp_path, PORTS + "advertisedAddress=h\n" + lines) == (service, web)


def test_a_tls_port_alone_is_used(tmp_path: Path) -> None:
    text = "brokerServicePort=\nbrokerServicePortTls=6652\nadvertisedAddress=h\n"
    assert urls(tmp_path, text)[0] == "pulsar+ssl://h:6652"


def test_our_own_keys_win_wherever_they_are_set(tmp_path: Path) -> None:
    path = write(tmp_path, PORTS + "advertisedAddress=h\nwebServiceUrl=http://admin:80\n")
    assert load_configuration(path, {}, {}).config.web_service_url == "http://admin:80"
    overrides = {"brokerServiceUrl": "pulsar://other:6650"}
    loaded = load_configuration(path, {}, overrides)
    assert loaded.config.broker_service_url == "pulsar://other:6650"
    assert loaded.source_of("brokerServiceUrl") == "cli"


def test_a_file_without_the_brokers_ports_keeps_the_defaults(tmp_path: Path) -> None:
    loaded = load_configuration(write(tmp_path, "advertisedAddress=h\n"), {}, {})
    assert loaded.source_of("brokerServiceUrl") == "default"
    assert loaded.config.web_service_url == ""
