"""Record a release's workflow histories: `python -m tests.support.record_histories`.

One history per capability that changes what a run writes (`KEPT`), recorded from
the build being released into that release's folder (`tests/histories/<release>/`,
`histories.RELEASE`) once, and never edited: CI replays every release's folder, so a
later change that alters what a run of that release writes needs a
`workflow.patched` (workflows/patches.py). Only histories the folder lacks are
recorded; an existing file is never overwritten.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from durable_agents.activities.registry import AgentRegistry
from durable_agents.client import events
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.state_reader import querying, read_state
from durable_agents.workflows import agent_calls, contract, search_attributes, short_ids
from durable_agents.workflows.payloads import (
    AgentInput,
    AnswerSignal,
    DecisionSignal,
    EndSessionSignal,
    MessageSignal,
    PauseSignal,
    ResumeSignal,
)
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.signed_decisions import arguments_sha256
from durable_agents.workflows.state import RunState
from openai import AsyncOpenAI
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agents import gate
from durable_agents.mcp_connections import MCPConnection
from durable_agents.testing import Call, Reply, ScriptedModelServer
from durable_agents.webhooks import Endpoint
from durable_agents.worker import build_worker
from tests.support.agents import assistant
from tests.support.answer_agents import ANSWER_AGENTS
from tests.support.approver_keys import ALICE, BOB, WORKER_TRUST
from tests.support.dev_servers import local_server
from tests.support.histories import (
    HISTORIES,
    RESULT_IN_NEXT_TASK,
    after_local_tool,
)
from tests.support.mcp_agents import backoffice, frontdesk, helpdesk
from tests.support.multi_agents import AGENT_TOOL_AGENTS, HANDOFF_AGENTS, by_model
from tests.support.native_agents import NATIVE_AGENTS
from tests.support.once_agents import once_carried
from tests.support.placed_agents import placed
from tests.support.priced_agents import PRICES
from tests.support.rule_agents import ruled
from tests.support.sdk_guardrail_agents import polite_desk
from tests.support.steer_agents import STEER_AGENTS
from tests.support.webhook_receiver import WebhookReceiver

CANCEL = "(cancel the run)"
"""An action that cancels the run instead of signalling it."""


class Several:
    """A signal sent with more than one argument."""

    def __init__(self, *args: object) -> None:
        self.args = list(args)


AWAITING = "awaiting_approval"
SAME_MAIL = {"to": "a", "body": "same"}


LOOKUP_AND_MAIL = Reply(
    tool_calls=(
        Call("lookup", {"key": "B7"}, "l1"),
        Call("send_email", {"to": "ann", "body": "B7 in transit"}, "e1"),
    )
)
"""A local tool's call beside one that waits for approval."""

RECEIPT = [
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What does this receipt say?"},
            {"type": "input_image", "image_url": "https://example.com/receipt.png"},
        ],
    }
]
"""A session's message given as an input list."""


SCENARIOS = {
    # issue 45: a code rule's verdicts (Oakland asks, Paris does not) and the policy's
    # evaluator approving the Oakland call within its limits.
    "approval_rules": (
        "ruled",
        False,
        [
            Reply(
                tool_calls=(
                    Call("get_weather", {"city": "Oakland, USA"}, "w1"),
                    Call("get_weather", {"city": "Paris"}, "w2"),
                )
            ),
            Reply("foggy in Oakland, sunny in Paris"),
        ],
        [],
    ),
    # at-most-once tools (issue 45): a call runs once (stamped as it starts), another runs
    # past its timeout and is answered interrupted; the run continues as new with both.
    "at_most_once": (
        "once_carried",
        False,
        [
            Reply(tool_calls=(Call("add_once", {"a": 1, "b": 2}, "a1"),)),
            Reply(tool_calls=(Call("stall_once", {}, "s1"),)),
            Reply("done"),
        ],
        [],
    ),
    # issue 46: instructions a function gives, asked before each model call (greeter's,
    # then, after a handoff, parting's async one): the text recorded with each reply.
    "dynamic_instructions": (
        "greeter",
        False,
        [
            Reply(tool_calls=(Call("find_passenger", {"reference": "QX7Z"}, "f1"),)),
            Reply(tool_calls=(Call("transfer_to_parting", {}, "h1"),)),
            Reply("goodbye"),
        ],
        [],
    ),
    # issue 46: tools that change the run's context (one in place, one replacing it, one
    # refused as too large), read back by the instructions function of the next call.
    "context_updates": (
        "cabin",
        False,
        [
            Reply(tool_calls=(Call("change_seat", {"new_seat": "12A"}, "c1"),)),
            Reply(
                tool_calls=(
                    Call("add_note", {"note": "vegetarian", "copies": 1}, "n1"),
                    Call("add_note", {"note": "x" * 100, "copies": 400}, "n2"),
                )
            ),
            Reply("seated"),
        ],
        [],
    ),
    # issue 46: handoff hooks: one that raises (the handoff not taken), one that sets the
    # context before the run goes on with the cabin.
    "handoff_hooks": (
        "boarding",
        False,
        [
            Reply(tool_calls=(Call("transfer_to_upgrades", {"reason": "free"}, "h1"),)),
            Reply(tool_calls=(Call("transfer_to_cabin", {}, "h2"),)),
            Reply("aboard"),
        ],
        [],
    ),
    # issue 46: an input filter in code: the lounge hands over to quiet, who is sent
    # only the user's messages (the run records what the filter left out).
    "input_filter": (
        "lounge",
        False,
        [
            Reply(tool_calls=(Call("find_passenger", {"reference": "QX7Z"}, "f1"),)),
            Reply(tool_calls=(Call("transfer_to_quiet", {}, "h1"),)),
            Reply("brief"),
        ],
        [],
    ),
    # v45: a local tool (local-tools, schema 1.29): the lookup runs as a local activity.
    "local_tool": (
        "quick",
        False,
        [Reply(tool_calls=(Call("lookup", {"key": "A12"}, "l1"),)), Reply("delivered")],
        [],
    ),
    # v32: handoffs (schema 1.21): triage hands the run over to billing (a reason with
    # it), whose refund waits for an approval; billing continues as new after its turn.
    "handoff": (
        "triage",
        False,
        [
            Reply(tool_calls=(Call("transfer_to_billing", {"reason": "a refund"}, "h1"),)),
            Reply(tool_calls=(Call("refund", {"order": "A12", "amount": 40}, "r1"),)),
            Reply("refunded"),
        ],
        [(AWAITING, contract.SIGNAL_APPROVE, DecisionSignal(call_id="r1", approver="ann"))],
    ),
    # v29: token streaming (schema 1.19): a streamed tool call and a streamed answer whose
    # first attempt breaks off (its deltas, then `model_retry` and the second attempt's).
    "streaming": (
        "streamer",
        False,
        [
            Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "c1"),), chunk_chars=3),
            Reply("the sum is three", cut_after_chunks=3, chunk_delay_seconds=0.3),
            Reply("the sum is three", chunk_chars=5),
        ],
        [],
    ),
    # v28: run events (run-events): a follower polls the run's event stream while it
    # runs, continues as new (the log carried over) and waits for an approval; a forged
    # stream publish is refused.
    "run_events": (
        "concierge",
        False,
        [
            Reply(tool_calls=(Call("add", {"a": 1, "b": 1}, "c1"),)),
            Reply(tool_calls=(Call("add", {"a": 2, "b": 2}, "c2"),)),
            Reply(tool_calls=(Call("send_email", {"to": "a", "body": "b"}, "c3"),)),
            Reply("sent"),
        ],
        [
            (AWAITING, contract.STREAM_PUBLISH_SIGNAL, {"items": [], "publisher_id": "x"}),
            (AWAITING, contract.SIGNAL_APPROVE, DecisionSignal(call_id="c3", approver="ann")),
        ],
    ),
    # v27: a run with webhooks (schema 1.18): approval requested, decided, run finished,
    # each a delivery workflow started by the run, and their reports.
    "webhooks": (
        "assistant",
        False,
        [Reply(tool_calls=(Call("send_email", {"to": "a", "body": "b"}, "c1"),)), Reply("sent")],
        [(AWAITING, contract.SIGNAL_APPROVE, DecisionSignal(call_id="c1", approver="ann"))],
    ),
    # v23: an agent with MCP tools (mcp-tools): listed at start; the read-only one runs,
    # the destructive one waits for approval and runs once approved.
    "mcp_tools": (
        "helpdesk",
        False,
        [
            Reply(
                tool_calls=(
                    Call("tickets_lookup_ticket", {"ticket_id": "T1"}, "c1"),
                    Call("tickets_delete_ticket", {"ticket_id": "T1", "reason": "dup"}, "c2"),
                )
            ),
            Reply("done"),
        ],
        [(AWAITING, contract.SIGNAL_APPROVE, DecisionSignal(call_id="c2", approver="ann"))],
    ),
    # name: (agent, session, model script, [(status to wait for, signal, payload)])
    # approve with `always` (a later call with the same arguments runs without asking),
    # reject another, and a call of a tool the agent does not have
    "approvals": (
        "assistant",
        False,
        [
            Reply(
                tool_calls=(
                    Call("add", {"a": 1, "b": 2}, "c1"),
                    Call("send_email", SAME_MAIL, "c2"),
                )
            ),
            Reply(
                tool_calls=(
                    Call("send_email", SAME_MAIL, "c3"),
                    Call("send_email", {"to": "b", "body": "other"}, "c4"),
                    Call("teleport", {}, "c5"),
                )
            ),
            Reply(content="all done"),
        ],
        [
            (
                AWAITING,
                contract.SIGNAL_APPROVE,
                DecisionSignal(call_id="c2", approver="ann", always=True),
            ),
            # c4 waiting (a "running" between the turns is too short to poll for)
            ("pending:c4", contract.SIGNAL_REJECT, DecisionSignal(call_id="c4", approver="ann")),
        ],
    ),
    # an external tool's question answered by the `answer` signal, naming the call by
    # its short id (answers, short ids)
    "answers": (
        "questioner",
        False,
        [
            Reply(tool_calls=(Call("ask_refund", {"order_id": "o-1"}, "c1"),)),
            Reply(content="refunded"),
        ],
        [
            (
                AWAITING,
                contract.SIGNAL_ANSWER,
                AnswerSignal(
                    call_id=short_ids.derive("history-answers", "c1"),
                    approver="ann",
                    result={"account": "ACC-1", "amount": 12.5},
                ),
            )
        ],
    ),
    # v7: a run cancelled while its model call is in flight ends cancelled
    # (cancel-during-model-call).
    "cancel_during_model_call": (
        "assistant",
        False,
        [Reply(content="too late", delay_seconds=3)],
        [("running", CANCEL, None)],
    ),
    # v12: structured output (structured-output): a final reply that is not a valid
    # RefundDecision goes back to the model with the error, the next one is the output.
    "structured_output": (
        "decider",
        False,
        [
            Reply(content='{"approve": "maybe", "amount": 1}'),
            Reply(content='{"approve": true, "amount": 1, "reason": null}'),
        ],
        [],
    ),
    "guardrail_tripped": (
        "guarded",
        False,
        [Reply(content='{"approve": true, "amount": 5000, "reason": null}')],
        [],
    ),
    # v19: pause and resume (pause-resume): paused while a call awaits approval, the
    # approval arrives while paused (recorded, not acted on), resumed: the tool runs.
    "pause_resume": (
        "assistant",
        False,
        [Reply(tool_calls=(Call("send_email", {"to": "a", "body": "b"}, "c1"),)), Reply("ok")],
        [
            (AWAITING, contract.SIGNAL_PAUSE, PauseSignal(by="oncall", reason="look")),
            ("paused", contract.SIGNAL_APPROVE, DecisionSignal(call_id="c1", approver="ann")),
            ("paused", contract.SIGNAL_RESUME, ResumeSignal(by="oncall")),
        ],
    ),
    # v2: both workflow runs of a session that continues as new with an approval
    # pending (decided in the second run).
    "continue_as_new": (
        "concierge",
        True,
        [
            Reply(content="a"),
            Reply(tool_calls=(Call("send_email", {"to": "bob", "body": "x"}, "c1"),)),
            Reply(content="sent"),
        ],
        [
            ("awaiting_input", contract.SIGNAL_SEND_MESSAGE, MessageSignal(content="email bob")),
            (AWAITING, contract.SIGNAL_APPROVE, DecisionSignal(call_id="c1", approver="ann")),
            ("awaiting_input", contract.SIGNAL_END_SESSION, EndSessionSignal()),
        ],
    ),
    # an OpenAI Agents SDK agent through `from_sdk_agent`: its input guardrail runs an
    # SDK agent (counted) and refuses; the session goes on with a message given as an
    # input list (text and an image), which passes and is answered.
    "sdk_guardrail_refused": (
        "sdk_polite",
        True,
        [
            Reply(content='{"reasoning": "algebra", "is_math_homework": true}'),
            Reply(content='{"reasoning": "a receipt", "is_math_homework": false}'),
            Reply(content="A receipt for 12 dollars."),
        ],
        [
            ("awaiting_input", contract.SIGNAL_SEND_MESSAGE, MessageSignal(content=RECEIPT)),
            ("turn:2", contract.SIGNAL_END_SESSION, EndSessionSignal()),
        ],
    ),
}


def _path(name: str, run: int, runs: int) -> Path:
    return HISTORIES / (f"{name}.json" if runs == 1 else f"{name}.run{run}.json")


async def _save(client: Client, name: str, handle) -> None:
    """Write every workflow run of `handle`'s chain, oldest first (never overwriting)."""
    runs = (await get_state(handle)).workflow_runs
    histories = [
        await client.get_workflow_handle(handle.id, run_id=r).fetch_history() for r in runs
    ]
    for number, history in enumerate(histories, start=1):
        path = _path(name, number, len(histories))
        if path.exists():
            sys.exit(f"{path} exists: recorded histories are never overwritten")
        path.write_text(history.to_json())
        print(f"recorded {path} ({len(history.events)} events)")


async def _save_child(client: Client, name: str, handle, call_id: str) -> None:
    """Write the history of the child run of `handle`'s call `call_id` (an agent called
    as a tool) as `<name>__<call_id>.json` (never overwriting)."""
    path = HISTORIES / f"{name}__{call_id}.json"
    if path.exists():
        sys.exit(f"{path} exists: recorded histories are never overwritten")
    child_id = agent_calls.child_of(await get_state(handle), call_id)
    assert child_id is not None, f"{handle.id} started no child for {call_id}"
    child = client.get_workflow_handle(child_id)
    path.write_text((await child.fetch_history()).to_json())
    print(f"recorded {path}")


async def get_state(handle) -> RunState:
    return await read_state(querying(handle))


@asynccontextmanager
async def _serving(
    client: Client, name: str, script: list, responder: Callable[[dict], object] | None = None
) -> AsyncIterator[str]:
    with ScriptedModelServer() as server:
        server.script(*script)
        if responder is not None:  # runs that go at once: each model its own replies
            server.responder = responder
        model = AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        registry = AgentRegistry.from_modules(
            ["tests.support.agents", "tests.support.priced_agents"]
        )
        registry.add(helpdesk)  # MCP tools, from the tests' MCP server over stdio
        registry.add(frontdesk)  # helpdesk's MCP tools and a handoff to backoffice
        registry.add(backoffice)
        registry.add(placed)  # a tool on a task queue of its own
        registry.add(ruled)  # a code rule and an evaluator
        registry.add(once_carried)  # tools that run at most once
        agents = [*HANDOFF_AGENTS, *AGENT_TOOL_AGENTS, *STEER_AGENTS, *ANSWER_AGENTS]
        for agent in [*agents, *NATIVE_AGENTS]:
            registry.add(agent)
        registry.add(dataclasses.replace(assistant, name="streamer", stream=True))
        registry.add(polite_desk)  # an OpenAI Agents SDK agent with a guardrail agent
        mcp = {"tickets": MCPConnection(command=(sys.executable, "-m", "tests.support.mcp_server"))}
        with WebhookReceiver(HOOK_SECRET) as receiver:
            hooks = {"approvals": _hook(receiver.url)} if name.startswith("webhooks") else {}
            worker = build_worker(
                client,
                registry=registry,
                model_client=model,
                task_queue=f"record-{name}",
                trust=WORKER_TRUST,
                prices=PRICES,
                mcp_servers=mcp,
                webhook_endpoints=hooks,
            )
            async with worker:
                yield f"record-{name}"


HOOK_SECRET = "whsec_" + "cmVjb3JkZWQtaGlzdG9yeS1zZWNyZXQtMDEyMzQ1"


def _hook(url: str) -> Endpoint:
    events = ("approval_requested", "approval_decided", "run_finished")
    return Endpoint(name="approvals", url=url, events=events, secrets=(HOOK_SECRET,))


async def _reached(handle, status: str) -> bool:
    """The run is in `status`, or (`pending:CALL_ID`) that call waits for a decision."""
    if status.startswith("pending:"):
        pending = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
        return any(p.get("call_id") == status.removeprefix("pending:") for p in pending)
    if status.startswith("turn:"):  # a session has answered that many turns
        view = await handle.query(contract.QUERY_GET_STATUS)
        return view.get("status") == "awaiting_input" and view.get("turn") >= int(status[5:])
    return (await handle.query(contract.QUERY_GET_STATUS)).get("status") == status


async def _act(handle, actions: list) -> None:
    for status, signal_name, payload in actions:
        while not await _reached(handle, status):
            await asyncio.sleep(0.1)
        if signal_name is CANCEL:
            await asyncio.sleep(0.5)  # into the model call
            await handle.cancel()
        elif isinstance(payload, Several):
            await handle.signal(signal_name, args=payload.args)
        else:
            await handle.signal(signal_name, payload)
    try:
        await handle.result()
    except WorkflowFailureError:
        pass


async def _follow(client: Client, run_id: str) -> None:
    """Follow the run's events until it finishes (its polls enter the history)."""
    async for event in events.follow(client, run_id):
        print(f"  event {event['seq']} {event['type']}")


async def record(
    client: Client, name: str, agent: str, session: bool, script: list, actions: list
) -> None:
    async with _serving(client, name, script) as task_queue:
        handle = await client.start_workflow(
            contract.WORKFLOW_TYPE,
            AgentInput(
                agent=agent,
                input="go",
                session=session,
            ),
            id=f"history-{name}",
            task_queue=task_queue,
        )
        followed = "events" in name or "streaming" in name
        follower = asyncio.create_task(_follow(client, handle.id)) if followed else None
        await _act(handle, actions)
        if follower is not None:
            await asyncio.wait_for(follower, timeout=30)
        await _save(client, name, handle)
        if name.startswith("webhooks"):  # and the first delivery's own workflow
            first = (await get_state(handle)).webhook_deliveries[0]
            assert first.workflow_id is not None  # the id the run started it under
            child = client.get_workflow_handle(first.workflow_id)
            await child.result()
            path = HISTORIES / "webhook_delivery.json"
            if path.exists():
                sys.exit(f"{path} exists: recorded histories are never overwritten")
            path.write_text((await child.fetch_history()).to_json())
            print(f"recorded {path}")


IBAN = {"iban": "DE89370400440532013000", "amount": 250}


async def record_signed_start(client: Client, name: str) -> None:
    """v11: a run bound to its execution (execution-bound-decisions), started with
    alice's signed start, of a tool that separates duties and hides the account
    number: alice's signed approval is refused (she started the run), bob's bound
    to another execution is refused, bob's bound to this one runs the transfer."""
    script = [Reply(tool_calls=(Call("transfer", IBAN, "t1"),)), Reply(content="sent")]
    async with _serving(client, name, script) as task_queue:
        run_id = f"history-{name}"
        start = AgentInput(agent="custodian", input="go").model_dump(mode="json")
        handle = await client.start_workflow(
            contract.WORKFLOW_TYPE,
            ALICE.sign_start(start, workflow_id=run_id, expires_at="2099-01-01T00:00:00Z"),
            id=run_id,
            task_queue=task_queue,
        )

        def approval(key, execution_id: str) -> dict:
            return key.sign(
                {
                    "call_id": "t1",
                    "decision": "approve",
                    "approver": key.owner,
                    "run_id": run_id,
                    "execution_id": execution_id,
                    "arguments_sha256": arguments_sha256(IBAN),
                    "expires_at": "2099-01-01T00:00:00Z",
                }
            )

        execution = handle.first_execution_run_id
        await _act(
            handle,
            [
                (AWAITING, contract.SIGNAL_APPROVE, approval(ALICE, execution)),
                (AWAITING, contract.SIGNAL_APPROVE, approval(BOB, "another-execution")),
                (AWAITING, contract.SIGNAL_APPROVE, approval(BOB, execution)),
            ],
        )
        await _save(client, name, handle)


async def record_tree(
    client: Client, name: str, forge: Callable[[AgentClient, str], Awaitable[dict]] | None = None
) -> None:
    """v34 (tree-approvals, schema 1.23): the lead calls the mailer as a tool; the
    mailer's notice waits for a decision, which the lead lists and passes down (a
    `decide` update sent to the lead), after a forged report the lead refuses (`forge`
    makes it; default: one from a run that is not its child). Both runs' histories are
    kept: the caller's, and the child's (`<name>__c1`)."""
    script = [
        Reply(tool_calls=(Call("ask_mailer", {"input": "tell ann"}, "c1"),)),
        Reply(tool_calls=(Call("notify", {"to": "ann", "text": "5"}, "n1"),)),
        Reply("ann was notified"),
        Reply("done"),
    ]
    async with _serving(client, name, script) as task_queue:
        handle = await client.start_workflow(
            contract.WORKFLOW_TYPE,
            AgentInput(agent="lead", input="go"),
            id=f"history-{name}",
            task_queue=task_queue,
        )
        while (await handle.query(contract.QUERY_GET_STATUS)).get("status") != AWAITING:
            await asyncio.sleep(0.1)
        agents = AgentClient(client, task_queue=task_queue)
        forged = await forge(agents, handle.id) if forge else {"run_id": "not-a-child"}
        await handle.signal(contract.SIGNAL_SUB_RUN_REPORT, forged)
        decision = {"call_id": "n1", "decision": "approve", "approver": "ann"}
        await handle.execute_update(contract.UPDATE_DECIDE, decision)
        await handle.result()
        await _save(client, name, handle)
        await _save_child(client, name, handle, "c1")


async def record_interrupted(client: Client, name: str) -> None:
    """Issue 48 (steering): a session whose reply runs a slow tool beside a call waiting
    for approval gets a message sent with `while_busy="interrupt"`: the tool is
    cancelled, the approval withdrawn, both answered as interrupted, the message
    answered; then the `interrupt` update cuts a model call and the session waits."""
    from tests.support import steer_agents

    script = [
        Reply(
            tool_calls=(
                Call("hold", {"key": "k1"}, "h1"),
                Call("send_email", {"to": "ann", "body": "hi"}, "e1"),
            )
        ),
        Reply("stopped"),
        Reply("too slow", delay_seconds=30),
    ]
    steer_agents.reset()
    async with _serving(client, name, script) as task_queue:
        handle = await client.start_workflow(
            contract.WORKFLOW_TYPE,
            AgentInput(agent="steerable", input="go", session=True),
            id=f"history-{name}",
            task_queue=task_queue,
        )
        await steer_agents.started("k1")
        stop = MessageSignal(content="stop that", while_busy="interrupt")
        await handle.signal(contract.SIGNAL_SEND_MESSAGE, stop)
        while (await handle.query(contract.QUERY_GET_STATUS)).get("status") != "awaiting_input":
            await asyncio.sleep(0.1)
        await handle.signal(contract.SIGNAL_SEND_MESSAGE, MessageSignal(content="think hard"))
        while (await handle.describe()).raw_description.pending_activities == []:
            await asyncio.sleep(0.05)
        await handle.execute_update(contract.UPDATE_INTERRUPT, {"by": "oncall"})
        await handle.signal(contract.SIGNAL_END_SESSION, EndSessionSignal())
        await handle.result()
        await _save(client, name, handle)


async def record_background(client: Client, name: str) -> None:
    """Issue 48 (agents in the background): the relay, continuing as new after each of
    its turns, starts the scout in the background and answers at once; the scout's
    notice waits for a decision, shown at the relay and decided there (a `decide`
    update passed down by the relay's latest run) after a forged end from a run that is
    not its child is refused; the scout's end reaches the relay as a message it
    answers. Both runs' histories are kept: the relay's chain, and the scout's
    (`<name>__c1`)."""
    replies = {
        "relay-model": [
            Reply(tool_calls=(Call("scout", {"input": "tell ann"}, "c1"),)),
            Reply("the scout is on it"),
            Reply("ann knows"),
        ],
        "scout-model": [
            Reply(tool_calls=(Call("notify", {"to": "ann", "text": "hi"}, "n1"),)),
            Reply("ann was notified"),
        ],
    }
    async with _serving(client, name, [], responder=by_model(replies)) as task_queue:
        handle = await client.start_workflow(
            contract.WORKFLOW_TYPE,
            AgentInput(agent="relay", input="go"),
            id=f"history-{name}",
            task_queue=task_queue,
        )
        while True:  # the relay has answered, and the scout's call shows on it
            try:
                state = await get_state(handle)
                answered = any(
                    getattr(i, "content", None) == "the scout is on it" for i in state.items
                )
                if answered and state.sub_approvals:
                    break
            except Exception:  # still starting, or continuing as new
                pass
            await asyncio.sleep(0.1)
        forged = {"run_id": "not-a-child", "status": "completed", "final_output": "forged"}
        await handle.signal(contract.SIGNAL_SUB_RUN_FINISHED, forged)
        decision = {"call_id": "n1", "decision": "approve", "approver": "ann"}
        await handle.execute_update(contract.UPDATE_DECIDE, decision)
        await handle.result()
        await _save(client, name, handle)
        await _save_child(client, name, handle, "c1")


async def record_query_race(client: Client, name: str) -> None:
    """v53 (patches-asked-at-start): the v52 run, its worker stopped while the model
    call runs and a query sent while the next workflow task waits; a worker answers
    the query in that task, the local tool ending meanwhile, so Temporal's core
    completes the task early with the tool's marker and hands its result over in the
    next task. A race: recorded (under the same id) until it happened."""
    for _ in range(20):
        async with _serving(
            client, name, [dataclasses.replace(LOOKUP_AND_MAIL, delay_seconds=0.5)]
        ) as queue:
            handle = await client.start_workflow(
                contract.WORKFLOW_TYPE,
                AgentInput(agent="quick", input="go"),
                id=f"history-{name}",
                task_queue=queue,
            )
            while not await _model_call_running(handle):  # then stop the worker
                await asyncio.sleep(0.05)
        query = asyncio.create_task(handle.query(contract.QUERY_GET_STATUS))
        await asyncio.sleep(0.5)
        async with _serving(client, name, [Reply("told ann")]):
            await query
            approval = {"call_id": "e1", "approver": "ann"}
            await _act(handle, [(AWAITING, contract.SIGNAL_APPROVE, approval)])
            events = json.loads((await handle.fetch_history()).to_json())["events"]
            if after_local_tool(events) == RESULT_IN_NEXT_TASK:
                await _save(client, name, handle)  # (its run list: a query, served)
                return
        print("  the tool ended outside the query: again")
    sys.exit(f"{name}: the race never happened")


async def _model_call_running(handle) -> bool:
    pending = (await handle.describe()).raw_description.pending_activities
    started = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
    return any(a.activity_type.name == "call_model" and a.state == started for a in pending)


def forged(snapshot: RunState) -> RunState:
    """`snapshot` with an approval (and `always` rule) of its pending call that nobody made."""
    reply = snapshot.items[-1]
    forgery = Decision(
        call_id="c1", decision="approve", approver="mallory", always=True, via="signal", at=reply.at
    )
    return snapshot.model_copy(update={"items": [*snapshot.items, forgery]})


def _recorded(name: str) -> bool:
    return any(HISTORIES.glob(f"{name}.json")) or any(HISTORIES.glob(f"{name}.run*.json"))


KEPT = (
    "approvals",  # approve, reject, always
    "continue_as_new",  # continue-as-new with a call waiting
    "handoff",
    "pause_resume",
    "mcp_tools",
    "webhooks",  # and its first delivery's own workflow
    "run_events",
    "guardrail_tripped",
    "structured_output",  # a reply that does not match, sent back, then one that does
    "streaming",
    "cancel_during_model_call",
    "local_tool",
    "at_most_once",  # a call stamped, one interrupted, carried over continue-as-new
    "answers",  # an external tool's call answered by short id
    "approval_rules",  # a code rule's verdicts, an evaluator's decision
    "sdk_guardrail_refused",  # an SDK agent's guardrail agent refuses; items as a message
    "dynamic_instructions",  # instructions from a function, recorded with each reply
    "context_updates",  # tools' changes to the context: taken, and one refused
    "handoff_hooks",  # on_handoff run as an activity: one failing, one changing the context
    "input_filter",  # a handoff's filter in code, its choice recorded on the handoff
)
"""The scenarios recorded (of `SCENARIOS`); and below, the tree of runs with an
approval below (`tree_approvals`), an agent in the background whose caller continues
as new (`background_agents`), the query race around a local tool (`query_race`), a
session steered while it works (`interrupted`) and a signed start with signed decisions
(`signed_start`)."""


async def main() -> None:
    HISTORIES.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("AGENT_WEBHOOK_ALLOW", "127.0.0.1")  # the scenarios' receiver
    os.environ.setdefault(gate.ENV, gate.DEVELOPMENT_KEY_ID)
    env = await local_server(
        data_converter=pydantic_data_converter,
        search_attributes=search_attributes.ALL,
    )
    try:
        for name in KEPT:
            agent, session, script, actions = SCENARIOS[name]
            if not _recorded(name):
                await record(env.client, name, agent, session, script, actions)
        if not _recorded("tree_approvals"):
            await record_tree(env.client, "tree_approvals")
        if not _recorded("background_agents"):
            await record_background(env.client, "background_agents")
        if not _recorded("query_race"):
            await record_query_race(env.client, "query_race")
        if not _recorded("interrupted"):
            await record_interrupted(env.client, "interrupted")
        if not _recorded("signed_start"):
            await record_signed_start(env.client, "signed_start")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
