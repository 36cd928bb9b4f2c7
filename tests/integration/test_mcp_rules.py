"""A code rule over an MCP server's tools (`MCPServer(needs_approval=FUNCTION)`, issue 45),
against a real MCP server of the `mcp` package over stdio, the dev server, a real worker
and the scripted HTTP model: the rule is asked on the worker about each call of the
server's tools (`context.tool` says which), its verdict is recorded on the call; a call
it waves through runs at once, one it holds waits for a person, one whose rule raises
waits too. Hostile: a worker without the rule, an evaluator on a server."""

from __future__ import annotations

import asyncio

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import DecisionSignal
from durable_agents.workflows.run_items import ToolCall
from durable_agents.workflows.state import RunStatus

from durable_agents import Agent, AgentClient, ApprovalContext, ApprovalPolicy, MCPServer
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.integration.test_mcp_tools import stdio
from tests.support.runs import start, state_of, tool_results, wait_for_status

ASKED: list[tuple[str, dict]] = []


def ticket_rule(arguments: dict, context: ApprovalContext) -> bool:
    """A person approves deleting any ticket but a duplicate (spelt any way); lookups run;
    ticket X breaks the rule."""
    ASKED.append((context.tool, arguments))
    if arguments.get("ticket_id") == "X":
        raise RuntimeError("the ticket index is down")
    if context.tool == "tickets_delete_ticket":
        return "duplicate" not in str(arguments.get("reason", "")).casefold()
    return False


ruled = Agent(
    name="ruled_desk",
    instructions="You handle support tickets.",
    model="test-model",
    mcp_servers=[
        MCPServer(name="tickets", prefix="tickets_", timeout_seconds=10, needs_approval=ticket_rule)
    ],
    max_turns=6,
)


@pytest.fixture(autouse=True)
def asked():
    ASKED.clear()


def _calls(state) -> dict[str, ToolCall]:
    return {c.call_id: c for i in state.items for c in getattr(i, "tool_calls", None) or []}


async def test_a_code_rule_on_an_mcp_server_decides_which_calls_wait(env, model_server, tmp_path):
    effects = tmp_path / "effects.txt"
    model_server.script(
        Reply(
            tool_calls=(
                Call("tickets_lookup_ticket", {"ticket_id": "T1"}, "c1"),
                Call("tickets_delete_ticket", {"ticket_id": "T1", "reason": "DUPLICATE"}, "c2"),
                Call("tickets_delete_ticket", {"ticket_id": "T2", "reason": "angry"}, "c3"),
                Call("tickets_lookup_ticket", {"ticket_id": "X"}, "c4"),
            )
        ),
        Reply(content="done"),
    )
    async with serving(
        env.client, model_server, extra_agents=[ruled], mcp_servers={"tickets": stdio(effects)}
    ) as worker:
        handle = await start(worker, "clean up", agent="ruled_desk")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL, timeout=30)
        state = await state_of(handle)
        calls = _calls(state)
        verdicts = {k: (c.needs_approval, c.rule_verdict) for k, c in calls.items()}
        name = f"{__name__}.ticket_rule"
        assert {k: v.rule for k, (_, v) in verdicts.items()} == dict.fromkeys(calls, name)
        assert {k: needs for k, (needs, _) in verdicts.items()} == {
            "c1": False,  # a lookup: the rule lets it run
            "c2": False,  # a duplicate, however it is spelt
            "c3": True,
            "c4": True,  # the rule raised: a person decides
        }
        assert "the ticket index is down" in verdicts["c4"][1].error
        assert sorted(p.call_id for p in await handle_pending(worker, handle.id)) == ["c3", "c4"]
        assert effects.read_text() == "deleted T1: DUPLICATE\n"  # ran without a person
        await handle.signal(contract.SIGNAL_REJECT, DecisionSignal(call_id="c3", approver="ann"))
        await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="c4", approver="ann"))
        assert (await asyncio.wait_for(handle.result(), 30)).status is RunStatus.COMPLETED
        results = tool_results(await state_of(handle))
        assert results["c3"].is_error and effects.read_text() == "deleted T1: DUPLICATE\n"
        assert sorted(t for t, _ in ASKED) == sorted(
            ["tickets_lookup_ticket", "tickets_delete_ticket"] * 2
        )  # each call asked once, on the worker


async def handle_pending(worker, run_id: str):
    return await AgentClient(worker.client, task_queue=worker.task_queue).pending(run_id)


async def test_a_worker_without_the_rule_asks_a_person(env, model_server, tmp_path):
    """A session whose spec names the rule goes on on a worker whose agent of that name
    has no rule on the server (another build): the call waits for a person."""
    bare = Agent(
        name="ruled_desk",
        instructions="You handle support tickets.",
        model="test-model",
        mcp_servers=[MCPServer(name="tickets", prefix="tickets_", needs_approval=True)],
    )
    effects = tmp_path / "effects.txt"
    connect = {"tickets": stdio(effects)}
    model_server.script(
        Reply(content="hello"),
        Reply(tool_calls=(Call("tickets_lookup_ticket", {"ticket_id": "T9"}, "c9"),)),
    )
    async with serving(env.client, model_server, extra_agents=[ruled], mcp_servers=connect) as a:
        handle = await start(a, "hi", agent="ruled_desk", session=True)
        await wait_for_status(handle, RunStatus.AWAITING_INPUT, timeout=30)
        queue = a.task_queue
    async with serving(
        env.client, model_server, task_queue=queue, extra_agents=[bare], mcp_servers=connect
    ) as b:
        await AgentClient(b.client, task_queue=queue).message(handle.id, "and T9?")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL, timeout=30)
        call = _calls(await state_of(handle))["c9"]
        assert call.needs_approval and call.rule_verdict is not None
        assert call.rule_verdict.rule == f"{__name__}.ticket_rule"
        assert call.rule_verdict.error  # no verdict: why is recorded, a person decides
        assert ASKED == []  # never asked: that worker does not have it
        await handle.terminate("test over")


def test_a_server_refuses_an_evaluator_and_two_rules():
    def other(arguments: dict, context) -> bool:
        return True

    with pytest.raises(ValueError, match="MCP server tickets: its tools take no evaluator"):
        Agent(
            name="x",
            instructions="x",
            mcp_servers=[
                MCPServer(name="tickets", approval=ApprovalPolicy(evaluator=other)),
            ],
        )
    with pytest.raises(ValueError, match="the approval policy names another"):
        MCPServer(name="tickets", needs_approval=ticket_rule, approval=ApprovalPolicy(rule=other))
    with pytest.raises(ValueError, match="must take \\(arguments, context\\)"):
        MCPServer(name="tickets", needs_approval=lambda only: True)
