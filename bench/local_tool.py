"""A prototype, for measuring only: AgentWorkflow with `run_tool` as a LOCAL activity.

A local activity runs in the worker that runs the workflow task, and its result
is recorded with the next workflow task completion: no activity task through
the server and one workflow task less per turn. Registered under its own name
(`BenchLocalToolAgent`) so it never mixes with the pinned `AgentWorkflow`.
The change it measures would be, in `workflows/activity_calls.py` `run_tool`:
`workflow.execute_local_activity` instead of `workflow.execute_activity` for
tools declared fast (e.g. `@tool(local=True)`), same timeout and retry policy.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows.activity_calls import run_tool
    from durable_agents.workflows.agent_workflow import AgentWorkflow
    from durable_agents.workflows.payloads import AgentResult, ToolOutcome
    from durable_agents.workflows.state import RunState, ToolCall

WORKFLOW_TYPE = "BenchLocalToolAgent"


@workflow.defn(name=WORKFLOW_TYPE)
class LocalToolAgentWorkflow(AgentWorkflow):
    """AgentWorkflow, but every tool call is a local activity."""

    # The same signatures as AgentWorkflow's (a subclass declares its own init and run).
    @workflow.init
    def __init__(self, raw_input: RawValue) -> None:
        super().__init__(raw_input)

    @workflow.run
    async def run(self, raw_input: RawValue) -> AgentResult:
        return await super().run(raw_input)

    async def _run_tool(self, state: RunState, call: ToolCall) -> ToolOutcome:
        return await run_tool(state, call, execute=workflow.execute_local_activity)
