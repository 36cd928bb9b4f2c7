"""worker.py and the demo, run as a user runs them."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import signal
import socket
import sys
import uuid
from pathlib import Path

import pytest
from durable_agents.client.errors import AgentClientError
from durable_agents.client.operations import check_search_attributes
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentInput, AgentResult

from durable_agents.testing import Reply
from tests.support.dev_servers import local_server
from tests.support.runs import free_port

ROOT = Path(__file__).resolve().parents[2]


async def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120):
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    return process.returncode, out.decode(), err.decode()


def without_openai_key() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "no agents: pass --agents MODULE[,MODULE] or set AGENT_MODULES"),
        (["--agents", "nope.mod"], "cannot import agent module 'nope.mod'"),
        # a file path, as tab completion gives it: the module name to type instead (more
        # shapes: tests/unit/test_module_names.py)
        (
            ["--agents", "tests/support/agents.py"],
            "--agents tests.support.agents (not tests/support/agents.py)",
        ),
        (
            ["--agents", "tests.support.agents", "--scripted-model", "/tmp/x/m.py:reply"],
            "--scripted-model m:reply with PYTHONPATH=/tmp/x (not /tmp/x/m.py:reply)",
        ),
        (["--agents", "tests.support.agents"], "OPENAI_API_KEY is not set"),
        (
            ["--agents", "tests.support.agents", "--scripted-model", "json:nope"],
            "cannot load --scripted-model",
        ),
    ],
)
async def test_worker_refuses_to_start_with_one_clear_line(args, message):
    code, _, err = await run("worker.py", *args, env=without_openai_key())
    assert code == 1
    [line] = err.strip().splitlines()
    assert line.startswith("worker: error: ")
    assert message in line


async def test_worker_refuses_a_template_placeholder_key_and_a_bad_approver_key_list(tmp_path):
    placeholder = {**without_openai_key(), "OPENAI_API_KEY": "replace-me"}
    code, _, err = await run("worker.py", "--agents", "tests.support.agents", env=placeholder)
    assert (code, err.strip()) == (
        1,
        "worker: error: OPENAI_API_KEY is the placeholder 'replace-me': set the real key "
        "(the deploy/ templates ship placeholders on purpose)",
    )
    bad_keys = tmp_path / "keys.json"
    bad_keys.write_text('[{"key_id": "k", "owner": "alice", "public_key": "short"}]')
    listed = {**without_openai_key(), "OPENAI_API_KEY": "test-key"}
    listed["AGENT_APPROVER_KEYS"] = str(bad_keys)
    code, _, err = await run("worker.py", "--agents", "tests.support.agents", env=listed)
    assert code == 1 and err.startswith(f"worker: error: {bad_keys} is not a list of approver keys")


async def test_worker_refuses_a_bad_price_table_an_unpriced_budget_and_an_unknown_api(
    tmp_path,
):
    env = {**without_openai_key(), "OPENAI_API_KEY": "test-key"}
    prices = tmp_path / "prices.json"
    prices.write_text('{"priced-model": {"input": -1, "output": 2}}')
    code, _, err = await run(
        "worker.py", "--agents", "tests.support.agents", env={**env, "AGENT_PRICES": str(prices)}
    )
    assert code == 1 and err.startswith(f"worker: error: AGENT_PRICES ({prices}) is not a valid")
    assert "priced-model.input: Input should be greater than or equal to 0" in err
    code, _, err = await run("worker.py", "--agents", "tests.support.priced_agents", env=env)
    assert (code, err.strip()) == (  # no AGENT_PRICES: refused before connecting
        1,
        "worker: error: agents with a cost_budget need their model's price (AGENT_PRICES): "
        "spender (priced-model)",
    )
    code, _, err = await run(
        "worker.py", "--agents", "tests.support.agents", env={**env, "AGENT_MODEL_API": "soap"}
    )
    assert (code, err.strip()) == (
        1,
        "worker: error: --model-api / AGENT_MODEL_API: 'chat_completions' or 'responses', "
        "not 'soap'",
    )


async def test_the_dev_servers_data_is_private(tmp_path):
    from temporalio.contrib.pydantic import pydantic_data_converter

    from tests.support.dev_servers import ui_server

    db = tmp_path / ".temporal" / "dev.db"
    env, _ = await ui_server(db, pydantic_data_converter)
    try:
        assert (db.parent.stat().st_mode & 0o777, db.stat().st_mode & 0o777) == (0o700, 0o600)
    finally:
        await env.shutdown()


@pytest.mark.parametrize("flag", ["--port", "--ui-port"])
async def test_worker_dev_refuses_a_port_something_listens_on(tmp_path, flag):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        ports = {"--port": str(free_port()), "--ui-port": str(free_port()), flag: str(taken)}
        code, out, err = await run(
            "worker.py", "--dev", "--agents", "examples.support_agent",
            "--scripted-model", "examples.support_agent:scripted_model",
            "--dev-db", str(tmp_path / "dev.db"), *[x for kv in ports.items() for x in kv],
        )  # fmt: skip
    assert code == 1, out + err
    assert err.strip() == (
        f"worker: error: --dev: something already listens on localhost:{taken} (another dev "
        f"server?); choose a free port with {flag}, or drop --dev to use that server (with "
        "AGENT_GATE_KEYS=dev if it is a dev server only this machine reaches)"
    )
    assert "serving" not in out


async def test_worker_says_in_one_line_when_temporal_is_unreachable():
    child_env = {
        **without_openai_key(),
        "TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}",  # nothing listens there
        "OPENAI_API_KEY": "test-key",
    }
    code, _, err = await run("worker.py", "--agents", "tests.support.agents", env=child_env)
    assert code == 1
    [line] = err.strip().splitlines()
    assert line.startswith("worker: error: cannot connect to Temporal at 127.0.0.1:"), line


async def test_search_attribute_check_passes_on_a_server_that_has_them(env):
    await check_search_attributes(env.client)


async def test_search_attribute_check_names_what_is_missing_and_the_fix():
    bare = await local_server()
    try:
        with pytest.raises(AgentClientError) as caught:
            await check_search_attributes(bare.client)
    finally:
        await bare.shutdown()
    assert caught.value.message.startswith(
        "namespace 'default' lacks search attributes AgentName, AgentStatus, "
        "AgentPendingApprovals, AgentTurn, AgentTotalTokens, AgentTotalCost; register them with "
        "`agentctl setup` or: "
        "temporal operator search-attribute create --name AgentName --type Keyword;"
    )


async def offline_demo(module: str, tmp_path) -> tuple[int, str, str]:
    """Run a demo as `make demo` does, on free ports, with no OpenAI key."""
    ports = ("--port", str(free_port()), "--ui-port", str(free_port()))
    dev_db = ("--dev-db", str(tmp_path / "dev.db"))
    return await run("-m", module, "--exit", *ports, *dev_db, env=without_openai_key())


async def test_demo_runs_offline_end_to_end(tmp_path):
    code, out, err = await offline_demo("examples.demo", tmp_path)
    assert code == 0, out + err
    assert "scripted, offline OpenAI-compatible endpoint" in out
    assert "awaiting_approval · turn 2 · 1 pending approval" in out
    assert "issue_refund" in out
    assert "completed · turn 3" in out
    assert "Refunded 40.00 EUR for order A12." in out
    # every command it shows runs as shown, pasted in the repository's folder where
    # `make demo` runs: the programs by the path a shell finds them at (not on PATH)
    shown = [shlex.split(line[2:]) for line in out.splitlines() if line.startswith("$ ")]
    # (python or python3: the interpreter the venv's scripts name, as `make demo` ran it)
    assert [argv[0] for argv in shown[1:]] == [".venv/bin/agentctl"] * 5
    assert shown[0][0] in {".venv/bin/python", ".venv/bin/python3"}, shown[0]
    assert shown[0][1] == "worker.py"
    for argv in shown:
        assert os.access(ROOT / argv[0], os.X_OK), argv
    [last] = [line for line in out.splitlines() if line.startswith("Done. Its whole")]
    assert last.startswith("Done. Its whole conversation: .venv/bin/agentctl --address ")
    assert shlex.split(last.split(": ", 1)[1])[-2] == "state"


async def test_mcp_demo_runs_offline_end_to_end(tmp_path):
    """`make demo-mcp`: a stdio MCP server's tools, one run at once, one approved."""
    code, out, err = await offline_demo("examples.mcp_demo", tmp_path)
    assert code == 0, out + err
    assert "  tickets_find_ticket · MCP tickets/find_ticket · no approval" in out
    assert "  tickets_close_ticket · MCP tickets/close_ticket · approval" in out
    assert "tickets_close_ticket  " in out  # pending, waiting for the approval
    assert "Done: T-100 closed: fixed, confirmed by the user" in out


async def test_team_demo_runs_offline_end_to_end(tmp_path):
    """`make demo-team`: an agent called as a tool, a handoff, one approval."""
    code, out, err = await offline_demo("examples.team_demo", tmp_path)
    assert code == 0, out + err
    assert " · agent triage → billing · " in out  # agentctl status
    assert re.search(r"└ \[[^\]]+\] triage-demo-\w+/\S+ · researcher · completed", out)
    assert "Done: Refunded 40.00 EUR for order A12. Sorry for the trouble." in out


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.8.9.10/v1", True),
        ("http://[::1]:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://localhost.example.com/v1", False),
        ("http://127.0.0.1@example.com/v1", False),
        ("http://10.0.0.5:8000/v1", False),
        ("http://[::1/v1", False),
        ("", False),
        ("not a url", False),
    ],
)
def test_only_an_endpoint_on_this_machine_may_go_without_a_key(url, local):
    from durable_agents.worker import is_loopback

    assert is_loopback(url) is local


@pytest.mark.parametrize("key", ["test-key", None], ids=["with-key", "keyless-local"])
async def test_worker_connects_through_temporal_env_config_and_openai_env(env, model_server, key):
    """`python worker.py` (no --dev): TEMPORAL_ADDRESS and OPENAI_BASE_URL decide
    where it connects; a run started on its task queue completes through it. A local
    endpoint (vLLM, Ollama) needs no OPENAI_API_KEY."""
    model_server.script(Reply(content="from the env-configured endpoint"))
    task_queue = f"env-{uuid.uuid4().hex[:8]}"
    child_env = {
        **without_openai_key(),
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": env.client.namespace,
        "OPENAI_BASE_URL": model_server.base_url,
        "AGENT_MODULES": "tests.support.agents",
        "AGENT_TASK_QUEUE": task_queue,
    }
    if key is not None:
        child_env["OPENAI_API_KEY"] = key
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "worker.py",
        cwd=ROOT,
        env=child_env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        if key is None:
            assert line.decode().startswith("worker: OPENAI_API_KEY is not set: calling 127.0.0.1:")
            line = await asyncio.wait_for(process.stdout.readline(), 30)
        served = (
            b"serving agents asker, assistant, concierge, custodian, decider, digester, forgetful, "
            b"frugal, guarded, marathon, quick, sleepy, support, tally, thinker, treasurer, tuned "
            b"on task queue"
        )
        assert served in line, line
        handle = await env.client.start_workflow(
            contract.WORKFLOW_TYPE,
            AgentInput(agent="assistant", input="hi"),
            id=f"env-{uuid.uuid4().hex[:8]}",
            task_queue=task_queue,
            result_type=AgentResult,
        )
        result = await asyncio.wait_for(handle.result(), 30)
        assert result.final_output == "from the env-configured endpoint"
        assert model_server.requests[0]["model"] == "test-model"
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
