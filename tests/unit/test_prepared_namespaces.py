"""PreparedNamespaces: the full set-up once per namespace, the archive's alone for a worker."""

from __future__ import annotations

from deletion.domain.topics import ARCHIVE_SUBSCRIPTION, NamespaceName
from producers.topic_setup import (
    Pairs,
    PreparedNamespaces,
    archive_subscription,
    subscriptions,
)

NS = NamespaceName("public", "default")


class Recording:
    def __init__(self) -> None:
        self.made: list[list[tuple[str, str]]] = []

    def __call__(self, namespace: NamespaceName, pairs: Pairs = subscriptions) -> None:
        self.made.append(pairs(namespace))


def test_a_worker_makes_only_the_archive_subscription_then_a_send_makes_all() -> None:
    setup = Recording()
    prepared = PreparedNamespaces(setup)
    prepared.ensure_archive(NS)
    prepared.ensure_archive(NS)
    assert setup.made == [[(NS.archive_topic, ARCHIVE_SUBSCRIPTION)]]
    prepared.ensure(NS)  # the first send still makes every subscription it needs
    assert setup.made[1] == subscriptions(NS)
    prepared.ensure_archive(NS)
    assert len(setup.made) == 2


def test_after_a_send_the_archive_is_not_made_again() -> None:
    setup = Recording()
    prepared = PreparedNamespaces(setup)
    prepared.ensure(NS)
    prepared.ensure_archive(NS)
    assert setup.made == [subscriptions(NS)]
    assert archive_subscription(NS)[0] in setup.made[0]
