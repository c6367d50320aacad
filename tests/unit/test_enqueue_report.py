"""`enqueue`'s report: every ledger's fate, and an exit code for all, some or none."""

from __future__ import annotations

import pytest
import typer

from core.errors import EnqueueError
from deletion.domain.topics import TopicName
from ledger_janitor.commands.enqueue_report import PARTIAL_EXIT_CODE, report_enqueued
from ledger_janitor.demo.seeding import pending
from producers.phase_one import Sent

TOPIC = TopicName.parse("public/default/orders")


def test_a_partial_failure_lists_what_was_enqueued_and_exits_3(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sent = [
        Sent(pending(TOPIC, 11), message_id="(13,0,1,-1)"),
        Sent(pending(TOPIC, 12), error="not acknowledged within 30 s"),
    ]
    with pytest.raises(typer.Exit) as exited:
        report_enqueued(sent)
    assert exited.value.exit_code == PARTIAL_EXIT_CODE == 3
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "enqueued MANAGED_LEDGER LEDGER 11 of public/default/orders as (13,0,1,-1)",
        "not enqueued MANAGED_LEDGER LEDGER 12 of public/default/orders: "
        "not acknowledged within 30 s",
    ]
    assert err == "error: 1 of 2 ledgers not enqueued (12): enqueue it again\n"


def test_all_enqueued_is_silent_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    report_enqueued([Sent(pending(TOPIC, 11), message_id="(1,0,0,-1)")])
    out, err = capsys.readouterr()
    assert out.startswith("enqueued MANAGED_LEDGER LEDGER 11") and err == ""


def test_none_enqueued_is_an_error() -> None:
    sent = [Sent(pending(TOPIC, i), error="broker down") for i in (11, 12)]
    with pytest.raises(EnqueueError, match="none of 2 ledgers enqueued: broker down"):
        report_enqueued(sent)
