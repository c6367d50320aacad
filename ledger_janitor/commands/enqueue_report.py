"""What `enqueue` tells: per ledger whether it was enqueued, and an exit code that says
whether all, some or none were.

A command never reports failure for work it did: a ledger whose send was acknowledged is
listed as enqueued even when another one's send failed.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog
import typer

from core.errors import EnqueueError
from deletion.domain.topics import NamespaceName
from ledger_janitor.commands.console import count, plain_console, plural, print_error
from producers.phase_one import Sent

log = structlog.get_logger(__name__)

# 0: every ledger enqueued. 2: none was (the `error:` line says why), as for any error.
PARTIAL_EXIT_CODE = 3  # some enqueued, some not: run `enqueue` again for the ones listed


def report_enqueued(sent: Sequence[Sent]) -> None:
    """Print one line per ledger on stdout; exit 0, 3 (some not enqueued) or 2 (none)."""
    out = plain_console()
    for one in sent:
        if one.enqueued:
            out.print(f"enqueued {one.info.describe()} as {one.message_id}", soft_wrap=True)
        else:
            out.print(f"not enqueued {one.info.describe()}: {one.error}", soft_wrap=True)
    failed = [one for one in sent if not one.enqueued]
    if not failed:
        return
    if len(failed) == len(sent):
        raise EnqueueError(
            f"none of {plural(len(sent), 'ledger')} enqueued: {failed[0].error}"
            if len(sent) > 1
            else f"not enqueued: {failed[0].error}"
        )
    ids = " ".join(str(one.info.ledger_id) for one in failed)
    again = "it" if len(failed) == 1 else "them"
    print_error(
        f"{count(len(failed))} of {plural(len(sent), 'ledger')} not enqueued ({ids}):"
        f" enqueue {again} again"
    )
    raise typer.Exit(PARTIAL_EXIT_CODE)


def warn_if_not_worked(namespace: NamespaceName, worked: Sequence[NamespaceName]) -> None:
    """One warning when deletionNamespaces is set and leaves `namespace` out: a sidecar with
    this configuration does not consume what is enqueued there."""
    if worked and namespace not in worked:
        log.warning(
            f"namespace {namespace} is not in deletionNamespaces "
            f"({', '.join(map(str, worked))}): a sidecar with this configuration does not "
            "work it; its pending deletions wait for one that does"
        )
