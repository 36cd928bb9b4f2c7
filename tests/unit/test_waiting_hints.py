"""client/waiting_hints.py without a server: what `agentctl pending` and `approve` say of a
run that has no call for them (the console script's answers: test_cli_waiting_hints.py)."""

from __future__ import annotations

import pytest
from durable_agents.client import waiting_hints
from durable_agents.workflows.payloads import StatusView
from durable_agents.workflows.run_items import Usage
from durable_agents.workflows.state import RunStatus


def view(status: RunStatus, *, paused: bool = False, turn: int = 1) -> StatusView:
    return StatusView(
        status=status, agent="a", turn=turn, pending_approvals=0, usage=Usage(), paused=paused
    )


def test_a_paused_run_says_how_to_let_it_go_on() -> None:
    said = waiting_hints.no_pending("r-1", view(RunStatus.RUNNING, paused=True))
    assert said == "no pending approvals: run r-1 is paused: `agentctl unpause r-1` lets it go on"


@pytest.mark.parametrize(
    "status", [RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.MAX_TURNS_EXCEEDED]
)
def test_an_ended_run_says_how_it_ended(status: RunStatus) -> None:
    said = waiting_hints.where("r-1", view(status, turn=4))
    assert said == f"run r-1 has ended ({status.value}, turn 4)"


def test_a_hostile_run_id_is_shown_inert_in_the_commands_it_suggests() -> None:
    said = waiting_hints.no_pending("x\x1b[2J\u202ey", view(RunStatus.RUNNING))
    assert "\x1b" not in said and "\u202e" not in said
    assert "`agentctl watch x\\u{1b}[2J\\u{202e}y` waits" in said
