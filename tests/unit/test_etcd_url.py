"""Pulsar's etcd metadata-store URL: `etcd:` and the client URLs, comma-separated."""

from __future__ import annotations

import re

import pytest

from config import StoreUrl, parse_store_url
from config.urls import STORE_URL_FORMS
from core.errors import ConfigurationError


@pytest.mark.parametrize(
    ("url", "endpoints"),
    [
        ("etcd:http://127.0.0.1:2379", ("http://127.0.0.1:2379",)),
        ("etcd:http://e1:2379,http://e2:2380", ("http://e1:2379", "http://e2:2380")),
        ("etcd:https://etcd.example:2379/", ("https://etcd.example:2379",)),
        ("etcd:http://[::1]:2379", ("http://[::1]:2379",)),
    ],
)
def test_etcd_urls(url: str, endpoints: tuple[str, ...]) -> None:
    assert parse_store_url(url) == StoreUrl("etcd", endpoints=endpoints)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("etcd:", "no etcd endpoint"),
        ("etcd://h:2379", "not etcd://host:port"),
        ("etcd:h:2379", "needs an http:// or https:// scheme"),
        ("etcd:ftp://h:2379", "needs an http:// or https:// scheme"),
        ("etcd:http://h:2379,", "empty etcd endpoint"),
        ("etcd:http://:2379", "has no host"),
        ("etcd:http://h", "no valid port"),
        ("etcd:http://h:0", "no valid port"),
        ("etcd:http://h:65536", "no valid port"),
        ("etcd:http://h:2379/pulsar", "scheme://host:port alone"),
        ("etcd:http://user@h:2379", "scheme://host:port alone"),
        ("etcd:http://h :2379", "contains a space"),
    ],
)
def test_bad_etcd_urls_say_why(url: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(reason)) as info:
        parse_store_url(url)
    assert repr(url) in str(info.value)
    assert STORE_URL_FORMS in str(info.value)


def test_the_accepted_forms_name_etcd() -> None:
    assert "etcd:http://host:port" in STORE_URL_FORMS
