"""Model settings against the real dev server, worker and scripted model: each reaches the
HTTP request as sent, a run overrides the sampling ones at start (agentctl --setting),
and neither a start input nor a resumed snapshot can set the agent-only ones."""

from __future__ import annotations

import asyncio

import pytest
from durable_agents.workflows.agent_spec import ModelSettings
from durable_agents.workflows.payloads import AgentResult
from durable_agents.workflows.state import RunStatus

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply
from tests.support.cli_support import bound_to
from tests.support.runs import refused_start, start, state_of, wait_for_status

AGENT_SETTINGS = {
    "temperature": 0.3,
    "top_p": 0.8,
    "max_completion_tokens": 256,
    "tool_choice": {"type": "function", "function": {"name": "add"}},
    "parallel_tool_calls": False,
    "reasoning_effort": "low",
    "seed": 11,
    "stop": ["END"],
    "metadata": {"team": "qa"},
    "top_k": 40,
}


async def finished(handle) -> AgentResult:
    async with asyncio.timeout(30):
        return await handle.result()


async def test_every_setting_reaches_the_request_as_sent(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)), Reply("3"))
    handle = await start(worker, "add", agent="tuned")
    assert (await finished(handle)).status is RunStatus.COMPLETED
    first, second = model_server.requests
    assert {k: first[k] for k in AGENT_SETTINGS} == AGENT_SETTINGS
    # Once the forced tool has been called, the choice is the model's again.
    assert "tool_choice" not in second
    assert {k: second[k] for k in AGENT_SETTINGS if k != "tool_choice"} == {
        k: v for k, v in AGENT_SETTINGS.items() if k != "tool_choice"
    }
    assert [h["x-tenant"] for h in model_server.headers] == ["acme", "acme"]
    state = await state_of(handle)
    assert state.model_settings == state.agent.model_settings


async def test_a_run_overrides_the_sampling_settings_at_start(worker, model_server):
    model_server.script(Reply("3"))
    ctl = bound_to(worker)
    started = await ctl(
        "start", "tuned", "add", "--setting", "temperature=0", "--setting", 'stop=["STOP"]',
        "--setting", "tool_choice=none",
    )  # fmt: skip
    assert started.code == 0, started.stderr
    handle = worker.client.get_workflow_handle(started.stdout.strip(), result_type=AgentResult)
    assert (await finished(handle)).status is RunStatus.COMPLETED
    [body] = model_server.requests
    assert (body["temperature"], body["stop"], body["tool_choice"]) == (0, ["STOP"], "none")
    assert body["seed"] == 11 and body["top_k"] == 40  # the agent's others stay
    recorded = (await state_of(handle)).model_settings
    assert (recorded.temperature, recorded.stop, recorded.seed) == (0.0, ["STOP"], 11)


async def test_agentctl_refuses_a_setting_that_does_not_exist(worker):
    ctl = bound_to(worker)
    bad = await ctl("start", "tuned", "add", "--setting", "temprature=0")
    assert bad.code != 0 and "temprature: Extra inputs are not permitted" in bad.stderr
    odd = await ctl("start", "tuned", "add", "--setting", "temperature")
    assert odd.code != 0 and "expected NAME=VALUE" in odd.stderr


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        (
            {"extra_headers": {"Authorization": "Bearer someone-elses"}},
            "extra_headers can be set by the agent only, not by a start input",
        ),
        ({"extra_body": {"model": "gpt-x"}}, "extra_body can be set by the agent only"),
        ({"tool_choice": "wire_money"}, "tool_choice 'wire_money' names no tool of the agent"),
        ({"temperature": 9}, "temperature: Input should be less than or equal to 2"),
        ({"max_output_tokens": 0}, "max_output_tokens: Input should be greater than or equal"),
    ],
    ids=["headers", "body", "unknown-tool", "temperature", "tokens"],
)
async def test_a_start_input_cannot_set_what_only_the_agent_may(
    worker, model_server, tmp_path, settings, why
):
    start_input = {"agent": "tuned", "input": "add", "model_settings": settings}
    assert why in await refused_start(worker, tmp_path, start_input)
    assert model_server.requests == []


async def test_a_resumed_snapshot_cannot_smuggle_headers_or_body(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)))
    source = await start(worker, "add", agent="tuned")
    await wait_for_status(source, RunStatus.RUNNING)
    async with asyncio.timeout(15):
        while len(model_server.requests) < 1:
            await asyncio.sleep(0.05)
    await source.terminate("snapshot taken")
    state = await state_of(source)
    forged = state.model_copy(
        update={
            "model_settings": ModelSettings(
                temperature=1.5,
                extra_headers={"Authorization": "Bearer someone-elses", "X-Tenant": "evil"},
                extra_body={"model": "expensive-model"},
            )
        }
    )
    model_server.script(Reply("3"))
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    resumed = await agents.resume(forged)
    handle = worker.client.get_workflow_handle(resumed.id, result_type=AgentResult)
    assert (await finished(handle)).status is RunStatus.COMPLETED
    body, headers = model_server.requests[-1], model_server.headers[-1]
    assert body["temperature"] == 1.5  # a sampling choice the run may make
    assert headers["x-tenant"] == "acme" and headers["authorization"] == "Bearer test"
    assert body["model"] != "expensive-model" and body["top_k"] == 40
    settings = (await state_of(handle)).model_settings
    assert settings.extra_headers == {"X-Tenant": "acme"}
