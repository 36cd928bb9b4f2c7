"""The release rule's net (docs/explanation/determinism-and-releases.md): a change to
what a run writes, made without a patch, must fail the replay of the recorded
histories. Here such a change is made on purpose — a build whose model calls each wait
one second first — and the recorded approval run must not replay on it, while it does
on the real workflow."""

from __future__ import annotations

from datetime import timedelta

from durable_agents.workflows import contract, loop, raw_payloads
from durable_agents.workflows.agent_workflow import AgentWorkflow
from durable_agents.workflows.payloads import AgentResult, ModelReply
from durable_agents.workflows.state import RunState
from durable_agents.workflows.webhook_delivery import WebhookDeliveryWorkflow
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.common import RawValue
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_agents.gate_interceptor import GateInterceptor
from tests.support.histories import HISTORIES, recorded_id


@workflow.defn(name=contract.WORKFLOW_TYPE, sandboxed=False)
class WaitsBeforeEachModelCall(AgentWorkflow):
    """The deliberately broken build: a timer no recorded run has, with no patch."""

    @workflow.init
    def __init__(self, raw_input: RawValue = raw_payloads.NONE) -> None:
        super().__init__(raw_input)

    @workflow.run
    async def run(self, raw_input: RawValue = raw_payloads.NONE) -> AgentResult:
        return await super().run(raw_input)

    async def call_model(self, state: RunState, step: loop.CallModel) -> ModelReply | None:
        await workflow.sleep(timedelta(seconds=1))
        return await super().call_model(state, step)


async def replay(workflow_class: type) -> Exception | None:
    path = HISTORIES / "approvals.json"
    history = WorkflowHistory.from_json(recorded_id(path), path.read_text())
    replayer = Replayer(
        interceptors=[GateInterceptor(None)],
        workflows=[workflow_class, WebhookDeliveryWorkflow],
        data_converter=pydantic_data_converter,
    )
    return (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


async def test_a_change_made_without_a_patch_fails_the_recorded_replay():
    assert await replay(AgentWorkflow) is None
    failure = await replay(WaitsBeforeEachModelCall)
    assert "[TMPRL1100] Nondeterminism error" in str(failure), failure
