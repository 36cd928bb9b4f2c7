"""The workflow of the OpenAI Agents plugin's runner (its own module: the sandbox
imports it). Written as the plugin's README writes a tool-calling agent: an
`agents.Agent` whose tool is an activity (`activity_as_tool`), run by `Runner.run`."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    import protocol
    from agents import Agent, Runner
    from temporalio.openai_agents import workflow as agents_workflow

WORKFLOW_TYPE = "OpenAIAgentsPluginLoop"


@activity.defn(name="report")
async def report(size: int, part: int) -> str:
    """Return part `part` of a report: `size` bytes of text."""
    return protocol.report_output(size, part)


@workflow.defn(name=WORKFLOW_TYPE)
class AgentsLoop:
    @workflow.run
    async def run(self, task: str) -> str:
        tool = agents_workflow.activity_as_tool(
            report, start_to_close_timeout=timedelta(seconds=60)
        )
        agent = Agent(name="bench", instructions="read every part", model="scripted", tools=[tool])
        result = await Runner.run(agent, input=task, max_turns=100_000)
        return str(result.final_output)
