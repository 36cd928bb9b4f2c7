"""Run states written by the real OpenAI Agents SDK (`openai-agents`), for the tests of
`client.openai_agents_import` and `_export`: an SDK agent that mirrors the test agent
`assistant` (same name, tools `add` and `send_email`, the latter needing approval) run
against the scripted model server until it is interrupted, and its
`RunState.to_string()` kept. Never written by hand:

    .venv/bin/python -m tests.support.openai_agents_states   # rewrite tests/fixtures/openai_agents/

tests/integration/test_openai_agents.py checks that the package still writes exactly
these files.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    RunState,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from durable_agents.testing import Call, Reply, ScriptedModelServer

set_tracing_disabled(True)  # nothing leaves the machine

FIXTURES = Path(__file__).parent.parent / "fixtures" / "openai_agents"

SDK_CALLS: list[tuple[str, dict[str, Any]]] = []
"""What the SDK agent's tools did, in order."""


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    SDK_CALLS.append(("add", {"a": a, "b": b}))
    return a + b


@function_tool(needs_approval=True)
def send_email(to: str, body: str) -> str:
    """Send an email (needs a person's approval)."""
    SDK_CALLS.append(("send_email", {"to": to, "body": body}))
    return f"sent to {to}"


def sdk_agent(server: ScriptedModelServer, *, responses: bool = False) -> Agent:
    """The SDK's twin of the test agent `assistant`, talking to `server`."""
    client = AsyncOpenAI(base_url=server.base_url, api_key="scripted")
    model = (
        OpenAIResponsesModel(model="test-model", openai_client=client)
        if responses
        else OpenAIChatCompletionsModel(model="test-model", openai_client=client)
    )
    return Agent(
        name="assistant",
        instructions="You are a test assistant.",
        model=model,
        tools=[add, send_email],
    )


EMAIL_AND_ADD = Reply(
    content="On it.",
    tool_calls=(
        Call("add", {"a": 2, "b": 3}, call_id="call_add"),
        Call("send_email", {"to": "a@b.c", "body": "hello"}, call_id="call_mail"),
    ),
    usage=(40, 12),
)


async def _interrupted_chat(server: ScriptedModelServer) -> RunState:
    """One reply: `add` (ran) and `send_email` (waits for approval)."""
    server.script(EMAIL_AND_ADD)
    result = await Runner.run(sdk_agent(server), "Add 2 and 3, then email a@b.c")
    return result.to_state()


async def _interrupted_responses(server: ScriptedModelServer) -> RunState:
    """The same with the Responses API: a reasoning item, real item ids."""
    server.script(
        Reply(
            content="On it.",
            reasoning=("add first, then the email",),
            tool_calls=EMAIL_AND_ADD.tool_calls,
            usage=(40, 12),
            reasoning_tokens=5,
        )
    )
    result = await Runner.run(sdk_agent(server, responses=True), "Add 2 and 3, then email a@b.c")
    return result.to_state()


async def _second_message(server: ScriptedModelServer) -> RunState:
    """A conversation's second user message (the first answered), then a wait."""
    agent = sdk_agent(server)
    server.script(Reply(content="Hello! How can I help?", usage=(10, 5)))
    first = await Runner.run(agent, "hi")
    server.script(
        Reply(
            tool_calls=(Call("send_email", {"to": "b@c.d", "body": "hi"}, call_id="call_b"),),
            usage=(30, 9),
        )
    )
    history = [*first.to_input_list(), {"role": "user", "content": "Email b@c.d"}]
    result = await Runner.run(agent, history)
    return result.to_state()


async def _decided(server: ScriptedModelServer) -> RunState:
    """Two calls waiting; one approved, one rejected with a message, before resuming."""
    agent = sdk_agent(server)
    server.script(
        Reply(
            tool_calls=(
                Call("send_email", {"to": "a@b.c", "body": "one"}, call_id="call_m1"),
                Call("send_email", {"to": "x@y.z", "body": "two"}, call_id="call_m2"),
            ),
            usage=(25, 10),
        )
    )
    result = await Runner.run(agent, "Send both emails")
    state = result.to_state()
    waiting = {item.call_id: item for item in state.get_interruptions()}
    state.approve(waiting["call_m1"])
    state.reject(waiting["call_m2"], rejection_message="not to that address")
    return state


async def _handoff(server: ScriptedModelServer) -> RunState:
    """A triage agent hands over to `assistant`, which then waits for approval."""
    agent = sdk_agent(server)
    triage = Agent(
        name="triage",
        instructions="Hand over to the assistant.",
        model=agent.model,
        handoffs=[agent],
    )
    server.script(
        Reply(tool_calls=(Call("transfer_to_assistant", {}, call_id="call_h"),), usage=(9, 3)),
        Reply(
            tool_calls=(Call("send_email", {"to": "h@o.ff", "body": "x"}, call_id="call_hm"),),
            usage=(20, 6),
        ),
    )
    result = await Runner.run(triage, "Please email h@o.ff")
    return result.to_state()


async def _hosted_tool(server: ScriptedModelServer) -> RunState:
    """An input that carries a hosted web search the SDK's model ran, then a wait."""
    server.script(
        Reply(
            tool_calls=(Call("send_email", {"to": "w@e.b", "body": "found"}, call_id="call_w"),),
            usage=(30, 8),
        )
    )
    searched = {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "weather"},
    }
    history = [{"role": "user", "content": "Search, then email w@e.b"}, searched]
    result = await Runner.run(sdk_agent(server, responses=True), history)
    return result.to_state()


async def _finished(server: ScriptedModelServer) -> RunState:
    """A run that ended with its final answer: nothing waits."""
    server.script(Reply(content="Hello!", usage=(8, 2)))
    result = await Runner.run(sdk_agent(server), "hi")
    return result.to_state()


SCENARIOS: dict[str, Callable[[ScriptedModelServer], Awaitable[RunState]]] = {
    "interrupted-chat": _interrupted_chat,
    "interrupted-responses": _interrupted_responses,
    "second-message": _second_message,
    "decided": _decided,
    "handoff": _handoff,
    "hosted-tool": _hosted_tool,
    "finished": _finished,
}
"""Fixture name -> how the SDK gets there."""


async def written() -> dict[str, str]:
    """Each scenario's `to_string()`, as the installed package writes it now."""
    found = {}
    for name, scenario in SCENARIOS.items():
        with ScriptedModelServer() as server:
            found[name] = (await scenario(server)).to_string()
    return found


def fixture(name: str) -> str:
    """A committed SDK run state."""
    return (FIXTURES / f"{name}.json").read_text(encoding="utf-8")


def fixture_json(name: str) -> dict[str, Any]:
    return json.loads(fixture(name))


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, text in asyncio.run(written()).items():
        (FIXTURES / f"{name}.json").write_text(text + "\n", encoding="utf-8")
        print(f"wrote {FIXTURES / name}.json")


if __name__ == "__main__":
    main()
