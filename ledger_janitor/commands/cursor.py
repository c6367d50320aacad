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

from core.errors import ConfigurationError, DecodeError, JanitorError
from cursor.durable.inspection import inspect_cursor
from cursor.durable.json_form import (
    cursor_info_from_json,
    position_info_from_json,
)
from cursor.durable.json_input import parse_cursor_info, parse_position_info
from cursor.errors import AckStateError
from cursor.persistence import chunking
from cursor.wire.compression import compress, compression_type, decompress
from cursor.wire.content import RangeEncoding
from cursor.wire.cursor_info_codec import encode_cursor_info
from cursor.wire.position_info_codec import encode_position_info
from deletion.wire.proto.ml_data_formats_pb2 import CompressionType
from ledger_janitor.commands.console import err
from ledger_janitor.commands.cursor_files import chunk_files, plural, read_entries, written_summary
from ledger_janitor.commands.cursor_inspect import print_inspection
from ledger_janitor.commands.cursor_kinds import Kind, decoded
from ledger_janitor.commands.options import (
    AsJson,
    ConfigFile,
    MetadataStoreOpt,
    Settings,
    Verbose,
    load,
    setup_logging,
)
from ledger_janitor.commands.typer_app import command_group
from ledger_janitor.sidecar.reachability import PROBE_SECONDS, store_unreachable

cursor_app = command_group("Cursor acknowledgment state: decode, encode, inspect.")


class Compression(str, Enum):
    NONE = "NONE"
    LZ4 = "LZ4"
    ZLIB = "ZLIB"
    ZSTD = "ZSTD"
    SNAPPY = "SNAPPY"


KindOpt = Annotated[Kind, typer.Option("--kind", help="Which message the bytes hold.")]

ENCODE_EPILOG = """\b
The JSON is what `cursor decode --json` prints (field names as in Pulsar's .proto); only
markDelete is required for position-info (a cursor-ledger entry), nothing for cursor-info
(the cursor's znode). Acknowledgments in any of three lists, all merged:
  acked                           [[ledgerId, firstEntry, lastEntry], ...]  closed runs
  individualDeletedMessages       [[lowerLedger, lowerEntry, upperLedger, upperEntry], ...]
                                  open-closed MessageRanges, as on the wire
  individualDeletedMessageRanges  [{"key": ledgerId, "values": [int64 words]}, ...]
  batchedEntryDeletionIndexInfo   [{"ledgerId": L, "entryId": E, "deleteSet": [int64 words]}]
  properties {"name": int}; cursor-info also cursorsLedgerId, lastActive, cursorProperties.
Example (position-info):
  {"markDelete": {"ledgerId": 3, "entryId": 9},
   "acked": [[3, 11, 12], [3, 20, 20], [4, 0, 63]],
   "properties": {"a": 2}}
"""


@cursor_app.command()
def decode(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="The entry, or a chunk sequence's entries: the chunks in order, then the "
            "footer; NAME.footer with NAME.0, NAME.1, ... (as encode writes them) are put in "
            "order and other files given beside them are left out.",
            metavar="FILE",
            exists=True,
            dir_okay=False,
        ),
    ],
    kind: KindOpt = Kind.POSITION_INFO,
    as_json: AsJson = False,
) -> None:
    """Bytes to JSON: mark-delete position, ranges, batch indexes, properties."""
    chosen = chunk_files(files)
    for path in chosen.skipped:
        err.print(f"note: left out {path}: not part of the chunk sequence", soft_wrap=True)
    entries = read_entries(chosen.paths)
    where = str(chosen.paths[-1])
    payload = chunking.join(entries)
    plain, compression = decompress(payload, where)
    doc = decoded(kind, plain, where)
    doc["compression"] = CompressionType.Name(compression)
    doc["entries"], doc["bytes"] = len(entries), len(payload)
    if as_json:
        typer.echo(json.dumps(doc))
    else:
        _summary(doc)


@cursor_app.command(epilog=ENCODE_EPILOG)
def encode(
    source: Annotated[
        Path,
        typer.Argument(
            help="The JSON document (see below), or - for stdin.",
            metavar="JSON",
            show_default=False,
        ),
    ],
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
            metavar="BYTES",
            help="Chunk (PIP-381) into OUTPUT.0, OUTPUT.1, ... and OUTPUT.footer, numbered so "
            "that OUTPUT.* lists them in order; a state smaller than this is one entry, OUTPUT.",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print what was written as JSON, every file named.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="List every file written, with its size.")
    ] = False,
) -> None:
    """JSON to the bytes Pulsar stores (a cursor-ledger entry, or the cursor's znode)."""
    name = "stdin" if str(source) == "-" else str(source)
    try:
        text = sys.stdin.buffer.read() if name == "stdin" else source.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read {name}: {exc.strerror}") from None
    if kind is Kind.CURSOR_INFO and ranges is RangeEncoding.LONG_LIST_MAP:
        raise ConfigurationError("ManagedCursorInfo has no LongListMap field")
    try:
        if kind is Kind.CURSOR_INFO:
            plain = encode_cursor_info(cursor_info_from_json(parse_cursor_info(text, name)))
        else:
            doc = parse_position_info(text, name)
            plain = encode_position_info(position_info_from_json(doc, ranges))
    except (AckStateError, DecodeError) as exc:
        message = str(exc)
        raise DecodeError(message if message.startswith(name) else f"{name}: {message}") from None
    payload = _compressed(plain, compression)
    parts = [payload] if max_entry_size is None else chunking.split(payload, max_entry_size)
    names = [output] if len(parts) == 1 else _chunk_names(output, len(parts) - 1)
    for path, part in zip(names, parts, strict=True):
        path.write_bytes(part)
    sizes = [len(part) for part in parts]
    if as_json:
        files = [{"file": str(p), "bytes": n} for p, n in zip(names, sizes, strict=True)]
        typer.echo(json.dumps({"bytes": len(payload), "entries": len(parts), "files": files}))
        return
    typer.echo(written_summary(names, sizes, len(payload), max_entry_size is not None))
    if verbose and len(names) > 1:
        for path, size in zip(names, sizes, strict=True):
            typer.echo(f"  {path}  {size:,} bytes")


@cursor_app.command()
def inspect(
    topic: Annotated[
        str, typer.Argument(help="[persistent://]tenant/namespace/topic", metavar="TOPIC")
    ],
    cursor: Annotated[str, typer.Argument(help="Cursor (subscription) name.", metavar="CURSOR")],
    metadata_store: MetadataStoreOpt = None,
    ledger_store: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="Where the cursor ledger lives: zk:/etcd: (BookKeeper's ledger metadata; the "
            "entries are on the bookies) or sqlite:PATH (the embedded store, entries too); "
            "default: bookkeeperMetadataServiceUri, else the metadata store.",
        ),
    ] = None,
    config_file: ConfigFile = None,
    settings: Settings = None,
    as_json: AsJson = False,
    verbose: Verbose = False,
) -> None:
    """A live cursor: its znode, its ledger's metadata, the state in the ledger when this
    ledger store holds entries, and whether the state reached the cap."""
    setup_logging(verbose)
    config = load(config_file, settings, metadata_store).config
    # Seconds, not the ZooKeeper client's 30 s of retries, to say a store is not there.
    ledgers = ledger_store or config.bookkeeper_metadata_service_uri or config.metadata_store_url
    stores = {ledgers: "the ledger store", config.metadata_store_url: "the metadata store"}
    for url, what in reversed(stores.items()):  # the metadata store first, named so
        problem = store_unreachable(what, url, PROBE_SECONDS)
        if problem is not None:
            raise JanitorError(problem)
    doc = inspect_cursor(config, topic, cursor, ledger_store)
    if as_json:
        typer.echo(json.dumps(doc))
    else:
        print_inspection(doc)


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
            typer.echo(f"{key}: {plural(len(value), 'item')}")
        elif key == "batchedEntryDeletionIndexInfo":
            typer.echo(f"{key}: {plural(len(value), 'batch', 'batches')}")
        else:
            typer.echo(f"{key}: {json.dumps(value)}")
