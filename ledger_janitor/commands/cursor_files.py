"""The files of `cursor decode` and `cursor encode`: which entries a list of paths holds, and
what was written, said briefly.

`encode --max-entry-size` names a chunk sequence OUTPUT.0, OUTPUT.1, ... OUTPUT.footer. When
the files given to `decode` include one `NAME.footer`, the sequence is NAME.<number> read in
number order, and any other file (`state.json`, matched by the same `state.*` as the chunks)
is left out with a note on stderr. Without such a name, the files are the entries in the
order given, and a file that cannot be one says so, naming the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cursor.errors import ChunkSequenceError
from cursor.persistence.chunking import ChunkFooter

FOOTER_SUFFIX = ".footer"
_CHUNK = re.compile(r"\.([0-9]+)")


@dataclass(frozen=True)
class ChunkFiles:
    paths: list[Path]  # the entries, in order
    skipped: list[Path]  # given, but not part of the sequence


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def chunk_files(paths: list[Path]) -> ChunkFiles:
    footers = [p for p in paths if p.name.endswith(FOOTER_SUFFIX)]
    if len(paths) == 1 or not footers:
        return ChunkFiles(list(paths), [])
    if len({p.name for p in footers}) > 1:
        names = ", ".join(str(p) for p in footers)
        raise ChunkSequenceError(f"several chunk sequences given ({names}): decode one at a time")
    footer = footers[0]
    stem = footer.name[: -len(FOOTER_SUFFIX)]
    numbered: dict[int, Path] = {}
    skipped: list[Path] = []
    for path in paths:
        found = _CHUNK.fullmatch(path.name[len(stem) :]) if path.name.startswith(stem) else None
        if found is not None and path.parent == footer.parent:
            number = int(found.group(1))
            if number in numbered and numbered[number] != path:
                raise ChunkSequenceError(
                    f"{numbered[number]} and {path} are both chunk {number} of {footer}: "
                    "files of two encodes; remove the older ones"
                )
            numbered[number] = path
        elif path != footer:
            skipped.append(path)
    parts = ChunkFooter.parse(footer.read_bytes())
    if parts is None:
        raise ChunkSequenceError(f"{footer}: not a chunk footer ({_footer_shape()})")
    expected = list(range(parts.num_parts))
    if sorted(numbered) != expected:
        chunks = [str(numbered[i]) for i in sorted(numbered)]
        more = f" ... ({len(chunks):,} in all)" if len(chunks) > 4 else ""
        given = ", ".join(chunks[:4]) + more
        raise ChunkSequenceError(
            f"{footer} counts {plural(parts.num_parts, 'chunk')}, {stem}.0 to "
            f"{stem}.{parts.num_parts - 1} (zero-padded alike); given: {given or 'none'}"
        )
    return ChunkFiles([numbered[i] for i in expected] + [footer], skipped)


def read_entries(paths: list[Path]) -> list[bytes]:
    """The entries, each file checked for what it can be: a footer only last of several."""
    entries = [path.read_bytes() for path in paths]
    for index, (path, entry) in enumerate(zip(paths, entries, strict=True)):
        if not entry.startswith(b"{"):  # no protobuf or compressed state starts with '{'
            continue
        footer = _footer(entry)
        if footer is None:
            raise ChunkSequenceError(
                f"{path}: a JSON document, not a cursor entry ({len(entry):,} bytes starting "
                "with '{'); `cursor encode` turns JSON into entries, `decode` reads entries"
            )
        if len(paths) == 1 or index != len(paths) - 1:
            raise ChunkSequenceError(
                f"{path}: a chunk footer, which comes last, after its "
                f"{plural(footer.num_parts, 'chunk')}"
            )
    if len(paths) > 1 and not entries[-1].startswith(b"{"):
        raise ChunkSequenceError(
            f"{paths[-1]}: the last of {len(paths)} files is not a chunk footer "
            f"({_footer_shape()}); give the chunks in order, then the footer"
        )
    return entries


def _footer(entry: bytes) -> ChunkFooter | None:
    try:
        return ChunkFooter.parse(entry)
    except ChunkSequenceError:
        return None


def _footer_shape() -> str:
    return 'expected {"numParts":N,"length":L}'


def written_summary(names: list[Path], sizes: list[int], payload: int, chunking: bool) -> str:
    """One line, however many files: counts, first and last name, bytes."""
    if len(names) == 1:
        unchunked = " (one entry: smaller than --max-entry-size)" if chunking else ""
        return f"wrote {payload:,} bytes to {names[0]}{unchunked}"
    chunks = len(names) - 1
    span = str(names[0]) if chunks == 1 else f"{names[0]} ... {names[chunks - 1]}"
    return (
        f"wrote {payload:,} bytes as {plural(chunks, 'chunk')} ({span}) and a footer "
        f"({names[-1]}): {len(names):,} files, {sum(sizes):,} bytes"
    )
