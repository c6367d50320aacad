"""Asking brokers which compacted ledger each topic reads (audit.compaction.ask): once per
topic; an unanswered question is unknown, never "unreferenced"."""

from __future__ import annotations

import pytest

from audit.compaction import ask
from core.errors import TransientMetadataError
from deletion.domain.topics import TopicName


def test_each_topic_is_asked_once_and_its_answer_sorts_its_ledgers() -> None:
    asked: list[TopicName] = []
    reads = {"acme/orders/prices": frozenset({7, 100}), "acme/orders/gone": frozenset()}

    def topic_reads(topic: TopicName) -> frozenset[int]:
        asked.append(topic)
        return reads[str(topic)]

    found = [(7, "persistent://acme/orders/prices"), (5, "persistent://acme/orders/prices"),
             (9, "persistent://acme/orders/gone")]  # fmt: skip
    verdicts = ask(found, topic_reads)
    assert verdicts.current == [(7, "acme/orders/prices")]
    assert verdicts.stale == {5, 9}
    assert verdicts.unknown == 0
    assert sorted(map(str, asked)) == ["acme/orders/gone", "acme/orders/prices"]


def test_no_broker_no_answer_or_no_topic_is_unknown() -> None:
    def failing(topic: TopicName) -> frozenset[int]:
        raise TransientMetadataError(f"{topic}: HTTP 503")

    found = [(7, "persistent://acme/orders/prices"), (8, None), (9, "not a topic")]
    assert ask(found, None).unknown == 3
    verdicts = ask(found, failing)
    assert (verdicts.current, verdicts.stale, verdicts.unknown) == ([], frozenset(), 3)


@pytest.mark.parametrize("found", [[], [(1, "persistent://a/b/c")]])
def test_nothing_asked_is_nothing_said(found: list[tuple[int, str]]) -> None:
    verdicts = ask(found, None)
    assert verdicts.current == [] and verdicts.stale == frozenset()
