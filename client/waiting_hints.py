"""What agentctl says when a run has no call for the command: where the run is, and
what to type next. Right after `agentctl start` the model is usually still answering,
so `pending` finds nothing and `approve r1` finds no call r1; a bare "no pending
approvals" there sends a newcomer looking for a bug."""

from __future__ import annotations

from durable_agents.client import render
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows.payloads import StatusView
from durable_agents.workflows.state import RunStatus

WAITS_FOR_INPUT = (RunStatus.AWAITING_INPUT,)
STILL_WORKING = (RunStatus.RUNNING, RunStatus.AWAITING_APPROVAL)


def where(run_id: str, status: StatusView) -> str:
    """`run my-run is running: the model or a tool is still at work; ...`: where the run
    is, and the command that waits for it or moves it on."""
    run = render.safe(run_id)
    said = f"run {run} is {status.status.value}"
    if status.paused:
        return f"run {run} is paused: `agentctl unpause {run}` lets it go on"
    if status.status in STILL_WORKING:
        return (
            f"{said}: the model or a tool is still at work; `agentctl watch {run}` waits "
            "until the run needs a decision"
        )
    if status.status in WAITS_FOR_INPUT:
        return f"{said}: it waits for a message (`agentctl message {run} TEXT`)"
    return f"run {run} has ended ({status.status.value}, turn {status.turn})"


def no_pending(run_id: str, status: StatusView) -> str:
    """`agentctl pending RUN_ID` when nothing waits for a decision."""
    return f"no pending approvals: {where(run_id, status)}"


async def not_pending(agents: AgentClient, run_id: str) -> str:
    """Why a decision names a call that does not wait in `run_id`: the calls that do
    wait there, or where the run is."""
    run = render.safe(run_id)
    waiting = [render.safe(p.call_id) for p in await agents.pending(run_id)]
    if waiting:
        return (
            f"it is not pending in run {run}; waiting there: {', '.join(waiting[:10])} "
            f"(`agentctl pending {run}` shows them)"
        )
    return f"it is not pending in run {run}: {where(run_id, await agents.status(run_id))}"
