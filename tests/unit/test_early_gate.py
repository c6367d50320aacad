"""EarlyDeliveryGate: messages that arrived before their due time are held, not acked."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from consumers.early import EarlyDeliveryGate


class Item:
    """Deliberately not orderable: the gate must never compare items."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Item({self.name})"


def test_pop_due_returns_items_in_due_order() -> None:
    gate: EarlyDeliveryGate[str] = EarlyDeliveryGate(capacity=10)
    for due, name in [(30.0, "c"), (10.0, "a"), (20.0, "b"), (40.0, "d")]:
        assert gate.hold(due, name)
    assert gate.pop_due(now=5.0) == []
    assert gate.pop_due(now=25.0) == ["a", "b"]
    assert len(gate) == 2
    assert gate.pop_due(now=100.0) == ["c", "d"]
    assert len(gate) == 0


def test_item_due_exactly_now_is_due() -> None:
    gate: EarlyDeliveryGate[str] = EarlyDeliveryGate(capacity=1)
    gate.hold(10.0, "x")
    assert gate.pop_due(now=9.999) == []
    assert gate.pop_due(now=10.0) == ["x"]


def test_ties_come_out_in_insertion_order_without_comparing_items() -> None:
    gate: EarlyDeliveryGate[Item] = EarlyDeliveryGate(capacity=10)
    items = [Item(str(i)) for i in range(6)]
    for item in items:
        assert gate.hold(5.0, item)
    assert gate.pop_due(now=5.0) == items


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=30), st.integers(0, 6))
def test_pop_due_is_a_stable_sort_by_due_time(dues: list[int], now: int) -> None:
    gate: EarlyDeliveryGate[int] = EarlyDeliveryGate(capacity=100)
    for index, due in enumerate(dues):
        gate.hold(float(due), index)
    expected = sorted((i for i, due in enumerate(dues) if due <= now), key=lambda i: dues[i])
    assert gate.pop_due(float(now)) == expected
    assert len(gate) == len(dues) - len(expected)


def test_capacity_refusal() -> None:
    gate: EarlyDeliveryGate[str] = EarlyDeliveryGate(capacity=2)
    assert gate.hold(1.0, "a")
    assert gate.hold(2.0, "b")
    assert not gate.hold(0.5, "c")
    assert len(gate) == 2
    assert gate.pop_due(now=1.0) == ["a"]
    assert gate.hold(3.0, "c")  # room again once something left
    assert gate.pop_due(now=10.0) == ["b", "c"]


def test_zero_capacity_refuses_everything() -> None:
    gate: EarlyDeliveryGate[str] = EarlyDeliveryGate(capacity=0)
    assert not gate.hold(1.0, "a")
    assert gate.pop_due(now=10.0) == []


def test_close_returns_held_items_and_refuses_new_ones() -> None:
    gate: EarlyDeliveryGate[str] = EarlyDeliveryGate(capacity=10)
    for due, name in [(3.0, "c"), (1.0, "a"), (2.0, "b")]:
        gate.hold(due, name)
    gate.pop_due(now=1.0)
    held = gate.close()
    assert sorted(held) == ["b", "c"]
    assert len(gate) == 0
    assert not gate.hold(0.0, "d")
    assert gate.pop_due(now=100.0) == []
    assert gate.close() == []


def test_wait_next_returns_at_once_when_closed() -> None:
    gate: EarlyDeliveryGate[str] = EarlyDeliveryGate(capacity=1)
    gate.close()
    # Would block for an hour (and trip the test time-out) if close did not end waiting.
    gate.wait_next(now=lambda: 0.0, max_wait=3600.0)


def test_wait_next_returns_at_once_when_something_is_already_due() -> None:
    gate: EarlyDeliveryGate[str] = EarlyDeliveryGate(capacity=1)
    gate.hold(5.0, "x")
    gate.wait_next(now=lambda: 10.0, max_wait=3600.0)
    assert gate.pop_due(now=10.0) == ["x"]


def test_time_to_next_is_until_the_earliest_due_item_capped_by_max_wait() -> None:
    gate: EarlyDeliveryGate[str] = EarlyDeliveryGate(capacity=10)
    assert gate.time_to_next(now=100.0, max_wait=0.5) == 0.5  # nothing held
    gate.hold(150.0, "late")
    gate.hold(120.0, "early")  # held second, due first
    assert gate.time_to_next(now=100.0, max_wait=60.0) == 20.0
    assert gate.time_to_next(now=100.0, max_wait=5.0) == 5.0
    assert gate.time_to_next(now=119.5, max_wait=5.0) == 0.5
    assert gate.time_to_next(now=130.0, max_wait=5.0) == 0.0  # overdue: no wait at all
    assert gate.pop_due(now=130.0) == ["early"]
    assert gate.time_to_next(now=130.0, max_wait=60.0) == 20.0
