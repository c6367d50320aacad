"""How a multi's results are read: the server's answer shapes (apache/zookeeper
DataTree.processTxn: OK before the failing op, its own error, RUNTIMEINCONSISTENCY after),
as kazoo hands them over."""

from __future__ import annotations

from typing import Any

import pytest
from kazoo.exceptions import (
    BadVersionError,
    MarshallingError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)

from deletion.adapters.stores.zookeeper_multi_delete import Answer, MultiDelete, answer


class Replied:
    def __init__(self, results: list[Any]) -> None:
        self._results = results

    def get(self, block: bool = True, timeout: float | None = None) -> list[Any]:
        return self._results


def _multi(start: int, results: list[Any], places: int | None = None) -> MultiDelete:
    count = len(results) if places is None else places
    return MultiDelete(range(start, start + count), Replied(results))


def test_all_applied() -> None:
    assert answer(_multi(0, [True, True, True]), 1.0) == Answer(applied=True)


@pytest.mark.parametrize("error", [NoNodeError(), BadVersionError()])
def test_the_failing_delete_is_named_and_the_others_go_again(error: Exception) -> None:
    results = [RolledBackError(), error, RuntimeInconsistency(), RuntimeInconsistency()]
    assert answer(_multi(10, results), 1.0) == Answer(
        applied=False, failed=(11, error), again=(10, 12, 13)
    )


def test_a_failed_multi_naming_no_delete_sends_them_all_again() -> None:
    results = [RolledBackError(), RuntimeInconsistency()]
    assert answer(_multi(0, results), 1.0) == Answer(applied=False, again=(0, 1))


def test_a_reply_of_the_wrong_length_is_a_marshalling_failure() -> None:
    with pytest.raises(MarshallingError, match="1 results for 2 deletes"):
        answer(_multi(0, [True], places=2), 1.0)
