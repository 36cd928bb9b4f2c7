"""workflows/agent_calls.py (agents called as tools) and the worker's refusal of agents
that call each other in a cycle: pure, no Temporal."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest
from durable_agents.activities.registry import AgentRegistry
from durable_agents.client import render
from durable_agents.client.tree import RunNode
from durable_agents.workflows import agent_calls, loop
from durable_agents.workflows.payloads import AgentInput, StatusView
from durable_agents.workflows.run_items import ToolCall, Usage
from durable_agents.workflows.state import RunState, RunStatus

from durable_agents import Agent
from tests.support.multi_agents import lead

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def state_of(depth: int = 0, **fields) -> RunState:
    start = AgentInput(agent="lead", input="go", depth=depth)
    state = loop.new_state(lead.spec(), start, run_id="lead-1", now=NOW)
    return state.model_copy(update=fields)


def call(call_id: str = "c1", arguments: object = None) -> ToolCall:
    shown = json.dumps({"input": "add 2 and 3"} if arguments is None else arguments)
    return ToolCall(call_id=call_id, tool="researcher", arguments=shown)


def test_a_child_id_is_the_callers_id_and_the_call_id_and_never_longer_than_200():
    assert agent_calls.child_id("lead-1", "c1") == "lead-1/c1"
    long_run, long_call = "r" * 190, "c" * 195
    made = agent_calls.child_id(long_run, long_call)
    assert len(made) == 200 and made.startswith("r" * 100) and "/~" in made
    assert made == agent_calls.child_id(long_run, long_call)  # the same on every retry
    assert made != agent_calls.child_id(long_run, long_call + "x")


def test_a_child_starts_one_level_deeper_with_the_task_and_the_context():
    state = state_of(depth=1, context={"tenant": "t1"})
    made = agent_calls.child_input(state, call(), "researcher")
    assert isinstance(made, AgentInput)
    assert (made.agent, made.input, made.context, made.depth) == (
        "researcher",
        "add 2 and 3",
        {"tenant": "t1"},
        2,
    )


def test_a_call_without_exactly_an_input_is_answered_not_run():
    for arguments in ({"query": "x"}, {"input": ""}, {"input": "x", "extra": 1}, "text"):
        made = agent_calls.child_input(state_of(), call(arguments=arguments), "researcher")
        assert isinstance(made, str) and '{"input": "<the task, in full>"}' in made


def test_nesting_and_fan_out_are_refused():
    made = [f"c{n}" for n in range(10)]
    assert agent_calls.refusal(state_of(), call("c1"), made) is None
    deep = state_of(depth=agent_calls.MAX_DEPTH)
    assert "nest at most 4 deep" in (agent_calls.refusal(deep, call("c1"), made) or "")
    ninth = agent_calls.refusal(state_of(), call("c8"), made)
    assert "at most 8 times" in (ninth or "")


def test_a_token_budget_is_shared_between_the_replys_children_and_counts_what_they_used():
    from durable_agents.workflows.run_items import Usage

    budgeted = state_of(token_budget=1_000, usage=Usage(total_tokens=100))
    made = ["c1", "c2", "c3"]
    assert agent_calls.refusal(budgeted, call("c1"), made) is None
    assert agent_calls.budget_share(budgeted, made) == 300
    made_ten = [f"c{n}" for n in range(10)]
    assert agent_calls.budget_share(budgeted, made_ten) == 900 // 8  # only 8 run
    agent_calls.count_spent(budgeted, Usage(total_tokens=250, cost=3.0), 300)
    agent_calls.count_spent(budgeted, None, 300)  # failed: all it was given
    assert budgeted.sub_run_usage == Usage(total_tokens=550)  # no cost: another currency
    assert agent_calls.budget_share(budgeted, made) == (1_000 - 650) // 3
    agent_calls.count_spent(budgeted, Usage(total_tokens=400), 100)  # it overspent: counted
    spent = agent_calls.refusal(budgeted, call("c1"), made)
    assert spent == "this run's token budget is spent"
    priced = state_of(cost_budget=5.0)
    why = agent_calls.refusal(priced, call("c1"), made) or ""
    assert "cost budget" in why and "another currency" in why


def test_a_worker_refuses_agents_that_call_each_other_in_a_cycle():
    ping = Agent(name="ping", instructions="")
    pong = Agent(name="pong", instructions="", tools=[ping.as_tool()])
    ping = dataclasses.replace(ping, tools=[pong.as_tool()])
    assert AgentRegistry([ping, pong]).serving_problem() == (
        "agents call each other as tools in a cycle: ping -> pong -> ping"
    )
    echo = Agent(
        name="echo", instructions="", tools=[Agent(name="echo", instructions="").as_tool()]
    )
    assert "echo -> echo" in (AgentRegistry([echo]).serving_problem() or "")


def test_the_tree_says_which_sub_runs_it_could_not_read():
    view = StatusView(
        status=RunStatus.RUNNING, agent="lead", turn=1, pending_approvals=0, usage=Usage()
    )
    node = RunNode(run_id="lead-1", view=view, pending=[])
    node.unreadable.append(("c1", "lead-1/c1", "the run is still starting\x1b[2J"))
    assert render.tree(node).splitlines() == [
        "lead-1 · lead · running · turn 1",
        "  └ [c1] lead-1/c1 · cannot be read: the run is still starting\\u{1b}[2J",
    ]


def _with_open_call(state: RunState, call_id: str = "c1") -> RunState:
    from durable_agents.workflows.payloads import ModelReply, ModelToolCall

    reply = ModelReply(
        tool_calls=[ModelToolCall(call_id=call_id, tool="researcher", arguments='{"input": "x"}')]
    )
    loop.record_model_reply(state, reply, now=NOW)
    return state


def _child(agent: str = "researcher", depth: int = 0) -> RunState:
    from tests.support.multi_agents import researcher

    start = AgentInput(agent=agent, input="x", depth=depth)
    spec = dataclasses.replace(researcher, name=agent).spec()
    return loop.new_state(spec, start, run_id="old/c1", now=NOW)


def test_a_snapshots_child_is_resumed_once_nested_under_the_run_and_only_as_its_agent():
    from durable_agents.workflows.state import SubRunSnapshot

    state = _with_open_call(state_of(depth=1))
    [call] = state.items[-1].tool_calls  # type: ignore[union-attr]
    assert agent_calls.open_calls(state) == [("c1", "researcher")]
    state.sub_runs = [SubRunSnapshot(call_id="c1", state=_child(depth=0))]
    started = agent_calls.resumed_child(state, call, "researcher")
    assert started is not None and started.resume_from is not None
    assert started.resume_from.depth == 2 and started.depth == 2  # under this run, at 1
    assert state.sub_runs == [] and agent_calls.resumed_child(state, call, "researcher") is None

    state.sub_runs = [SubRunSnapshot(call_id="c1", state=_child(agent="mailer"))]
    assert agent_calls.resumed_child(state, call, "researcher") is None  # another agent's run
    assert state.sub_runs == []
    claiming = _child(agent="admin").model_copy(update={"first_agent": "researcher"})
    state.sub_runs = [SubRunSnapshot(call_id="c1", state=claiming)]  # a snapshot's say
    assert agent_calls.resumed_child(state, call, "researcher") is None


def test_a_resumed_child_has_its_callers_context_and_is_not_paused():
    from durable_agents.workflows.state import Pause, SubRunSnapshot

    state = _with_open_call(state_of()).model_copy(update={"context": {"tenant": "t1"}})
    [call] = state.items[-1].tool_calls  # type: ignore[union-attr]
    child = _child().model_copy(
        update={"context": {"tenant": "victim"}, "paused": Pause(by="x", at=NOW)}
    )
    state.sub_runs = [SubRunSnapshot(call_id="c1", state=child)]
    started = agent_calls.resumed_child(state, call, "researcher")
    assert started is not None and started.resume_from is not None
    assert started.resume_from.context == {"tenant": "t1"} and started.unpause


def test_sub_run_snapshots_of_calls_with_a_result_are_dropped():
    from durable_agents.workflows.run_items import ToolResult
    from durable_agents.workflows.state import SubRunSnapshot

    state = _with_open_call(state_of())
    state.sub_runs = [
        SubRunSnapshot(call_id="c1", state=_child()),
        SubRunSnapshot(call_id="gone", state=_child()),
    ]
    agent_calls.prune_sub_runs(state)
    assert [s.call_id for s in state.sub_runs] == ["c1"]
    state.items.append(ToolResult(call_id="c1", content="rejected", is_error=True))
    agent_calls.prune_sub_runs(state)
    assert state.sub_runs == []


def test_a_snapshot_whose_sub_runs_nest_deeper_than_runs_do_is_refused():
    from durable_agents.workflows.snapshot import SnapshotError, loads

    from tests.support.snapshot_golden import golden_text

    doc = json.loads(golden_text("tree"))
    del doc["integrity"]
    child = doc["sub_runs"][0]["state"]
    nested = child
    for _ in range(agent_calls.MAX_DEPTH):
        nested = {**child, "sub_runs": [{"call_id": "c1", "state": nested}]}
    doc["sub_runs"] = [{"call_id": "c9", "state": nested}]
    with pytest.raises(SnapshotError, match=r"\$\.sub_runs: sub-runs nest at most 4 deep"):
        loads(json.dumps(doc), allow_unverified=True)
    doc["sub_runs"] = [{"call_id": "c9", "state": child}, {"call_id": "c9", "state": child}]
    with pytest.raises(SnapshotError, match="two sub-runs of one call"):
        loads(json.dumps(doc), allow_unverified=True)


def test_a_signed_start_passed_down_is_taken_only_if_it_checks_out_for_the_root():
    from durable_agents.workflows import signed_start

    from tests.support.approver_keys import ALICE, BOB, MALLORY, WORKER_KEYS

    start = {"agent": "vault", "input": "wire 250"}
    signed = ALICE.sign_start(start, workflow_id="root-1", expires_at="2099-01-01T00:00:00Z")
    claim = signed_start.claim_of(signed)
    assert claim is not None
    proof = signed_start.proof(claim)
    assert proof is not None
    took = signed_start.inherited(proof, WORKER_KEYS, root_id="root-1", now=NOW)
    assert took is not None and took.owner == "alice"
    assert signed_start.inherited(proof, WORKER_KEYS, root_id="root-2", now=NOW) is None
    as_bob = proof.model_copy(update={"key_id": BOB.key_id})
    assert signed_start.inherited(as_bob, WORKER_KEYS, root_id="root-1", now=NOW) is None
    edited = proof.model_copy(update={"body": proof.body.replace("250", "999")})
    assert signed_start.inherited(edited, WORKER_KEYS, root_id="root-1", now=NOW) is None
    by_mallory = MALLORY.sign_start(start, workflow_id="root-1", expires_at="2099-01-01T00:00:00Z")
    unknown = signed_start.proof(signed_start.claim_of(by_mallory))  # type: ignore[arg-type]
    assert unknown is not None
    assert signed_start.inherited(unknown, WORKER_KEYS, root_id="root-1", now=NOW) is None
