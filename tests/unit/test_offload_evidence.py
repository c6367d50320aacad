"""Attributing an offloaded object to a managed ledger from the metadata Pulsar writes."""

from __future__ import annotations

from audit.offload.evidence import Claim, Evidence, topic_of

NAME = "t/ns/persistent/my+topic%3Av1"


def managed(name: str, **extra: bytes) -> dict[str, bytes]:
    custom = {"application": b"pulsar", "component": b"managed-ledger"}
    return {**custom, "pulsar/managed-ledger": name.encode(), **extra}


def claim(user: dict[str, str] | None = None, embedded: dict[str, bytes] | None = None) -> Claim:
    evidence = Evidence()
    if user is not None:
        evidence.user_metadata(user)
    if embedded is not None:
        evidence.ledger_metadata(embedded)
    return evidence.claim()


def test_agreeing_evidence_attributes() -> None:
    assert claim({"managedledgername": NAME}, managed(NAME)) == Claim(NAME)
    assert claim({"ManagedLedgerName": NAME}) == Claim(NAME)  # keys compared case-insensitively
    assert claim(None, managed(NAME)) == Claim(NAME)


def test_silent_evidence_proves_nothing_but_does_not_conflict() -> None:
    assert claim({}, managed(NAME)) == Claim(NAME)  # before Pulsar 2.11: no user metadata
    silent = claim({}, {})
    assert silent.managed_ledger is None and silent.problem is None and silent.silence


def test_conflicting_evidence_is_never_attributed() -> None:
    other = claim({"managedledgername": NAME}, managed("t/ns/persistent/other"))
    assert other.managed_ledger is None and "several managed ledgers" in (other.problem or "")
    cursor = claim(None, managed(NAME, **{"pulsar/cursor": b"sub"}))
    assert cursor.managed_ledger is None and "data ledger" in (cursor.problem or "")


def test_a_topic_only_from_a_name_pulsar_spells_exactly() -> None:
    topic = topic_of(NAME)
    assert topic is not None and str(topic) == "t/ns/my topic:v1"
    assert topic_of("t/ns/persistent/my topic") is None  # not URL-encoded as Pulsar does
    assert topic_of("t/ns/non-persistent/x") is None
    assert topic_of("t/ns/persistent/a/b") is None
