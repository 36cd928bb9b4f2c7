"""An attacker's second look at the changes before release 1.0 (issues 41 and 42), from
outside: the `temporal` CLI, a raw client and a poller of our workflow task queue against
a real dev server, real workers, the scripted model over HTTP and a real MCP server over
stdio. Each attack here went through on main before its fix.

- Revocation: an approver key removed from the workers approves nothing more in a run
  started before, whatever the approved call runs (a `@tool`, an MCP tool, an agent
  called as a tool, a handoff); the run asks again.
- Gate keys: a rotation reaches a long session at its next continue-as-new; a key
  dropped too early stops the runs that need it, saying so, and loses nothing; the
  published development key is refused beside other keys.
- Snapshots: a resumed run's webhook deliveries are its own.
- Continue-as-new: only our workflow code hands a continued run its state.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import uuid
from datetime import timedelta

import pytest
from durable_agents.client.ask_worker import WorkerUnavailable, ask_worker
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import DescribedAgent
from durable_agents.workflows.signed_decisions import arguments_sha256
from durable_agents.workflows.state import RunStatus
from temporalio import workflow
from temporalio.api.command.v1 import Command, ContinueAsNewWorkflowExecutionCommandAttributes
from temporalio.api.common.v1 import Payload, Payloads, WorkflowExecution, WorkflowType
from temporalio.api.enums.v1 import CommandType, EventType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import (
    PollWorkflowTaskQueueRequest,
    ResetStickyTaskQueueRequest,
    RespondWorkflowTaskCompletedRequest,
)
from temporalio.client import WorkflowExecutionStatus, WorkflowQueryFailedError
from temporalio.common import RetryPolicy
from temporalio.worker import Worker

from durable_agents import Agent, ApprovalPolicy, MCPServer, ToolContext, gate, handoff, tool
from durable_agents.gate_interceptor import GateInterceptor
from durable_agents.plugin import AgentsPluginError
from durable_agents.signing import Trust
from durable_agents.testing import Call, Reply
from tests.conftest import NO_DRAIN, serving
from tests.integration.test_activity_gate import DELETE
from tests.integration.test_mcp_tools import stdio
from tests.support import agents
from tests.support.approver_keys import ALICE, BOB, WORKER_TRUST
from tests.support.multi_agents import (
    AGENT_TOOL_AGENTS,
    NOTICES,
    by_model,
    researcher,
    shipping,
)
from tests.support.runs import (
    child_run,
    state_of,
    temporal_cli,
    wait_for_status,
    workflow_task_failures,
)

ALICE_ONLY = ApprovalPolicy(require_signature=True, approvers=["alice"])
WITHOUT_ALICE = Trust(approver_keys=[BOB.public()], snapshot_keys=WORKER_TRUST.snapshot_keys)
"""The workers' trust once alice's key is revoked."""

signed_desk = Agent(
    name="signed_desk",
    instructions="You handle support tickets.",
    model="desk-model",
    mcp_servers=[
        MCPServer(
            name="tickets",
            prefix="tickets_",
            timeout_seconds=10,
            needs_approval=True,
            approval=ALICE_ONLY,
        )
    ],
    max_turns=4,
)
"""Every tool of the tickets server needs alice's signed approval."""

signed_triage = Agent(
    name="signed_triage",
    instructions="Route the customer, with alice's signed approval to hand over.",
    model="triage-model",
    handoffs=[handoff(shipping, needs_approval=ALICE_ONLY)],
    max_turns=4,
)

signed_lead = Agent(
    name="signed_lead",
    instructions="You delegate research, with alice's signed approval.",
    model="lead-model",
    tools=[researcher.as_tool(needs_approval=ALICE_ONLY)],
    max_turns=4,
)


async def until(check, what: str) -> None:
    for _ in range(600):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"never: {what}")


async def alice_approves(worker, run_id: str, call_id: str, args: dict) -> None:
    """alice's signed approval of `call_id`, sent with the `temporal` CLI."""
    handle = worker.client.get_workflow_handle(run_id)
    pending = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    [item] = [p for p in pending if p["call_id"] == call_id]
    decision = ALICE.sign(
        {
            "call_id": call_id,
            "decision": "approve",
            "approver": "alice",
            "run_id": run_id,
            "execution_id": item["execution_id"],
            "arguments_sha256": arguments_sha256(args),
            "expires_at": "2099-01-01T00:00:00Z",
        }
    )
    await temporal_cli(
        worker, "workflow", "signal", "--workflow-id", run_id,
        "--name", contract.SIGNAL_APPROVE, "--input", json.dumps(decision),
    )  # fmt: skip


async def revoked_then_approved(
    env, model_server, agent: Agent, call_id: str, args: dict, **options
) -> tuple[object, list[dict]]:
    """A run of `agent` waits for alice on `call_id`; alice's key is revoked (the workers
    restart without it); then her signed approval arrives. The run's state once the call
    is asked again, and its pending approvals then."""
    queue = f"atk-{uuid.uuid4().hex[:8]}"
    run_id = f"atk-{uuid.uuid4().hex[:10]}"
    async with serving(
        env.client, model_server, task_queue=queue, extra_agents=[agent], drain=NO_DRAIN,
        **options,
    ) as before:  # fmt: skip
        handle = await before.client.start_workflow(
            contract.WORKFLOW_TYPE,
            {"agent": agent.name, "input": "go"},
            id=run_id,
            task_queue=queue,
        )
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    async with serving(
        env.client, model_server, task_queue=queue, trust=WITHOUT_ALICE, extra_agents=[agent],
        drain=NO_DRAIN, **options,
    ) as after:  # fmt: skip
        await alice_approves(after, run_id, call_id, args)

        async def asked_again() -> bool:
            state = await state_of(handle)
            return any(r.via == "revoked" and r.call_id == call_id for r in state.refused_decisions)

        await until(asked_again, f"{call_id} asked again")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        pending = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
        state = await state_of(handle)
        assert await workflow_task_failures(handle) == 0
    await handle.terminate("test over")
    return state, pending


async def test_a_revoked_key_approves_no_mcp_tool_in_a_run_started_before(
    env, model_server, tmp_path
):
    """Found: an MCP call carried no approval keys to the worker that acts, so a key
    revoked on every worker still ran a destructive MCP tool in a run started before."""
    effects = tmp_path / "effects.txt"
    args = {"ticket_id": "T1", "reason": "spam"}
    model_server.script(
        Reply(tool_calls=(Call("tickets_delete_ticket", args, "d1"),)),
        Reply(content="deleted"),
    )
    state, pending = await revoked_then_approved(
        env, model_server, signed_desk, "d1", args, mcp_servers={"tickets": stdio(effects)}
    )
    assert not effects.exists() or effects.read_text() == ""  # nothing was deleted
    [item] = pending
    assert item["call_id"] == "d1" and "no longer trusts" in item["reopened_because"]
    assert ALICE.key_id not in {k.key_id for k in state.agent.approver_keys}
    assert len(model_server.requests) == 1  # the model never saw a result


async def test_a_revoked_key_starts_no_agent_called_as_a_tool_in_a_run_started_before(
    env, model_server
):
    """An agent called as a tool is a child run, which no activity of the approved call
    checks: alice's revoked key must not start it either."""
    args = {"input": "add 2 and 3"}
    model_server.responder = by_model(
        {
            "lead-model": [Reply(tool_calls=(Call("researcher", args, "r1"),))],
            "research-model": [Reply(content="5")],
        }
    )
    state, pending = await revoked_then_approved(env, model_server, signed_lead, "r1", args)
    assert state.child_runs == []  # no child was started
    assert [r["model"] for r in model_server.requests] == ["lead-model"]
    [item] = pending
    assert item["call_id"] == "r1" and "no longer trusts" in item["reopened_because"]


async def test_a_revoked_key_hands_no_run_over_in_a_run_started_before(env, model_server):
    """A handoff without a hook runs no activity of its own either: alice's revoked key
    must not switch the run to another agent."""
    model_server.responder = by_model(
        {
            "triage-model": [Reply(tool_calls=(Call("transfer_to_shipping", {}, "h1"),))],
            "ship-model": [Reply(content="shipped")],
        }
    )
    state, pending = await revoked_then_approved(env, model_server, signed_triage, "h1", {})
    assert state.agent.name == "signed_triage"  # not handed over
    assert [r["model"] for r in model_server.requests] == ["triage-model"]
    [item] = pending
    assert item["call_id"] == "h1" and "no longer trusts" in item["reopened_because"]


async def test_a_trusted_keys_signed_approval_still_runs_an_mcp_tool_once(
    env, model_server, tmp_path
):
    """What an honest run sees of the check: alice's approval, her key trusted, runs the
    MCP tool once, with its idempotency key (the keys that travel beside it in the call's
    `_meta` are taken out before the server: tests/unit/test_revoked_keys.py)."""
    effects = tmp_path / "effects.txt"
    args = {"ticket_id": "T7"}
    model_server.script(
        Reply(tool_calls=(Call("tickets_close_ticket", args, "c1"),)),
        Reply(content="closed"),
    )
    queue = f"atk-{uuid.uuid4().hex[:8]}"
    async with serving(
        env.client, model_server, task_queue=queue, extra_agents=[signed_desk],
        mcp_servers={"tickets": stdio(effects)}, drain=NO_DRAIN,
    ) as worker:  # fmt: skip
        run_id = f"atk-{uuid.uuid4().hex[:10]}"
        handle = await worker.client.start_workflow(
            contract.WORKFLOW_TYPE,
            {"agent": "signed_desk", "input": "close T7"},
            id=run_id,
            task_queue=queue,
        )
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        await alice_approves(worker, run_id, "c1", args)
        result = await handle.result()
        state = await state_of(handle)
    assert result["status"] == "completed" and result["final_output"] == "closed"
    [line] = effects.read_text().splitlines()  # once
    assert line.startswith("closed T7 key=") and line.endswith(f"key={run_id}:c1")
    assert state.refused_decisions == []


async def test_describe_agent_refuses_hostile_approval_keys_from_outside(worker):
    """`describe_agent` answers anyone (`agentctl tools`); the approval keys it now takes
    are checked like the rest of its input: too many, not strings, or a key the worker
    does not trust are refused, never half-read."""
    trusted = f"{ALICE.key_id} {ALICE.public().public_key}"
    only = await ask_worker(
        worker.client, worker.task_queue, contract.ACTIVITY_DESCRIBE_AGENT,
        {"agent": "assistant", "settings_only": True, "approval_keys": [trusted]},
        DescribedAgent, "the worker",
    )  # fmt: skip
    assert only.spec is None
    for hostile, said in [
        ({"approval_keys": [trusted] * 17}, "approval_keys"),
        ({"approval_keys": [{"key_id": "alice-test"}]}, "approval_keys"),
        ({"approval_keys": "alice-test"}, "approval_keys"),
        ({"approval_keys": [f"{ALICE.key_id} {'A' * 43}"]}, "no longer trusts"),
        ({"approval_keys": ["mallory-test x"]}, "no longer trusts"),
    ]:
        with pytest.raises(WorkerUnavailable) as refused:
            await ask_worker(
                worker.client, worker.task_queue, contract.ACTIVITY_DESCRIBE_AGENT,
                {"agent": "assistant", "settings_only": True, **hostile},
                DescribedAgent, "the worker",
            )  # fmt: skip
        assert said in str(refused.value), refused.value


# --- gate keys rotated under a long session -------------------------------------------

K1, K2 = gate.new_key_entry("k1"), gate.new_key_entry("k2")

rotating = Agent(
    name="rotating",
    instructions="You delegate research; a long session.",
    model="lead-model",
    tools=[researcher.as_tool()],
    turns_per_workflow_run=2,  # continues as new after each call and its answer
    max_turns=20,
)


async def test_a_session_takes_the_new_gate_key_at_its_next_continue_as_new(
    env, model_server, monkeypatch
):
    """The rotation `durable_agents.gate` documents: add k2 last, move it first, drop k1
    once no run that used it is open. A session continues as new for ever: it must not
    keep making its children's ids with k1 (which then could never be dropped: dropping
    it wedged the session, every workflow task failing). Found: a continued run kept the
    gate key its first `describe_agent` gave."""
    model_server.responder = by_model(
        {
            "lead-model": [
                r
                for n in (1, 2, 3)
                for r in (
                    Reply(tool_calls=(Call("researcher", {"input": f"q{n}"}, f"r{n}"),)),
                    Reply(content=f"answer {n}"),
                )
            ],
            "research-model": [Reply(content=str(n)) for n in (1, 2, 3)],
        }
    )
    queue = f"atk-{uuid.uuid4().hex[:8]}"
    run_id = f"atk-{uuid.uuid4().hex[:10]}"

    async def turn(keys: str, n: int, handle=None):
        monkeypatch.setenv(gate.ENV, keys)
        async with serving(
            env.client, model_server, task_queue=queue, extra_agents=[rotating], drain=NO_DRAIN
        ) as running:
            if handle is None:
                handle = await running.client.start_workflow(
                    contract.WORKFLOW_TYPE,
                    {"agent": "rotating", "input": "q1", "session": True},
                    id=run_id,
                    task_queue=queue,
                )
            else:
                await handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": f"q{n}"})

            async def answered() -> bool:
                try:
                    state = await state_of(handle)
                except WorkflowQueryFailedError:  # still starting
                    return False
                return any(c.call_id == f"r{n}" for c in state.child_runs) and (
                    state.status == RunStatus.AWAITING_INPUT and state.final_output == f"answer {n}"
                )

            await until(answered, f"turn {n} answered")
            return handle, await state_of(handle)

    handle, _ = await turn(K1, 1)  # k1 only
    handle, _ = await turn(f"{K2},{K1}", 2, handle)  # k2 tags, k1 still verifies
    handle, state = await turn(K2, 3, handle)  # k1 dropped
    made = {c.call_id: c.run_id.rpartition("~")[2].partition(".")[0] for c in state.child_runs}
    assert made == {"r1": "k1", "r2": "k2", "r3": "k2"}
    assert state.agent.gate_key == "k2"
    assert await workflow_task_failures(handle) == 0
    await handle.terminate("test over")


# --- a resumed snapshot's word on its deliveries ------------------------------------


async def test_a_snapshot_cannot_plant_webhook_deliveries_in_the_resumed_run(
    worker, model_server, tmp_path
):
    """A snapshot that carries no event numbering (`notices`) but a delivery list naming
    someone else's workflow as a delivery of the run: the resumed run's deliveries are
    its own, and none of the snapshot's are kept (before, the list was dropped only with
    `notices`, so a hand-written snapshot kept it)."""
    model_server.script(Reply(content="hello"), Reply(content="again"))
    done = await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        {"agent": "assistant", "input": "hi"},
        id=f"atk-{uuid.uuid4().hex[:10]}",
        task_queue=worker.task_queue,
    )
    model_state = await done.result()
    assert model_state["status"] == "completed"
    document = await done.query(contract.QUERY_GET_STATE)
    document.pop("notices", None)
    squatter = f"someone-{uuid.uuid4().hex[:8]}"
    document["webhook_deliveries"] = [
        {
            "endpoint": "ops",
            "webhook_id": "evt_x_1",
            "event": "approval_requested",
            "status": "delivered",
            "attempts": 1,
            "code": 200,
            "workflow_id": squatter,
            "at": "2026-01-01T00:00:00Z",
        }
    ]
    run_id = f"forged-{uuid.uuid4().hex[:8]}"
    input_file = tmp_path / "input.json"
    input_file.write_text(json.dumps({"agent": "assistant", "input": "", "resume_from": document}))
    await temporal_cli(
        worker, "workflow", "start", "--type", contract.WORKFLOW_TYPE,
        "--task-queue", worker.task_queue, "--workflow-id", run_id,
        "--input-file", str(input_file),
    )  # fmt: skip
    handle = worker.client.get_workflow_handle(run_id)

    async def started() -> bool:
        try:
            await state_of(handle)
        except WorkflowQueryFailedError:
            return False
        return True

    await until(started, "the resumed run started")
    state = await state_of(handle)
    assert state.origin is not None and state.origin.run_id == done.id
    assert state.webhook_deliveries == []


async def failed_task_messages(handle) -> list[str]:
    """The messages of the run's failed workflow tasks, in order."""
    return [
        e.workflow_task_failed_event_attributes.failure.message
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]


async def test_a_gate_key_dropped_under_a_waiting_tree_stops_it_saying_why_and_loses_nothing(
    team, model_server, monkeypatch
):
    """The old key dropped too early, while a run and its child wait for a decision: the
    workers that load them again cannot check what their histories hold nor make their
    ids; their workflow tasks fail naming the key and what to do (nothing is taken as
    forged, nothing is lost), and once the key is back the tree finishes as it would
    have."""
    model_server.responder = by_model(
        {
            "lead-model": [
                Reply(tool_calls=(Call("ask_mailer", {"input": "tell ann"}, "c1"),)),
                Reply(content="told"),
            ],
            "mail-model": [
                Reply(tool_calls=(Call("notify", {"to": "ann", "text": "5"}, "n1"),)),
                Reply(content="sent"),
            ],
        }
    )
    queue = f"atk-{uuid.uuid4().hex[:8]}"
    run_id = f"atk-{uuid.uuid4().hex[:10]}"

    def on(keys: str):
        monkeypatch.setenv(gate.ENV, keys)
        return serving(
            env_client, model_server, task_queue=queue, extra_agents=AGENT_TOOL_AGENTS,
            drain=NO_DRAIN,
        )  # fmt: skip

    env_client = team.client
    async with on(K1) as first:
        handle = await first.client.start_workflow(
            contract.WORKFLOW_TYPE, {"agent": "lead", "input": "tell ann"}, id=run_id,
            task_queue=queue,
        )  # fmt: skip
        child = await child_run(first.client, run_id, "c1")
        await wait_for_status(first.client.get_workflow_handle(child), RunStatus.AWAITING_APPROVAL)
    child_handle = team.client.get_workflow_handle(child)
    async with on(K2):  # k1 dropped while both wait
        await child_handle.signal(contract.SIGNAL_APPROVE, {"call_id": "n1", "approver": "ops"})

        async def stopped() -> bool:
            return bool(await failed_task_messages(child_handle))

        await until(stopped, "the child's workflow task failed")
    [why, *_] = await failed_task_messages(child_handle)
    assert "'k1'" in why and "keep" in why, why
    assert NOTICES == []  # nothing ran meanwhile
    async with on(f"{K2},{K1}"):  # the key is back: the tree goes on
        result = await handle.result()
    assert (result["status"], result["final_output"]) == ("completed", "told")
    assert NOTICES == [{"to": "ann", "text": "5"}]  # the approved call ran, once


# --- the published development key beside a production key --------------------------

PUBLISHED = base64.b64encode(hashlib.sha256(b"durable-agents development gate key").digest())
"""The development gate key's material, as anyone can compute it from the package."""


@workflow.defn(name="DevKeyRogue", sandboxed=False)
class DevKeyRogue:
    """An attacker's workflow on a worker of their own that holds the published
    development key, scheduling our `run_tool` on our task queue."""

    @workflow.run
    async def run(self, queue: str) -> None:
        handle = workflow.start_activity(
            contract.ACTIVITY_RUN_TOOL,
            DELETE,
            task_queue=queue,
            start_to_close_timeout=timedelta(seconds=20),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
        await workflow.wait_condition(handle.done)


async def test_a_worker_refuses_the_published_development_key_beside_its_own(
    env, model_server, monkeypatch
):
    """An operator moving from `--dev` keeps the development key as a second key so the
    runs it made can finish (the rotation the docs describe). Its material is published:
    anyone tags with it, and a worker that verifies it runs any tool for them (found:
    `delete_account` ran for an attacker's workflow). The workers refuse to start with it
    beside other keys; it is only ever used alone (`AGENT_GATE_KEYS=dev`)."""
    agents.CALLS.clear()
    monkeypatch.setenv(gate.ENV, f"{K1},dev:{PUBLISHED.decode()}")
    with pytest.raises(AgentsPluginError) as refused:
        async with serving(env.client, model_server, drain=NO_DRAIN) as ours:
            queue = f"rogue-{uuid.uuid4().hex[:8]}"
            dev = GateInterceptor(gate.GateKeys.development())
            async with Worker(
                ours.client, task_queue=queue, workflows=[DevKeyRogue], interceptors=[dev]
            ):
                rogue = await ours.client.start_workflow(
                    DevKeyRogue.run, ours.task_queue, id=queue, task_queue=queue
                )

                async def acted() -> bool:
                    return (
                        bool(agents.CALLS)
                        or (await rogue.describe()).status != WorkflowExecutionStatus.RUNNING
                    )

                await until(acted, "the rogue's call ended")
    assert "development key" in str(refused.value)
    assert agents.CALLS == []  # delete_account never ran
    with pytest.raises(gate.GateConfigError):
        gate.GateKeys.parse(f"dev:{PUBLISHED.decode()},{K1}")  # first or not


# --- a continue-as-new made by a poller of our workflow task queue --------------------

WIPED: list[str] = []


@tool(needs_approval=ALICE_ONLY)
def wipe(disk: str, ctx: ToolContext) -> str:
    """Wipe a disk; alice's signed approval only."""
    WIPED.append(ctx.call_id)
    return f"wiped {disk}"


vaulted = Agent(name="vaulted", instructions="Wipe.", model="vault-model", tools=[wipe])


async def test_a_continue_as_new_forged_by_a_poller_of_our_queue_approves_nothing(
    env, model_server
):
    """Anyone who may poll our workflow task queue (no keys needed to poll) takes a task
    of a waiting run and answers it with a continue-as-new whose carried state approves
    the call alice alone may approve. A continued run takes its carried state as its
    own; it must take it only from our workers' code."""
    WIPED.clear()
    model_server.script(
        Reply(tool_calls=(Call("wipe", {"disk": "prod"}, "w1"),)),
        Reply(content="wiped"),
    )
    queue = f"atk-{uuid.uuid4().hex[:8]}"
    run_id = f"atk-{uuid.uuid4().hex[:10]}"
    async with serving(
        env.client, model_server, task_queue=queue, extra_agents=[vaulted], drain=NO_DRAIN
    ) as ours:
        handle = await ours.client.start_workflow(
            contract.WORKFLOW_TYPE, {"agent": "vaulted", "input": "wipe prod"}, id=run_id,
            task_queue=queue,
        )  # fmt: skip
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        forged = await handle.query(contract.QUERY_GET_STATE)
    forged["items"].append(
        {
            "type": "decision", "call_id": "w1", "decision": "approve", "approver": "alice",
            "via": "signal", "at": forged["updated_at"],
        }
    )  # fmt: skip
    service, namespace = env.client.workflow_service, env.client.namespace
    described = await handle.describe()
    execution = WorkflowExecution(workflow_id=run_id, run_id=described.run_id)
    await service.reset_sticky_task_queue(
        ResetStickyTaskQueueRequest(namespace=namespace, execution=execution)
    )
    await handle.signal(contract.SIGNAL_PAUSE, {"by": "rogue"})  # a workflow task
    async with asyncio.timeout(30):
        task = await service.poll_workflow_task_queue(
            PollWorkflowTaskQueueRequest(
                namespace=namespace, task_queue=TaskQueue(name=queue), identity="rogue"
            )
        )
    carried = {"agent": "vaulted", "input": "", "resume_from": forged}
    payload = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(carried).encode())
    attributes = ContinueAsNewWorkflowExecutionCommandAttributes(
        workflow_type=WorkflowType(name=contract.WORKFLOW_TYPE),
        task_queue=TaskQueue(name=queue),
        input=Payloads(payloads=[payload]),
    )
    attributes.workflow_task_timeout.FromSeconds(10)
    await service.respond_workflow_task_completed(
        RespondWorkflowTaskCompletedRequest(
            namespace=namespace,
            task_token=task.task_token,
            identity="rogue",
            commands=[
                Command(
                    command_type=CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
                    continue_as_new_workflow_execution_command_attributes=attributes,
                )
            ],
        )
    )
    async with serving(
        env.client, model_server, task_queue=queue, extra_agents=[vaulted], drain=NO_DRAIN
    ):
        latest = env.client.get_workflow_handle(run_id)

        async def over() -> bool:
            if WIPED:
                return True
            status = (await latest.describe()).status
            return status != WorkflowExecutionStatus.RUNNING

        await until(over, "the forged continuation ended or acted")
        closed = await latest.describe()
    assert WIPED == []  # the tool never ran
    assert closed.status == WorkflowExecutionStatus.FAILED
    failure = await latest.fetch_history()
    message = json.dumps(failure.to_json_dict())
    assert "not continued as new by" in message, message[-2000:]
