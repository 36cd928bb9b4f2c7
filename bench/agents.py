"""The agents the benchmarks run; also served by a separate worker process
(`python worker.py --agents bench.agents`), so nothing here may need the bench.

Tools are `async` so that no thread hop is measured as runtime overhead (a
sync tool runs in a thread, see `activities.tool.Tool.invoke`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

from durable_agents.activities import Agent, tool
from pydantic import BaseModel

from durable_agents import ContextPolicy, GuardrailResult, input_guardrail

MANY_TURNS = 2_000
"""max_turns of the bench agents: the responder, not the agent, ends a run."""


@tool
async def echo(text: str) -> str:
    """Return the text (a no-op tool: the runtime's cost is what is measured)."""
    return text


@tool
async def nap(ms: int) -> str:
    """Sleep `ms` milliseconds, then say when it started and ended (perf_counter)."""
    began = time.perf_counter()
    await asyncio.sleep(ms / 1000)
    return f"{began} {time.perf_counter()}"


@tool
async def report(size: int, part: int) -> str:
    """Return part `part` of a report: `size` bytes of text."""
    head = f"part {part}: "
    return head + "x" * max(size - len(head), 0)


@tool(needs_approval=True)
async def stamp() -> str:
    """Needs approval; returns the wall-clock time (time.time()) at which it started."""
    return repr(time.time())


bench = Agent(
    name="bench",
    instructions="bench",
    model="scripted",
    tools=[echo, nap],
    max_turns=MANY_TURNS,
    turns_per_workflow_run=MANY_TURNS,
)
"""Per-turn overhead and parallel tools: no continue-as-new inside a measured run."""


@tool(name="echo", local=True)
async def echo_local(text: str) -> str:
    """Return the text, as a local activity (`@tool(local=True)`)."""
    return text


bench_local = dataclasses.replace(bench, name="bench_local", tools=[echo_local, nap])
"""`bench` with its no-op tool local: what a local tool saves per turn."""

history = Agent(
    name="history",
    instructions="read every part",
    model="scripted",
    tools=[report],
    max_turns=MANY_TURNS,
)
"""History growth with the default continue-as-new budget (300 model calls per Temporal run)."""

approval = Agent(name="approval", instructions="ask first", model="scripted", tools=[stamp])
"""Concurrency: each run parks on one approval, then the tool stamps its start."""


class Verdict(BaseModel):
    """A structured answer (bench.structured_output)."""

    approve: bool
    amount: float
    reason: str | None


plain = Agent(name="plain", instructions="answer", model="scripted")
"""Free text, no tools: the baseline of bench.structured_output."""
typed = Agent(name="typed", instructions="answer", model="scripted", output_type=Verdict)
"""The same, answering with a Verdict."""


@input_guardrail
def polite(text: str) -> GuardrailResult:
    """Passes every message (bench.agent_features: what a passing guardrail costs)."""
    return GuardrailResult(tripped=False)


checked = Agent(name="checked", instructions="answer", model="scripted", input_guardrails=[polite])
"""`plain` with one passing input guardrail."""

looped = Agent(name="looped", instructions="echo", model="scripted", tools=[echo], max_turns=50)
"""A tool loop over Chat Completions (bench.agent_features: the Responses API's cost)."""
reasoned = Agent(
    name="reasoned",
    instructions="echo",
    model="scripted",
    tools=[echo],
    max_turns=50,
    model_api="responses",
)
"""The same loop over the Responses API, each reply with a reasoning item."""


@tool
async def dump(part: int) -> str:
    """Return part `part` of a long document: 2,400 characters."""
    return f"part {part}: " + "d" * 2_390


stubbing = Agent(
    name="stubbing",
    instructions="read",
    model="scripted",
    tools=[dump],
    context=ContextPolicy(max_input_tokens=2_500, keep_recent_turns=2),
)
"""bench.context_window: a long session, older tool outputs stubbed (then dropped)."""
summarizing = Agent(
    name="summarizing",
    instructions="read",
    model="scripted",
    tools=[dump],
    context=ContextPolicy(max_input_tokens=2_500, strategy="summarize", keep_recent_turns=2),
)
"""The same session, the older turns summarized."""


@tool(needs_approval=True)
async def search(query: str = "", limit: int = 0) -> str:
    """Web search (never approved in the benchmarks: resumed runs wait on one)."""
    return f"results for {query!r}"


researcher = Agent(name="researcher", instructions="Search, then answer.", model="scripted",
                   tools=[search], max_turns=MANY_TURNS)  # fmt: skip
"""The agent of `bench.states`' runs: a resumed one is described by its agent's name."""
