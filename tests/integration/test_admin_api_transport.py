"""AdminApiInUseLedgers' transport against real HTTP(S) servers on loopback: redirects, errors
and their classes, TLS, tokens and what error messages may show."""

from __future__ import annotations

import itertools
import socket
import threading
from typing import Any

import httpx
import pytest

from core.errors import (
    ConfigurationError,
    MetadataError,
    TransientMetadataError,
)
from harness.pki import Pki
from tests.integration.admin_api_rig import (
    RECORDED_IDS,
    STATS_PATH,
    TOKEN,
    TOPIC,
    Connect,
    Reply,
    Seen,
    Serve,
    connect,
    pki,
    pulsar_error,
    raised,
    reply,
    schemas,
    serve,
    stats,
)
from transport.admin_http import AdminHttp

__all__ = ["connect", "pki", "schemas", "serve"]  # the fixtures


@pytest.mark.parametrize("status", [307, 308, 301, 302, 303])
def test_redirect_to_the_owner_keeps_the_token(serve: Serve, connect: Connect, status: int) -> None:
    def owner_answer(seen: Seen) -> Reply:
        if seen.authorization != f"Bearer {TOKEN}":
            return pulsar_error(401, "Authentication required")
        return reply(200, stats())

    owner = serve(owner_answer)
    location = f"{owner.url}{STATS_PATH}?authoritative=true"
    front = serve(lambda seen: (status, {"Location": location}, b""))
    assert connect(front.url).fetch(TOPIC).ledger_ids == RECORDED_IDS
    assert owner.seen == [Seen(f"{STATS_PATH}?authoritative=true", f"Bearer {TOKEN}")]


def test_redirect_loop_and_endless_redirects(serve: Serve, connect: Connect) -> None:
    urls: dict[str, str] = {}
    a = serve(lambda seen: (307, {"Location": urls["b"] + STATS_PATH}, b""))
    b = serve(lambda seen: (307, {"Location": urls["a"] + STATS_PATH}, b""))
    urls.update(a=a.url, b=b.url)
    error = raised(lambda: connect(a.url).fetch(TOPIC), TransientMetadataError)
    assert "loop" in str(error)
    assert len(a.seen) == len(b.seen) == 1  # the first URL asked counts as seen
    # A loop that does not pass through the first URL: a -> b -> c -> b.
    c = serve(lambda seen: (307, {"Location": urls["b"] + STATS_PATH}, b""))
    b2 = serve(lambda seen: (307, {"Location": urls["c"] + STATS_PATH}, b""))
    a2 = serve(lambda seen: (307, {"Location": urls["b2"] + STATS_PATH}, b""))
    urls.update(b=b2.url, c=c.url, b2=b2.url)
    error = raised(lambda: connect(a2.url).fetch(TOPIC), TransientMetadataError)
    assert f"redirect loop between {c.url}{STATS_PATH} and {b2.url}{STATS_PATH}" in str(error)
    assert (len(a2.seen), len(b2.seen), len(c.seen)) == (1, 1, 1)
    counter = itertools.count()
    hops = serve(lambda seen: (307, {"Location": f"{STATS_PATH}?hop={next(counter)}"}, b""))
    error = raised(lambda: connect(hops.url).fetch(TOPIC), TransientMetadataError)
    assert "more than 5 redirects" in str(error) and len(hops.seen) == 6


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_are_not_transient(serve: Serve, connect: Connect, status: int) -> None:
    echo = f"token {TOKEN} is expired"  # even an echoing server must not leak it
    broker = serve(lambda seen: pulsar_error(status, echo))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert not isinstance(error, TransientMetadataError)
    assert "authentication/authorization failed" in str(error)


@pytest.mark.parametrize("status", [500, 503, 429])
def test_server_errors_are_transient(serve: Serve, connect: Connect, status: int) -> None:
    broker = serve(lambda seen: pulsar_error(status, "Failed to load the managed ledger"))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), TransientMetadataError)
    reason = "Failed to load the managed ledger"
    assert str(error) == f"{broker.url}{STATS_PATH}: HTTP {status}: {reason}"


def test_other_statuses_are_metadata_errors(serve: Serve, connect: Connect) -> None:
    broker = serve(lambda seen: pulsar_error(412, "Topic name is not valid"))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert not isinstance(error, TransientMetadataError)
    assert str(error) == f"{broker.url}{STATS_PATH}: unexpected HTTP 412: Topic name is not valid"


def test_refused_connection_is_transient(connect: Connect) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    error = raised(lambda: connect(url).fetch(TOPIC), TransientMetadataError)
    assert str(error).startswith(f"GET {url}{STATS_PATH}: ConnectError: ")


def test_a_slow_broker_times_out(serve: Serve, connect: Connect) -> None:
    release = threading.Event()
    broker = serve(lambda seen: (release.wait(10), reply(200, stats()))[1])
    try:
        adapter = connect(broker.url, timeout_seconds=0.3)
        error = raised(lambda: adapter.fetch(TOPIC), TransientMetadataError)
        assert str(error) == f"GET {broker.url}{STATS_PATH}: timed out (0.3s)"
    finally:
        release.set()


def test_https_with_a_trusted_ca(serve: Serve, connect: Connect, pki: Pki) -> None:
    broker = serve(lambda seen: reply(200, stats()), tls=pki.server)
    adapter = connect(broker.url, tls_trust_certs_file=str(pki.ca_file))
    assert adapter.fetch(TOPIC).ledger_ids == RECORDED_IDS


def test_https_untrusted_is_a_configuration_failure(
    serve: Serve, connect: Connect, pki: Pki
) -> None:
    broker = serve(lambda seen: reply(200, stats()), tls=pki.server)
    # Not transient: retrying cannot make the certificate trusted.
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert not isinstance(error, TransientMetadataError)
    assert "certificate verification failed" in str(error)


def test_https_insecure_mode(serve: Serve, connect: Connect, pki: Pki) -> None:
    broker = serve(lambda seen: reply(200, stats()), tls=pki.server)
    assert connect(broker.url, tls_allow_insecure=True).fetch(TOPIC).exists


def test_https_never_redirects_to_plain_http(serve: Serve, connect: Connect, pki: Pki) -> None:
    plain = serve(lambda seen: reply(200, stats()))
    front = serve(lambda seen: (307, {"Location": plain.url + STATS_PATH}, b""), tls=pki.server)
    adapter = connect(front.url, tls_trust_certs_file=str(pki.ca_file))
    error = raised(lambda: adapter.fetch(TOPIC), MetadataError)
    assert f"refusing redirect from {front.url}{STATS_PATH} to {plain.url}" in str(error)
    assert plain.seen == []


def test_plain_http_may_redirect_to_https(serve: Serve, connect: Connect, pki: Pki) -> None:
    owner = serve(lambda seen: reply(200, stats()), tls=pki.server)
    front = serve(lambda seen: (307, {"Location": owner.url + STATS_PATH}, b""))
    adapter = connect(front.url, tls_trust_certs_file=str(pki.ca_file))
    assert adapter.fetch(TOPIC).ledger_ids == RECORDED_IDS
    assert owner.seen == [Seen(STATS_PATH, f"Bearer {TOKEN}")]


def test_token_from_a_file_and_secrecy(serve: Serve, connect: Connect) -> None:
    broker = serve(
        lambda seen: (
            reply(200, stats())
            if seen.authorization == f"Bearer {TOKEN}"
            else pulsar_error(401, "no")
        )
    )
    adapter = connect(broker.url, token=TOKEN + "\n")  # token files end with a newline
    assert adapter.fetch(TOPIC).exists
    assert TOKEN not in repr(adapter) and "<set>" in repr(adapter)
    assert "token=None" in repr(connect(broker.url, token=None))


@pytest.mark.parametrize("status", [401, 403])
def test_a_token_echoed_in_a_reason_is_masked(serve: Serve, connect: Connect, status: int) -> None:
    broker = serve(lambda seen: pulsar_error(status, f"token {TOKEN} is expired"))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert "token <token> is expired" in str(error)


def test_without_a_token_a_reason_is_shown_as_given(serve: Serve, connect: Connect) -> None:
    broker = serve(lambda seen: pulsar_error(503, "Failed to load the managed ledger"))
    error = raised(lambda: connect(broker.url, token=None).fetch(TOPIC), TransientMetadataError)
    assert str(error).endswith(": HTTP 503: Failed to load the managed ledger")


def test_a_long_reason_is_cut_at_300_characters(serve: Serve, connect: Connect) -> None:
    broker = serve(lambda seen: pulsar_error(500, "x" * 1000))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), TransientMetadataError)
    assert str(error).endswith(": HTTP 500: " + "x" * 300)


@pytest.mark.parametrize(
    "body", [[], "Topic not found", {"reason": 404}, {"error": "Topic not found"}]
)
def test_a_404_without_a_pulsar_reason_is_not_a_deleted_topic(
    serve: Serve, connect: Connect, body: object
) -> None:
    broker = serve(lambda seen: reply(404, body))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert not isinstance(error, TransientMetadataError)
    assert str(error).endswith("unexpected HTTP 404: ")


def test_a_redirect_without_a_location_is_an_error(serve: Serve, connect: Connect) -> None:
    broker = serve(lambda seen: (307, {}, b""))
    error = raised(lambda: connect(broker.url).fetch(TOPIC), MetadataError)
    assert not isinstance(error, TransientMetadataError)
    assert str(error) == f"HTTP 307 without Location from {broker.url}{STATS_PATH}"


def test_redirects_are_followed_by_hand_even_on_a_client_that_follows_them(
    serve: Serve, connect: Connect
) -> None:
    """httpx would drop the token on the way to another broker; ours keeps it."""
    owner = serve(
        lambda seen: (
            reply(200, stats())
            if seen.authorization == f"Bearer {TOKEN}"
            else pulsar_error(401, "no")
        )
    )
    front = serve(lambda seen: (307, {"Location": owner.url + STATS_PATH}, b""))
    with httpx.Client(follow_redirects=True, timeout=2) as client:
        assert connect(front.url, client=client).fetch(TOPIC).ledger_ids == RECORDED_IDS


def test_proxy_settings_in_the_environment_are_ignored(
    serve: Serve, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stray HTTP(S)_PROXY must not reroute admin calls, and the token, through a proxy
    (here one that would even answer "topic not found")."""
    proxy = serve(lambda seen: pulsar_error(404, "Topic not found"))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, proxy.url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    broker = serve(lambda seen: reply(200, stats()))
    assert connect(broker.url).fetch(TOPIC).ledger_ids == RECORDED_IDS
    assert proxy.seen == []


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("ftp://127.0.0.1:1", {}),
        ("http://[::1", {}),
        ("http://admin:pw@127.0.0.1:1", {}),
        ("http://127.0.0.1:1", {"token": "abc\ndef"}),
        ("https://127.0.0.1:1", {"tls_trust_certs_file": "/nonexistent/ca.pem"}),
    ],
)
def test_bad_settings_are_refused(url: str, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError) as info:
        AdminHttp(url, **options)
    assert "abc" not in str(info.value)
