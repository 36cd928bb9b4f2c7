"""Model settings without Temporal: a run's settings over the agent's, what one model call
is sent, and how Chat Completions names them."""

from __future__ import annotations

import pytest
from durable_agents.activities.chat_completions import settings_options
from durable_agents.workflows import settings
from durable_agents.workflows.agent_spec import AgentSpec, ModelSettings, ToolSpec
from pydantic import ValidationError

from durable_agents import Agent

OBJECT = {"type": "object"}


def agent(**chosen) -> AgentSpec:
    tools = [ToolSpec(name="lookup", description="", parameters=OBJECT)]
    return AgentSpec(
        name="a", instructions="", model="m", tools=tools, model_settings=ModelSettings(**chosen)
    )


def test_a_run_sets_sampling_over_the_agent_and_keeps_the_rest():
    spec = agent(temperature=0.7, seed=1, extra_headers={"X-Tenant": "acme"})
    merged = settings.for_run(spec, ModelSettings(temperature=0, stop=["END"]))
    assert merged == ModelSettings(
        temperature=0, seed=1, stop=["END"], extra_headers={"X-Tenant": "acme"}
    )
    assert settings.for_run(spec, None) == spec.model_settings


@pytest.mark.parametrize(
    ("run", "why"),
    [
        (ModelSettings(extra_headers={"Authorization": "x"}), "extra_headers can be set by"),
        (ModelSettings(extra_body={"model": "x"}), "extra_body can be set by the agent only"),
        (ModelSettings(tool_choice="wire"), "tool_choice 'wire' names no tool of the agent"),
    ],
)
def test_what_a_run_may_not_set_is_refused(run, why):
    with pytest.raises(ValueError, match=why):
        settings.for_run(agent(), run)


@pytest.mark.parametrize(
    "bad",
    [
        {"temperature": -0.1},
        {"top_p": 1.5},
        {"stop": ["a", "b", "c", "d", "e"]},
        {"stop": []},
        {"reasoning_effort": "extreme"},
        {"metadata": {str(i): "x" for i in range(17)}},
        {"tool_choice": ""},
        {"seed": "7"},
        {"unknown": 1},
    ],
)
def test_hostile_settings_do_not_validate(bad):
    with pytest.raises(ValidationError):
        ModelSettings.model_validate(bad, strict=True)


def test_a_forced_tool_is_forced_until_a_tool_has_been_called():
    forced = ModelSettings(tool_choice="lookup", temperature=0)
    assert settings.for_turn(forced, tools_called=False) == forced
    assert settings.for_turn(forced, tools_called=True) == ModelSettings(temperature=0)
    assert settings.for_turn(ModelSettings(tool_choice="none"), tools_called=True) is not None
    assert settings.for_turn(ModelSettings(tool_choice="required"), tools_called=True) is None


def test_an_agent_cannot_force_a_tool_it_does_not_have():
    with pytest.raises(ValueError, match="tool_choice 'required', but the agent has no tools"):
        Agent(name="a", instructions="", model_settings=ModelSettings(tool_choice="required"))


def test_chat_completions_names_and_the_endpoint_s_own_parameters_last():
    chosen = ModelSettings(
        max_output_tokens=9,
        tool_choice="lookup",
        parallel_tool_calls=True,
        extra_body={"seed": 99, "top_k": 5},
        seed=1,
    )
    assert settings_options(chosen, tools=True) == {
        "max_completion_tokens": 9,
        "tool_choice": {"type": "function", "function": {"name": "lookup"}},
        "parallel_tool_calls": True,
        "seed": 99,
        "top_k": 5,
    }
    # parallel_tool_calls means nothing without tools (OpenAI refuses it then)
    assert "parallel_tool_calls" not in settings_options(chosen, tools=False)
