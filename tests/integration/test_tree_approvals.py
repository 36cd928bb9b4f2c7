"""Approvals across a tree of runs (workflows/tree_approvals.py): a child run (an agent
called as a tool) waiting for a decision shows in its caller's pending calls, status,
search attributes and details, and a decision sent to the caller (agentctl, the
`temporal` CLI, the gateway) is decided by the child. Real dev server, worker, model
server; the hostile cases send what any signaller can."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path

import httpx2
import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.errors import DecisionRefused
from durable_agents.client.gateway_auth import Callers, load_callers
from durable_agents.workflows import contract, search_attributes, short_ids
from durable_agents.workflows.payloads import AgentInput, AgentResult, PendingApproval
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunStatus
from temporalio import workflow
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryRequest
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from durable_agents.dataplane.codec import codec_data_converter
from durable_agents.signing import write_key
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.integration.test_codec_e2e import KEYS
from tests.integration.test_four_eyes import IBAN
from tests.integration.test_gateway import DECIDER, bearer, gateway
from tests.support import agents
from tests.support.approver_keys import ALICE, BOB
from tests.support.cli_support import bound_to, error_lines
from tests.support.dev_servers import local_server
from tests.support.multi_agents import AGENT_TOOL_AGENTS, NOTICES, by_model
from tests.support.runs import (
    activities_scheduled,
    child_run,
    temporal_cli,
    tool_results,
    wait_for_status,
    workflow_task_failures,
)


def mailer_replies(*call_ids: str) -> list:
    """The mailer proposes one notice per id, then answers."""
    replies: list = []
    for call_id in call_ids:
        notice = Call("notify", {"to": "ann", "text": "5"}, call_id)
        replies += [Reply(tool_calls=(notice,)), Reply(content="ann was notified")]
    return replies


async def pending_below(client: AgentClient, run_id: str, count: int) -> list[PendingApproval]:
    """The run's pending calls once `count` of them are of runs below it."""
    deadline = time.monotonic() + 30
    while True:
        pending = await client.pending(run_id)
        if sum(p.run_id != run_id for p in pending) >= count:
            return pending
        assert time.monotonic() < deadline, f"run {run_id} lists {pending}"
        await asyncio.sleep(0.05)


@pytest.mark.history("tree_approvals")
async def test_a_childs_pending_call_shows_on_the_caller_and_is_approved_through_it(
    team, model_server, scenario
):
    model_server.responder = by_model(
        {
            "lead-model": [
                Reply(
                    tool_calls=(
                        Call("researcher", {"input": "add 2 and 3"}, "c1"),
                        Call("ask_mailer", {"input": "tell ann it is 5"}, "c2"),
                    )
                ),
                Reply(content="Done."),
            ],
            "research-model": [
                Reply(tool_calls=(Call("add", {"a": 2, "b": 3}, "a1"),)),
                Reply(content="5"),
            ],
            "mail-model": mailer_replies("n1"),
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("lead", "work it out and tell ann")).id
    mailer_run = await child_run(team.client, run_id, "c2")
    scenario.run(team.client.get_workflow_handle(run_id))
    scenario.run(team.client.get_workflow_handle(mailer_run), child="c2")
    [shown] = await pending_below(client, run_id, 1)
    [own] = await client.pending(mailer_run)
    assert shown.run_id == mailer_run and shown.path == ["lead", "mailer"]
    assert own.path == ["mailer"] and own.run_id == mailer_run
    assert shown.model_dump(exclude={"path"}) == own.model_dump(exclude={"path"})

    view = await wait_for_status(
        team.client.get_workflow_handle(run_id), RunStatus.AWAITING_APPROVAL
    )
    assert view.pending_approvals == 1
    query = f"AgentPendingApprovals > 0 AND AgentName = 'lead' AND TaskQueue = '{team.task_queue}'"
    for _ in range(100):  # visibility is eventually consistent
        found = [w.id async for w in team.client.list_workflows(query)]
        if found == [run_id]:
            break
        await asyncio.sleep(0.1)
    assert found == [run_id]
    handle = team.client.get_workflow_handle(run_id)
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    text = metadata.current_details
    assert "**Pending approvals in runs below (1)**" in text
    short = short_ids.derive(mailer_run, "n1")  # the id the mailer's run gave the call
    assert f"call id `n1` (short id `{short}`) — in run `{mailer_run}` (lead → mailer)" in text

    listed = await bound_to(team)("pending", run_id)
    assert listed.code == 0, listed.stderr
    assert f"lead → mailer ({mailer_run})" in listed.stdout
    tree = await bound_to(team)("tree", run_id)
    assert tree.stdout.splitlines()[0] == f"{run_id} · lead · awaiting_approval · turn 1"

    approved = await bound_to(team)("approve", run_id, "n1", "--as", "ann", "--json")
    # answered by the child's report: the caller's bound on that wait (ANSWER_TIMEOUT)
    # would have refused it (exit code 1), not given the child's recorded decision
    assert approved.code == 0, approved.stderr
    decision = Decision.model_validate_json(approved.stdout)
    assert (decision.call_id, decision.approver, decision.via) == ("n1", "ann", "update")
    assert decision.run_id == mailer_run and decision.arguments_sha256 == own.arguments_sha256

    result = await client.result(run_id)
    assert result.status is RunStatus.COMPLETED and result.final_output == "Done."
    assert NOTICES == [{"to": "ann", "text": "5"}]
    child_state = await client.state(mailer_run)
    [recorded] = [i for i in child_state.items if isinstance(i, Decision)]
    assert recorded.approver == "ann" and recorded.sender == "agentctl"
    assert tool_results(await client.state(run_id))["c2"].content == "ann was notified"
    assert await client.pending(run_id) == []


async def test_the_temporal_cli_approves_a_childs_call_through_the_caller(team, model_server):
    """Two agents called in parallel, one of which waits for a decision: the documented
    payload sent with the `temporal` CLI to the caller's id decides it."""
    model_server.responder = by_model(
        {
            "lead-model": [
                Reply(
                    tool_calls=(
                        Call("ask_mailer", {"input": "tell ann"}, "c1"),
                        Call("researcher", {"input": "add 2 and 3"}, "c2"),
                    )
                ),
                Reply(content="Done."),
            ],
            "mail-model": mailer_replies("n1"),
            "research-model": [Reply(content="5")],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("lead", "tell ann")).id
    await pending_below(client, run_id, 1)
    payload = json.dumps({"call_id": "n1", "approver": "ops"})  # as the docs show it
    await temporal_cli(
        team, "workflow", "signal", "--workflow-id", run_id, "--name", "approve",
        "--input", payload,
    )  # fmt: skip
    assert (await client.result(run_id)).status is RunStatus.COMPLETED
    assert NOTICES == [{"to": "ann", "text": "5"}]
    [decision] = [
        i
        for i in (await client.state(await child_run(team.client, run_id, "c1"))).items
        if isinstance(i, Decision)
    ]
    assert (decision.approver, decision.via) == ("ops", "signal")
    assert tool_results(await client.state(run_id))["c2"].content == "5"


async def test_a_grandchilds_call_is_listed_at_the_top_and_rejected_from_there(team, model_server):
    model_server.responder = by_model(
        {
            "director-model": [
                Reply(tool_calls=(Call("ask_lead", {"input": "have ann told"}, "d1"),)),
                Reply(content="The lead reports back."),
            ],
            "lead-model": [
                Reply(tool_calls=(Call("ask_mailer", {"input": "tell ann"}, "c1"),)),
                Reply(content="ann was not told"),
            ],
            "mail-model": [
                Reply(tool_calls=(Call("notify", {"to": "ann", "text": "5"}, "n1"),)),
                Reply(content="not sent"),
            ],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("director", "tell ann")).id
    [shown] = await pending_below(client, run_id, 1)
    assert shown.path == ["director", "lead", "mailer"] and shown.run_id == await child_run(
        team.client, await child_run(team.client, run_id, "d1"), "c1"
    )
    decision = await client.decide(
        run_id, "n1", "reject", approver="ann", reason="not now",
        arguments_sha256=shown.arguments_sha256, execution_id=shown.execution_id,
        holder_run_id=shown.run_id,
    )  # fmt: skip
    assert (decision.decision, decision.run_id) == ("reject", shown.run_id)
    result = await client.result(run_id)
    assert result.status is RunStatus.COMPLETED and NOTICES == []
    grandchild = await client.state(shown.run_id)
    assert tool_results(grandchild)["n1"].content.startswith("Tool call rejected by ann: not now")


async def test_a_decision_sent_to_the_caller_is_checked_by_the_run_that_holds_the_call(
    team, model_server
):
    model_server.responder = by_model(
        {
            "lead-model": [
                Reply(
                    tool_calls=(
                        Call("ask_mailer", {"input": "tell ann"}, "c1"),
                        Call("ask_mailer", {"input": "tell bob"}, "c2"),
                    )
                ),
                Reply(content="Done."),
            ],
            "mail-model": [  # the same call id in both children
                *[Reply(tool_calls=(Call("notify", {"to": "ann", "text": "5"}, "n1"),))] * 2,
                *[Reply(content="ann was notified")] * 2,
            ],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("lead", "tell both")).id
    pending = await pending_below(client, run_id, 2)
    first_child, second_child = (
        await child_run(team.client, run_id, "c1"),
        await child_run(team.client, run_id, "c2"),
    )
    assert sorted(p.run_id for p in pending) == sorted([first_child, second_child])

    with pytest.raises(DecisionRefused, match=r"waits in 2 runs below .*name the one"):
        await client.decide(run_id, "n1", "approve", approver="ann")
    ambiguous = await bound_to(team)("approve", run_id, "n1", "--as", "ann")
    assert ambiguous.code == 1 and "--in RUN_ID" in error_lines(ambiguous.stderr)[0]
    with pytest.raises(DecisionRefused, match="no call n1 waits in run elsewhere"):
        await client.decide(
            run_id, "n1", "approve", approver="ann",
            arguments_sha256=pending[0].arguments_sha256, holder_run_id="elsewhere",
        )  # fmt: skip
    stale = pending[0].model_copy(update={"arguments_sha256": "0" * 64})
    with pytest.raises(DecisionRefused, match="arguments"):  # the child checks the binding
        await client.decide(
            run_id, "n1", "approve", approver="ann",
            arguments_sha256=stale.arguments_sha256, holder_run_id=first_child,
        )  # fmt: skip

    first = await bound_to(team)("approve", run_id, "n1", "--in", first_child, "--as", "ann")
    assert first.code == 0, first.stderr
    assert f"in run {first_child} (lead → mailer)" in first.stdout
    # A repeat: the child has it decided (or has told the caller it no longer waits).
    with pytest.raises(DecisionRefused, match=r"already decided|no call n1 waits in run"):
        await client.decide(
            run_id, "n1", "approve", approver="ann",
            arguments_sha256=pending[0].arguments_sha256, holder_run_id=first_child,
        )  # fmt: skip
    await client.approve(second_child, "n1", approver="bob")  # on the child directly
    assert (await client.result(run_id)).status is RunStatus.COMPLETED
    assert len(NOTICES) == 2


async def test_forged_tree_signals_are_refused_and_decide_nothing(team, model_server, tmp_path):
    """Reports from outside (no gate tag, whatever they list) and decisions passed down
    to a run without a caller are refused; the caller lists only what its child said."""
    model_server.responder = by_model(
        {
            "lead-model": [
                Reply(tool_calls=(Call("ask_mailer", {"input": "tell ann"}, "c1"),)),
                Reply(content="Done."),
            ],
            "mail-model": mailer_replies("n1"),
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("lead", "tell ann")).id
    [real] = await pending_below(client, run_id, 1)
    child = await child_run(team.client, run_id, "c1")
    parent = team.client.get_workflow_handle(run_id)
    fake_item = real.model_dump(mode="json") | {"call_id": "x9", "run_id": "victim-run"}
    # A report from a run the caller does not wait on: refused, not listed.
    await parent.signal(
        contract.SIGNAL_SUB_RUN_REPORT, {"run_id": "victim-run", "pending": [fake_item]}
    )
    # Malformed ones, and one the size limits refuse.
    await parent.signal(contract.SIGNAL_SUB_RUN_REPORT, {"run_id": child, "pending": "x"})
    await parent.signal(contract.SIGNAL_SUB_RUN_REPORT, "not an object")
    long_item = fake_item | {"run_id": child, "tool": "t" * 300}
    await parent.signal(contract.SIGNAL_SUB_RUN_REPORT, {"run_id": child, "pending": [long_item]})
    # Entries no run would report: a time without a zone (this wedged the caller once),
    # benign arguments shown next to the real call's digest.
    naive = real.model_dump(mode="json") | {"requested_at": "2026-01-01T00:00:00"}
    await parent.signal(contract.SIGNAL_SUB_RUN_REPORT, {"run_id": child, "pending": [naive]})
    benign = real.model_dump(mode="json") | {"arguments": '{"to": "ann", "text": "hi"}'}
    await parent.signal(contract.SIGNAL_SUB_RUN_REPORT, {"run_id": child, "pending": [benign]})
    # Arguments no run reports: nested past the stack (reading them for the details
    # failed every task of the caller once), not a JSON object, more than a run sends.
    unbound = {"arguments_sha256": None, "args": None}
    for arguments in ("[" * 5000 + "]" * 5000, "not json"):
        odd = real.model_dump(mode="json") | unbound | {"call_id": "x8", "arguments": arguments}
        await parent.signal(contract.SIGNAL_SUB_RUN_REPORT, {"run_id": child, "pending": [odd]})
    huge = real.model_dump(mode="json") | unbound | {"arguments": json.dumps({"to": "x" * 150_000})}
    await parent.signal(
        contract.SIGNAL_SUB_RUN_REPORT,
        {"run_id": child, "pending": [huge, huge | {"call_id": "x7"}]},
    )
    # A decision passed down to a root run: it has no caller to answer.
    await parent.signal(
        contract.SIGNAL_FORWARDED_DECISION,
        {"ref": "r1", "decision": {"call_id": "n1", "decision": "approve", "approver": "eve"}},
    )
    # A malformed one to the child, straight: refused there, the child goes on.
    await team.client.get_workflow_handle(child).signal(
        contract.SIGNAL_FORWARDED_DECISION, {"ref": "r1", "decision": "approve all"}
    )
    state = await client.state(run_id)
    refused = [(r.signal, r.refused_because) for r in state.refused_signals]
    assert [s for s, _ in refused] == [contract.SIGNAL_SUB_RUN_REPORT] * 9 + [
        contract.SIGNAL_FORWARDED_DECISION
    ]
    # None carries our workers' gate tag: refused before what they list is read (what a
    # tagged report may list is checked too: tests/unit/test_tree_approvals.py)
    untagged = "not sent by a run of this deployment's workers (no gate tag)"
    shapeless = "not a sub_run_report payload"  # the gate cannot read a sender from it
    assert [why for _, why in refused[:9]] == [untagged, shapeless, shapeless] + [untagged] * 6
    assert "not called as a tool" in refused[9][1]
    assert await workflow_task_failures(parent) == 0
    [listed] = await client.pending(run_id)
    assert listed == real  # the caller shows what the child reported, nothing forged
    child_state = await client.state(child)
    assert [r.signal for r in child_state.refused_signals] == [contract.SIGNAL_FORWARDED_DECISION]

    # A report forged in the child's name, listing the real call and one of its own: it
    # has no gate tag either, so nothing it lists shows, and its call cannot be decided.
    await parent.signal(
        contract.SIGNAL_SUB_RUN_REPORT,
        {"run_id": child, "pending": [real.model_dump(mode="json"), fake_item]},
    )
    deadline = time.monotonic() + 30
    while len((await client.state(run_id)).refused_signals) < len(refused) + 1:
        assert time.monotonic() < deadline, "the forged report was not refused"
        await asyncio.sleep(0.05)
    assert [p.call_id for p in await client.pending(run_id)] == ["n1"]
    with pytest.raises(DecisionRefused, match="x9"):
        await client.decide(run_id, "x9", "approve", approver="eve")
    assert NOTICES == []

    # One whose refusal would be long (this wedged the child once): answered, refused
    # (to a reference the caller never gave: ignored), and the child goes on.
    many = {f"key_{n}_{'x' * 60}": 1 for n in range(200)}
    await team.client.get_workflow_handle(child).signal(
        contract.SIGNAL_FORWARDED_DECISION, {"ref": "r2", "decision": many}
    )
    assert [p.call_id for p in await client.pending(child)] == ["n1"]

    sha = real.arguments_sha256
    async with gateway(team, callers_for(tmp_path, ["lead"])) as url, httpx2.AsyncClient() as http:
        answer = await http.post(
            f"{url}/runs/{run_id}/decisions",
            json={"call_id": "n1", "decision": "approve", "arguments_sha256": sha},
            headers=bearer(DECIDER),
        )
        assert answer.status_code == 403, answer.text  # scoped to lead; the call is mailer's
        shown = await http.get(f"{url}/runs/{run_id}/pending", headers=bearer(DECIDER))
        assert shown.status_code == 200 and shown.json() == []  # nor may it read the call
        whole = await http.get(f"{url}/runs/{run_id}/state", headers=bearer(DECIDER))
        assert whole.status_code == 200 and "sub_approvals" not in whole.json()
    async with (
        gateway(team, callers_for(tmp_path, ["lead", "mailer"])) as url,
        httpx2.AsyncClient() as http,
    ):
        answer = await http.post(
            f"{url}/runs/{run_id}/decisions",
            json={"call_id": "n1", "decision": "approve", "arguments_sha256": sha},
            headers=bearer(DECIDER),
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["run_id"] == child and answer.json()["approver"] == "desk"
    assert (await client.result(run_id)).status is RunStatus.COMPLETED
    assert NOTICES == [{"to": "ann", "text": "5"}]


@workflow.defn(name="SomeonesOwnWorkflow", sandboxed=False)
class SomeonesOwnWorkflow:
    """A user's workflow that runs an agent as a child of its own (depth 0)."""

    @workflow.run
    async def run(self, child_id: str) -> str:
        done = await workflow.execute_child_workflow(
            contract.WORKFLOW_TYPE,
            AgentInput(agent="mailer", input="tell ann"),
            id=child_id,
            task_queue=workflow.info().task_queue.removesuffix("-own"),
            result_type=AgentResult,
        )
        return done.status.value


async def test_a_decision_passed_down_to_a_run_no_agent_called_is_refused(team, model_server):
    """Such a run has no caller to answer: the decision used to wait for good, and the
    run could then neither continue as new nor end (its parent waited for ever)."""
    model_server.responder = by_model({"mail-model": mailer_replies("n1")})
    client = AgentClient(team.client, task_queue=team.task_queue)
    own_queue, child_id = f"{team.task_queue}-own", f"own-{uuid.uuid4().hex[:8]}"
    async with Worker(team.client, task_queue=own_queue, workflows=[SomeonesOwnWorkflow]):
        parent = await team.client.start_workflow(
            SomeonesOwnWorkflow.run, child_id, id=f"{child_id}-parent", task_queue=own_queue
        )
        await wait_for_status(
            team.client.get_workflow_handle(child_id), RunStatus.AWAITING_APPROVAL
        )
        forwarded = {"ref": "r1", "decision": {"call_id": "n1", "decision": "approve"}}
        await team.client.get_workflow_handle(child_id).signal(
            contract.SIGNAL_FORWARDED_DECISION, forwarded
        )
        await client.decide(child_id, "n1", "approve", approver="ann")
        assert await asyncio.wait_for(parent.result(), timeout=30) == "completed"
    [refused] = (await client.state(child_id)).refused_signals
    assert (refused.signal, refused.refused_because) == (
        contract.SIGNAL_FORWARDED_DECISION,
        "this run was not called as a tool",
    )
    assert NOTICES == [{"to": "ann", "text": "5"}]


def callers_for(folder: Path, agents: list[str]) -> Callers:
    """One caller, `desk`, who may read and decide (as ann) on runs of `agents`."""
    file = folder / f"callers-{len(agents)}.json"
    entry = {
        "name": "desk",
        "token_env": "T_DECIDE",
        "scopes": ["read", "decide"],
        "approve_as": ["ann"],
        "agents": agents,
    }
    file.write_text(json.dumps([entry]))
    return load_callers({"AGENT_GATEWAY_TOKENS": str(file), "T_DECIDE": DECIDER})


async def test_an_encrypted_tree_reports_and_passes_decisions_down(env, model_server):
    """With the payload codec on, each signal between the runs is encrypted for the run
    it goes to (the report for the caller, the decision for the child) and decodes
    there; nothing of the call is in the caller's history in clear."""
    marker = "tree-secret-4471"
    model_server.responder = by_model(
        {
            "lead-model": [
                Reply(tool_calls=(Call("ask_mailer", {"input": "tell ann"}, "c1"),)),
                Reply(content="Done."),
            ],
            "mail-model": [
                Reply(tool_calls=(Call("notify", {"to": "ann", "text": marker}, "n1"),)),
                Reply(content="sent"),
            ],
        }
    )
    NOTICES.clear()
    target = env.client.service_client.config.target_host
    encrypted = await Client.connect(
        target, namespace=env.client.namespace, data_converter=codec_data_converter(KEYS)
    )
    async with serving(encrypted, model_server, extra_agents=AGENT_TOOL_AGENTS) as running:
        client = AgentClient(encrypted, task_queue=running.task_queue)
        run_id = (await client.start("lead", "tell ann")).id
        [shown] = await pending_below(client, run_id, 1)
        assert shown.args == {"to": "ann", "text": marker}
        decision = await client.decide(
            run_id, "n1", "approve", approver="ann",
            arguments_sha256=shown.arguments_sha256, execution_id=shown.execution_id,
            holder_run_id=shown.run_id,
        )  # fmt: skip
        assert decision.run_id == shown.run_id
        assert (await client.result(run_id)).status is RunStatus.COMPLETED
    assert NOTICES == [{"to": "ann", "text": marker}]
    history = await env.client.workflow_service.get_workflow_execution_history(
        GetWorkflowExecutionHistoryRequest(
            namespace=env.client.namespace, execution={"workflow_id": run_id}
        )
    )
    raw = history.SerializeToString()
    assert contract.SIGNAL_SUB_RUN_REPORT.encode() in raw  # the reports are there
    assert marker.encode() not in raw


async def test_a_tree_waiting_for_approval_is_exported_and_resumed_on_a_fresh_server(
    team, model_server
):
    """The caller's snapshot carries its unfinished child (and the child's, which
    waits for a decision); resumed under the same id on another server, the caller
    resumes the child from its state (its model is not asked again), the child's call
    shows on the caller, and a decision sent to the caller runs the notice once."""
    model_server.responder = by_model(
        {
            "director-model": [
                Reply(tool_calls=(Call("ask_lead", {"input": "have ann told"}, "d1"),)),
                Reply(content="The lead reports back."),
            ],
            "lead-model": [
                Reply(
                    tool_calls=(
                        Call("researcher", {"input": "add 2 and 3"}, "r1"),
                        Call("ask_mailer", {"input": "tell ann"}, "c1"),
                    )
                ),
                Reply(content="ann was told 5"),
            ],
            "research-model": [Reply(content="5")],
            "mail-model": [
                Reply(tool_calls=(Call("notify", {"to": "ann", "text": "5"}, "n1"),)),
                Reply(content="sent"),
            ],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("director", "tell ann")).id
    [shown] = await pending_below(client, run_id, 1)
    lead_id = await child_run(team.client, run_id, "d1")
    assert (await client.result(await child_run(team.client, lead_id, "r1"))).final_output == "5"
    text = await client.export(run_id)
    document = json.loads(text)
    [lead_run] = document["sub_runs"]
    assert lead_run["call_id"] == "d1" and lead_run["state"]["run_id"] == lead_id
    # the researcher finished, but the lead has not recorded it (its reply's other call
    # waits): it is taken, and resumes ended, its answer kept
    research_run, mail_run = lead_run["state"]["sub_runs"]
    assert (research_run["call_id"], research_run["state"]["status"]) == ("r1", "completed")
    assert (mail_run["call_id"], mail_run["state"]["status"]) == ("c1", "awaiting_approval")
    await team.client.get_workflow_handle(run_id).terminate("moved to another server")
    asked = len(model_server.requests)

    second = await local_server(
        data_converter=pydantic_data_converter,
        search_attributes=search_attributes.ALL,
    )
    try:
        async with serving(second.client, model_server, extra_agents=AGENT_TOOL_AGENTS) as other:
            moved = AgentClient(second.client, task_queue=other.task_queue)
            resumed = (await moved.resume(text, run_id=run_id)).id
            [again] = await pending_below(moved, resumed, 1)
            assert (again.run_id, again.path) == (shown.run_id, shown.path)
            assert again.arguments_sha256 == shown.arguments_sha256
            # no model was asked again: the lead, researcher and mailer were resumed
            assert len(model_server.requests) == asked
            decision = await moved.decide(resumed, "n1", "approve", approver="ann")
            assert decision.run_id is None and decision.approver == "ann"
            result = await moved.result(resumed)
            lead_state = await moved.state(lead_id)
    finally:
        await second.shutdown()
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "The lead reports back.")
    assert NOTICES == [{"to": "ann", "text": "5"}]
    assert tool_results(lead_state)["r1"].content == "5"  # kept, not run again
    assert lead_state.origin is not None and lead_state.origin.mode == "resume"


async def test_pausing_the_caller_pauses_its_children_and_resuming_it_resumes_them(
    team, model_server
):
    model_server.responder = by_model(
        {
            "lead-model": [
                Reply(tool_calls=(Call("ask_mailer", {"input": "tell ann"}, "c1"),)),
                Reply(content="Done."),
            ],
            "mail-model": mailer_replies("n1"),
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("lead", "tell ann")).id
    await pending_below(client, run_id, 1)
    child = await child_run(team.client, run_id, "c1")
    await client.pause(run_id, by="oncall", reason="audit")  # the update
    view = await wait_for_status(team.client.get_workflow_handle(child), RunStatus.PAUSED)
    assert view.paused
    assert (await client.state(child)).paused.by == "oncall"  # type: ignore[union-attr]
    await client.approve(child, "n1", approver="ann")  # recorded; runs once resumed
    async with asyncio.timeout(30):
        while not [i for i in (await client.state(child)).items if isinstance(i, Decision)]:
            await asyncio.sleep(0.1)
    # the child's task that recorded the decision has completed: it scheduled no tool
    assert "run_tool" not in await activities_scheduled(team.client.get_workflow_handle(child))
    assert NOTICES == []
    await team.client.get_workflow_handle(run_id).signal(contract.SIGNAL_RESUME, {"by": "oncall"})
    result = await client.result(run_id)
    assert result.status is RunStatus.COMPLETED and NOTICES == [{"to": "ann", "text": "5"}]
    log = [(e.action, e.by) for e in (await client.state(child)).pause_log]
    assert log == [("pause", "oncall"), ("resume", "oncall")]


async def test_a_signed_start_holds_in_the_child_so_its_starter_cannot_approve_there(
    team, model_server, tmp_path
):
    """Alice signs the vault's start; the custodian it calls as a tool checks the signed
    start passed down and wants a transfer that separates duties: Alice may not approve
    it, Bob may. A client cannot hand a run a caller's signed start (it has no root)."""
    model_server.responder = by_model(
        {
            "vault-model": [
                Reply(tool_calls=(Call("custodian", {"input": "wire 250"}, "v1"),)),
                Reply(content="wired"),
            ],
            "test-model": [Reply(tool_calls=(Call("transfer", IBAN, "t1"),)), Reply("sent")],
        }
    )
    agents.CALLS.clear()
    keys = {}
    for key in (ALICE, BOB):
        keys[key.owner] = str(tmp_path / f"{key.owner}.key")
        write_key(key, tmp_path / f"{key.owner}.key")
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("vault", "wire 250", signing_key=ALICE)).id
    await pending_below(client, run_id, 1)
    child = await child_run(team.client, run_id, "v1")
    assert (await client.state(child)).started_by == (await client.state(run_id)).started_by
    ctl = bound_to(team)
    own = await ctl("approve", run_id, "t1", "--key", keys["alice"])
    assert own.code != 0 and "alice started this run" in own.stderr
    other = await ctl("approve", run_id, "t1", "--key", keys["bob"])
    assert other.code == 0, other.stderr
    assert (await client.result(run_id)).final_output == "wired"
    assert [c[:2] for c in agents.CALLS] == [("transfer", IBAN)]

    proof = (await client.state(run_id)).start_proof
    assert proof is not None and proof.workflow_id == run_id
    forged = AgentInput(agent="custodian", input="wire it", caller_start=proof)
    handle = await team.client.start_workflow(
        contract.WORKFLOW_TYPE, forged, id=f"{run_id}-forged", task_queue=team.task_queue
    )
    with pytest.raises(WorkflowFailureError) as failed:
        await handle.result()
    assert "caller_start is for a run started by its caller" in str(failed.value.cause)
