"""What agentctl prints of a run is what a model, a signaller or a forged file wrote:
escaped where it could steer a terminal, masked where it is sensitive."""

from __future__ import annotations

from datetime import UTC, datetime

from durable_agents.client import cli, render
from durable_agents.workflows import loop
from durable_agents.workflows.agent_spec import AgentSpec, ToolSpec
from durable_agents.workflows.payloads import AgentInput, AgentResult, ModelReply, ModelToolCall
from durable_agents.workflows.run_items import Usage
from durable_agents.workflows.state import ErrorInfo, RunStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PAY = ToolSpec(name="pay", description="", parameters={"type": "object"}, sensitive=["card"])
DESK = AgentSpec(name="desk", instructions="", model="m", tools=[PAY])
HIDE = "\x1b[2K\r\x1b[8m"


def test_a_models_answer_and_call_names_reach_the_terminal_escaped():
    answer = AgentResult(
        status=RunStatus.COMPLETED,
        final_output=f"done{HIDE}\u202eevil\nsecond line",
        turn=1,
        usage=Usage(),
    )
    shown = render.result(answer)
    assert "\x1b" not in shown and "\u202e" not in shown
    assert shown.endswith("done\\u{1b}[2K\\u{d}\\u{1b}[8m\\u{202e}evil\nsecond line")
    state = loop.new_state(DESK, AgentInput(agent="desk", input="hi"), run_id=f"r{HIDE}", now=T0)
    call = ModelToolCall(call_id="c1", tool=f"pay{HIDE}calls lookup", arguments="{}")
    loop.record_model_reply(state, ModelReply(tool_calls=[call]), now=T0)
    state.error = ErrorInfo(type=f"X{HIDE}", message=f"failed{HIDE}")
    printed = render.state(state)
    assert "\x1b" not in printed and "\r" not in printed
    assert "calls pay\\u{1b}[2K\\u{d}\\u{1b}[8mcalls lookup({}) [c1]" in printed


def test_calls_of_an_agent_the_run_no_longer_has_show_no_values():
    # After a handoff the state holds the new agent: the old one's sensitive names are
    # not known, so every value of its calls is masked.
    state = loop.new_state(DESK, AgentInput(agent="desk", input="hi"), run_id="r", now=T0)
    arguments = '{"card": "4111111111111111", "amount": 5}'
    call = ModelToolCall(call_id="c1", tool="pay", arguments=arguments)
    loop.record_model_reply(state, ModelReply(tool_calls=[call]), now=T0)
    assert 'pay({"card":"<sensitive, 16 chars>","amount":5})' in render.state(state)
    state.agent = AgentSpec(name="billing", instructions="", model="m")
    shown = render.state(state)
    assert "4111" not in shown
    assert 'pay({"card":"<sensitive, 16 chars>","amount":"<sens…) [c1]' in shown
    assert "4111111111111111" in render.state(state, reveal=True)


def test_json_output_escapes_every_character_past_ascii_and_stays_the_same_json():
    import json

    text = json.dumps({"a": f"x\u202e\x9b{HIDE}😀 Zürich"}, ensure_ascii=False)
    shown = render.ascii_json(text)
    assert shown.isascii() and json.loads(shown) == json.loads(text)


async def test_a_call_id_pending_in_the_run_and_below_it_needs_in_to_say_which():
    import pytest
    from durable_agents.client.errors import AgentClientError
    from durable_agents.workflows.payloads import PendingApproval

    def waiting(run_id: str | None, tool: str) -> PendingApproval:
        return PendingApproval(
            call_id="c1", tool=tool, arguments="{}", requested_at=T0, run_id=run_id
        )

    class Pending:  # what `agentctl pending lead-1` lists
        async def pending(self, run_id: str) -> list[PendingApproval]:
            return [waiting("lead-1/c9", "notify"), waiting(None, "wire_money")]

    with pytest.raises(AgentClientError, match=r"pending in 2 runs under lead-1 .*--in RUN_ID"):
        await cli._pending_call(Pending(), "lead-1", "c1")  # type: ignore[arg-type]
    own = await cli._pending_call(Pending(), "lead-1", "c1", "lead-1")  # type: ignore[arg-type]
    below = await cli._pending_call(Pending(), "lead-1", "c1", "lead-1/c9")  # type: ignore[arg-type]
    assert (own.tool, below.tool) == ("wire_money", "notify")
