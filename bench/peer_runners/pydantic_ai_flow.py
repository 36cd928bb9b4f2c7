"""The workflow of the Pydantic AI runner (its own module: the sandbox imports it).
Written as Pydantic AI's docs write a durable agent: an `Agent` with the
`TemporalDurability` capability (model requests and tool calls become activities),
listed on the workflow in `__pydantic_ai_agents__`. The model is the scripted server
over Chat Completions (`openai-chat:`, OPENAI_BASE_URL read on the worker)."""

from __future__ import annotations

from typing import ClassVar

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.usage import UsageLimits
from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import protocol

WORKFLOW_TYPE = "PydanticAIDurabilityLoop"


def report(size: int, part: int) -> str:
    """Return part `part` of a report: `size` bytes of text."""
    return protocol.report_output(size, part)


agent = Agent(
    "openai-chat:scripted",
    name="bench",
    instructions="read every part",
    tools=[report],
    capabilities=[TemporalDurability()],
)


@workflow.defn(name=WORKFLOW_TYPE)
class PydanticAILoop:
    __pydantic_ai_agents__: ClassVar = [agent]  # the plugin registers its activities

    @workflow.run
    async def run(self, task: str) -> str:
        result = await agent.run(task, usage_limits=UsageLimits(request_limit=None))
        return str(result.output)
