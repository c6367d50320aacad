"""`cursor inspect` for people: a few lines, the whole report under --json."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import typer

from ledger_janitor.commands.cursor_files import plural


def print_inspection(doc: dict[str, Any]) -> None:
    znode = doc["znode"]
    typer.echo(f"cursor {doc['cursor']} on {doc['topic']}: znode {doc['path']} v{doc['version']}")
    typer.echo(f"  cursorsLedgerId: {znode['cursorsLedgerId']}")
    typer.echo(f"  markDelete: {_position(znode['markDelete'])}")
    inline = znode["rangeCount"]
    typer.echo(f"  inline ranges: {plural(inline, 'range')} ({plural(len(znode['acked']), 'run')})")
    typer.echo(f"  properties: {json.dumps(znode['properties'])}")
    if znode["cursorProperties"]:
        typer.echo(f"  cursorProperties: {json.dumps(znode['cursorProperties'])}")
    typer.echo(f"  lastActive: {_time(znode['lastActive'])}")
    ledger = doc["ledger"]
    if ledger is None:
        typer.echo("ledger: none (the cursor keeps its state in the znode)")
    else:
        _print_ledger(ledger)
    state = doc["state"]
    if state is not None:
        typer.echo(
            f"state: markDelete {state['markDelete']}, {plural(state['rangeCount'], 'range')} "
            f"over {plural(state['ledgers'], 'ledger')}, "
            f"{plural(state['batches'], 'batch', 'batches')}, "
            f"properties {json.dumps(state['properties'])}"
        )
    cap = doc["cap"]
    if cap["atCap"] is None:
        typer.echo("cap: unknown (the state is in the ledger, not read here)")
        return
    reached = "reached" if cap["atCap"] else "below"
    pause = (
        ", dispatch paused (PIP-299)"
        if cap["atCap"] and cap["pauseOnAckStatePersistentEnabled"]
        else ""
    )
    typer.echo(
        f"cap: {reached} ({cap['rangeCount']:,} of {cap['maxUnackedRangesToPersist']:,} "
        f"ranges in the {cap['of']}){pause}"
    )


def _print_ledger(ledger: dict[str, Any]) -> None:
    meta = ledger["metadata"]
    typer.echo(f"ledger {ledger['ledgerId']}:")
    if meta is not None and "undecodable" in meta:
        typer.echo(f"  metadata: {meta['undecodable']}")
    elif meta is not None and "state" in meta:
        digest = "" if meta["digestType"] is None else f", digest {meta['digestType']}"
        typer.echo(
            f"  {meta['state']}, ensemble {meta['ensembleSize']}, write quorum "
            f"{meta['writeQuorumSize']}, ack quorum {meta['ackQuorumSize']}{digest}"
        )
        end = meta["lastEntryId"]
        if end is None:
            end = "not recorded" if meta["state"] == "CLOSED" else "known to its writer only"
        length = "" if meta["length"] is None else f", {meta['length']:,} bytes"
        typer.echo(f"  last entry: {end}{length}")
        for ensemble in meta["ensembles"]:
            bookies = ", ".join(ensemble["bookies"])
            typer.echo(f"  from entry {ensemble['firstEntryId']}: {bookies}")
    if meta is not None and "ctime" in meta:
        typer.echo(f"  created: {_time(meta['ctime'])}")
        for key, value in meta["customMetadata"].items():
            typer.echo(f"  {key}: {value}")
    if "stateEntryId" in ledger:
        typer.echo(
            f"  state at entry {ledger['stateEntryId']} of {ledger['lastEntryId'] + 1} "
            f"({ledger['layout']}; {plural(ledger['entriesAfterState'], 'entry', 'entries')} "
            "after it without a complete state)"
        )
    if ledger.get("why"):
        typer.echo(f"  {ledger['why']}")


def _position(position: dict[str, int] | None) -> str:
    return "none" if position is None else f"{position['ledgerId']}:{position['entryId']}"


def _time(ms: int | None) -> str:
    if ms is None:
        return "unknown"
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
