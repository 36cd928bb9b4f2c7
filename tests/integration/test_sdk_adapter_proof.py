"""The adapter's proof against the real dev server, worker and scripted model: an SDK
function tool with `needs_approval`, approved with the `temporal` CLI (`decide`
update), runs once with a real `ToolContext` carrying the run's context and usage, and
the run's history replays on the workflow code."""

from __future__ import annotations

import json

from agents import Agent as SDKAgent
from agents import RunContextWrapper, function_tool
from agents.tool_context import ToolContext
from durable_agents.workflows import contract
from durable_agents.workflows.state import RunStatus
from pydantic import BaseModel
from temporalio.worker import Replayer

from durable_agents import AgentClient
from durable_agents.gate_interceptor import GateInterceptor
from durable_agents.openai_agents import from_sdk_agent
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.histories import replayed_workflows
from tests.support.runs import temporal_cli, tool_results, wait_for_status

SEEN: list[tuple] = []


class Account(BaseModel):
    customer: str


@function_tool(needs_approval=True)
async def refund(ctx: RunContextWrapper[Account], order_id: str) -> str:
    """Refund an order.

    Args:
        order_id: The order to refund.
    """
    SEEN.append(
        (type(ctx).__name__, ctx.context.customer, ctx.usage.requests, ctx.usage.total_tokens)
    )
    return f"Refunded {order_id} for {ctx.context.customer}"


refunds = from_sdk_agent(
    SDKAgent(name="sdk_refunds", instructions="Refund orders.", tools=[refund]),
    context_type=Account,
)


async def test_an_sdk_tool_approved_from_the_temporal_cli_runs_once_and_the_run_replays(
    env, model_server
):
    SEEN.clear()
    model_server.script(
        Reply(tool_calls=(Call("refund", {"order_id": "o-1"}, "r1"),), usage=(100, 20)),
        Reply(content="Refunded."),
    )
    async with serving(env.client, model_server, extra_agents=[refunds]) as worker:
        client = AgentClient(worker.client, task_queue=worker.task_queue)
        run_id = (await client.start("sdk_refunds", "refund o-1", context={"customer": "Ann"})).id
        handle = worker.client.get_workflow_handle(run_id)
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        assert SEEN == []
        decided = await temporal_cli(
            worker,
            "workflow",
            "update",
            "execute",
            "--workflow-id",
            run_id,
            "--name",
            contract.UPDATE_DECIDE,
            "--input",
            json.dumps({"call_id": "r1", "decision": "approve", "approver": "ann"}),
        )
        assert "ann" in decided  # the recorded decision, as the update returns it
        result = await client.result(run_id)
        state = await client.state(run_id)
        history = await handle.fetch_history()
    assert result.status is RunStatus.COMPLETED
    assert SEEN == [(ToolContext.__name__, "Ann", 1, 120)]  # once, with the run's usage
    assert tool_results(state)["r1"].content == "Refunded o-1 for Ann"
    [decision] = [d for d in state.items if getattr(d, "type", "") == "decision"]
    assert (decision.approver, decision.via) == ("ann", "update")
    replayer = Replayer(
        workflows=replayed_workflows(),
        interceptors=[GateInterceptor(None)],
        data_converter=worker.client.data_converter,
    )
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert replayed.replay_failure is None
