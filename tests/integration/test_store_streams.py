"""Streamed reads and pipelined listings: the MetadataStore contract on every backend."""

from __future__ import annotations

from collections.abc import Iterator

from harness.janitor import Backend


def test_get_stream_answers_in_order_keeping_the_keys(backend: Backend) -> None:
    for name in ("one", "two"):
        backend.metadata.create(f"/s/{name}", name.encode())
    asked = [(1, "/s/two"), (2, "/s/missing"), (3, "/s/one"), (4, "/s/two")]
    answered = [
        (key, node.data if node else None) for key, node in backend.metadata.get_stream(asked)
    ]
    assert answered == [(1, b"two"), (2, None), (3, b"one"), (4, b"two")]
    assert list(backend.metadata.get_stream([])) == []


def test_get_stream_draws_its_input_lazily(backend: Backend) -> None:
    """A walk may feed the stream: its input is drawn as reads go, never listed up front."""
    backend.metadata.create("/lazy/a", b"a")
    drawn: list[int] = []

    def walk() -> Iterator[tuple[int, str]]:
        for i in range(5000):
            drawn.append(i)
            yield i, "/lazy/a"

    stream = backend.metadata.get_stream(walk())
    first = next(stream)
    assert first[0] == 0 and first[1] is not None and first[1].data == b"a"
    assert len(drawn) < 5000


def test_get_stream_sees_a_node_created_after_it_started(backend: Backend) -> None:
    """Reads follow the input: what exists when it is read is what the stream answers."""
    backend.metadata.create("/late/first", b"1")

    def walk() -> Iterator[tuple[str, str]]:
        yield "first", "/late/first"
        backend.metadata.create("/late/second", b"2")
        yield "second", "/late/second"

    assert {key for key, node in backend.metadata.get_stream(walk()) if node} == {"first", "second"}


def test_children_many_lists_each_in_order_and_nothing_for_missing(backend: Backend) -> None:
    for path in ("/c/x/2", "/c/x/1", "/c/y/only"):
        backend.metadata.create(path, b"")
    listings = backend.metadata.children_many(["/c/y", "/c/missing", "/c/x"])
    assert listings == [["only"], [], ["1", "2"]]
    assert backend.metadata.children_many([]) == []
