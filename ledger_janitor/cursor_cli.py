"""`ledger-janitor cursor ...`: decode, encode and inspect cursor state.

Mounted by the main CLI with `app.add_typer(cursor_app, name="cursor")`.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from config import CONFIG_FILE_ENV
from core.errors import ConfigurationError
from cursor.durable.inspection import inspect_cursor
from cursor.durable.json_form import (
    cursor_info_from_json,
    cursor_info_json,
    position_info_from_json,
    position_info_json,
)
from cursor.persistence import chunking
from cursor.wire.compression import compress, compression_type, decompress
from cursor.wire.content import RangeEncoding
from cursor.wire.cursor_info_codec import decode_cursor_info, encode_cursor_info
from cursor.wire.position_info_codec import decode_position_info, encode_position_info
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType
from ledger_janitor.cli_options import load
from ledger_janitor.typer_app import command_group

cursor_app = command_group("Cursor acknowledgment state: decode, encode, inspect.")


class Kind(str, Enum):
    POSITION_INFO = "position-info"
    CURSOR_INFO = "cursor-info"


class Compression(str, Enum):
    NONE = "NONE"
    LZ4 = "LZ4"
    ZLIB = "ZLIB"
    ZSTD = "ZSTD"
    SNAPPY = "SNAPPY"


KindOpt = Annotated[Kind, typer.Option("--kind", help="Which message the bytes hold.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]


@cursor_app.command()
def decode(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="The entry, or a chunk sequence's entries in order (chunks, then footer).",
            exists=True,
            dir_okay=False,
        ),
    ],
    kind: KindOpt = Kind.POSITION_INFO,
    as_json: AsJson = False,
) -> None:
    """Bytes to JSON: mark-delete position, ranges, batch indexes, properties."""
    entries = [path.read_bytes() for path in files]
    payload = chunking.join(entries)
    plain, compression = decompress(payload, str(files[-1]))
    if kind is Kind.POSITION_INFO:
        doc = position_info_json(decode_position_info(plain, str(files[-1])))
    else:
        doc = cursor_info_json(decode_cursor_info(plain, str(files[-1])))
    doc["compression"] = CompressionType.Name(compression)
    doc["entries"], doc["bytes"] = len(entries), len(payload)
    if as_json:
        typer.echo(json.dumps(doc))
    else:
        _summary(doc)


@cursor_app.command()
def encode(
    source: Annotated[Path, typer.Argument(help="A JSON document as `decode --json` prints.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the bytes.")],
    kind: KindOpt = Kind.POSITION_INFO,
    ranges: Annotated[
        RangeEncoding, typer.Option("--ranges", help="How individual acks are written.")
    ] = RangeEncoding.MESSAGE_RANGE,
    compression: Annotated[
        Compression, typer.Option("--compression", help="cursorInfoCompressionType.")
    ] = Compression.NONE,
    max_entry_size: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Chunk (PIP-381) into OUTPUT.0, OUTPUT.1, ... and OUTPUT.footer, numbered so "
            "that OUTPUT.* lists them in order.",
        ),
    ] = None,
) -> None:
    """JSON to the bytes Pulsar stores (a cursor-ledger entry, or the cursor's znode)."""
    text = sys.stdin.read() if str(source) == "-" else source.read_text()
    doc = json.loads(text)
    if kind is Kind.CURSOR_INFO:
        if ranges is RangeEncoding.LONG_LIST_MAP:
            raise ConfigurationError("ManagedCursorInfo has no LongListMap field")
        plain = encode_cursor_info(cursor_info_from_json(doc))
    else:
        plain = encode_position_info(position_info_from_json(doc, ranges))
    payload = _compressed(plain, compression)
    if max_entry_size is None:
        output.write_bytes(payload)
        typer.echo(f"wrote {len(payload)} bytes to {output}")
        return
    parts = chunking.split(payload, max_entry_size)
    names = [output] if len(parts) == 1 else _chunk_names(output, len(parts) - 1)
    for name, part in zip(names, parts, strict=True):
        name.write_bytes(part)
    typer.echo(f"wrote {len(payload)} bytes as {len(parts)} entries: {' '.join(map(str, names))}")


@cursor_app.command()
def inspect(
    topic: Annotated[str, typer.Argument(help="[persistent://]tenant/namespace/topic")],
    cursor: Annotated[str, typer.Argument(help="Cursor (subscription) name.")],
    metadata_store: Annotated[
        str | None, typer.Option("--metadata-store", help="metadataStoreUrl.")
    ] = None,
    ledger_store: Annotated[
        str | None,
        typer.Option(
            help="Where cursor-ledger entries live (sqlite:PATH); default: the "
            "bookkeeperMetadataServiceUri, else the metadata store."
        ),
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option("--config", "-c", envvar=CONFIG_FILE_ENV, show_default=False)
    ] = None,
    settings: Annotated[list[str] | None, typer.Option("--set", "-s", metavar="KEY=VALUE")] = None,
    as_json: AsJson = False,
) -> None:
    """A live cursor: its znode, the state in its ledger, and whether it reached the cap."""
    config = load(config_file, settings, metadata_store).config
    doc = inspect_cursor(config, topic, cursor, ledger_store)
    if as_json:
        typer.echo(json.dumps(doc))
    else:
        _summary(doc)


def _compressed(plain: bytes, compression: Compression) -> bytes:
    return compress(plain, compression_type(compression.value))


def _chunk_names(output: Path, chunks: int) -> list[Path]:
    # Zero-padded, so that `cursor decode OUTPUT.*` reads them in order, the footer last.
    width = len(str(chunks - 1))
    suffixes = [f".{i:0{width}d}" for i in range(chunks)] + [".footer"]
    return [output.with_name(output.name + suffix) for suffix in suffixes]


def _summary(doc: dict[str, Any]) -> None:
    """The headline figures, one per line; the full detail is in --json."""
    for key, value in doc.items():
        if key in ("individualDeletedMessages", "individualDeletedMessageRanges", "acked"):
            typer.echo(f"{key}: {len(value)} items")
        elif key == "batchedEntryDeletionIndexInfo":
            typer.echo(f"{key}: {len(value)} batches")
        else:
            typer.echo(f"{key}: {json.dumps(value)}")
