"""AgentsPlugin in a user's own application: its own `client` package, its own Temporal
Client and Worker serving its own workflow, our agents added by the plugin alone."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from durable_agents import AgentsPlugin
from durable_agents.plugin import AgentsPluginError
from durable_agents.testing import Call, Reply
from tests.support import agents

GREETER = """
from datetime import timedelta

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    import client  # the application's own package called `client`


@activity.defn
async def greet(name: str) -> str:
    return client.greeting(name)


@workflow.defn
class Greeter:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(
            greet, name, start_to_close_timeout=timedelta(seconds=10)
        )
"""

APP = '''
import asyncio, gc, json, sys

from openai import AsyncOpenAI
from temporalio.client import Client
from temporalio.runtime import Runtime, TelemetryConfig
from temporalio.worker import Worker

from durable_agents import Agent, AgentInput, AgentsPlugin, tool
from greeter import Greeter, greet


@tool
def shout(text: str) -> str:
    """Shout."""
    return text.upper()


helper = Agent(name="helper", instructions="Help.", model="m", tools=[shout])


async def main(address: str, model_url: str, task_queue: str) -> None:
    plugin = AgentsPlugin(
        agents=[helper], model_client=AsyncOpenAI(base_url=model_url, api_key="x", max_retries=0)
    )
    # a runtime of its own, let go of before the process exits (docs: own-worker.md)
    runtime = Runtime(telemetry=TelemetryConfig())
    temporal = await Client.connect(address, plugins=[plugin], runtime=runtime)
    async with Worker(temporal, task_queue=task_queue, workflows=[Greeter], activities=[greet]):
        greeting = await temporal.execute_workflow(
            Greeter.run, "ann", id=f"{task_queue}-greet", task_queue=task_queue
        )
        result = await temporal.execute_workflow(
            "AgentWorkflow",
            AgentInput(agent="helper", input="say hi"),
            id=f"{task_queue}-agent",
            task_queue=task_queue,
        )
    print(json.dumps({"greeting": greeting, "agent": result}))


asyncio.run(main(*sys.argv[1:]))
gc.collect()
'''


async def test_a_user_app_with_its_own_client_package_runs_our_agents(
    env, model_server, tmp_path: Path
):
    (tmp_path / "client").mkdir()
    (tmp_path / "client" / "__init__.py").write_text(
        'def greeting(name):\n    return f"hello {name}, from the app\'s own client package"\n'
    )
    (tmp_path / "greeter.py").write_text(textwrap.dedent(GREETER))
    (tmp_path / "app.py").write_text(textwrap.dedent(APP))
    model_server.script(Reply(tool_calls=(Call("shout", {"text": "hi"}),)), Reply(content="HI"))
    address = env.client.service_client.config.target_host
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "app.py",
        address,
        model_server.base_url,
        "user-app",
        cwd=tmp_path,  # the app's `client` package comes first on its path
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()
    answer = json.loads(out.decode().strip().splitlines()[-1])
    assert answer["greeting"] == "hello ann, from the app's own client package"
    assert answer["agent"]["status"] == "completed" and answer["agent"]["final_output"] == "HI"
    [tool_result] = [m for m in model_server.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_result["content"] == "HI"


async def test_our_folders_imported_as_top_level_packages_say_where_to_import_from():
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from activities import Agent",
        cwd=Path(__file__).resolve().parents[2],
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await process.communicate()
    assert process.returncode == 1
    assert err.decode().strip().splitlines()[-1] == (
        "ImportError: import durable_agents.activities, not activities: everything installs "
        "under the durable_agents namespace (agents: `from durable_agents import Agent, tool`)"
    )


async def test_a_worker_whose_client_lacks_the_plugin_is_refused(env):
    plugin = AgentsPlugin(agents=[agents.assistant], model_client=_openai())
    bare = await Client.connect(env.client.service_client.config.target_host)
    with pytest.raises(AgentsPluginError, match=r"add the plugin to Client\.connect"):
        Worker(bare, task_queue="refused", plugins=[plugin])


async def test_a_client_with_a_converter_of_its_own_is_refused(env):
    plugin = AgentsPlugin(agents=[agents.assistant])
    with pytest.raises(AgentsPluginError, match="has a data converter of its own"):
        await Client.connect(
            env.client.service_client.config.target_host,
            data_converter=pydantic_data_converter,
            plugins=[plugin],
        )


def _openai():
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x", max_retries=0)


async def test_a_worker_that_lists_agent_workflow_itself_gets_it_once(env):
    from durable_agents.workflows.agent_workflow import AgentWorkflow

    plugin = AgentsPlugin(agents=[agents.assistant], model_client=_openai())
    client = await Client.connect(env.client.service_client.config.target_host, plugins=[plugin])
    worker = Worker(client, task_queue="listed", workflows=[AgentWorkflow])
    assert worker.config()["workflows"] == [AgentWorkflow]


async def test_codec_and_payload_store_given_to_the_plugin_build_its_converter(tmp_path):
    from temporalio.converter import ExternalStorage

    from durable_agents.dataplane.codec import CodecKeys, EncryptionCodec, new_key_entry
    from durable_agents.dataplane.payload_store import GuardedStorage, LocalDirectoryDriver

    keys = CodecKeys.parse(new_key_entry("k1"))
    store = ExternalStorage(drivers=[LocalDirectoryDriver(tmp_path)], payload_size_threshold=100)
    plugin = AgentsPlugin(codec=keys, payload_store=store)
    guarded = plugin.converter.external_storage  # refuses what it cannot resolve
    assert isinstance(guarded, GuardedStorage) and guarded.drivers == store.drivers
    assert guarded.payload_size_threshold == 100
    assert isinstance(plugin.converter.payload_codec, EncryptionCodec)
    with pytest.raises(AgentsPluginError, match="either data_converter or codec/payload_store"):
        AgentsPlugin(codec=keys, data_converter=pydantic_data_converter)


SHOP = """
from datetime import timedelta

import openai  # at the top, not passed through: what a user's module does
from temporalio import activity, workflow

from durable_agents import Agent, tool


@activity.defn
async def price(item: str) -> str:
    return f"{item}: 3 EUR (openai {bool(openai.__version__)})"


@workflow.defn
class Shop:
    @workflow.run
    async def run(self, item: str) -> str:
        return await workflow.execute_activity(
            price, item, start_to_close_timeout=timedelta(seconds=10)
        )
"""

SHOP_APP = APP.replace("from greeter import Greeter, greet", "from shop import Shop, price")
SHOP_APP = SHOP_APP.replace(
    "workflows=[Greeter], activities=[greet]", "workflows=[Shop], activities=[price]"
)
SHOP_APP = SHOP_APP.replace('Greeter.run, "ann"', 'Shop.run, "tea"')


async def test_a_user_workflow_module_that_imports_openai_at_the_top_runs_with_the_plugin(
    env, model_server, tmp_path: Path
):
    (tmp_path / "shop.py").write_text(textwrap.dedent(SHOP))
    (tmp_path / "app.py").write_text(textwrap.dedent(SHOP_APP))
    model_server.script(Reply(tool_calls=(Call("shout", {"text": "hi"}),)), Reply(content="HI"))
    address = env.client.service_client.config.target_host
    process = await asyncio.create_subprocess_exec(
        sys.executable, "app.py", address, model_server.base_url, "user-shop",
        cwd=tmp_path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()  # was: Failed validating workflow Shop
    assert "RestrictedWorkflowAccessError" not in err.decode()
    answer = json.loads(out.decode().strip().splitlines()[-1])
    assert answer["greeting"] == "tea: 3 EUR (openai True)"
    assert answer["agent"]["status"] == "completed" and answer["agent"]["final_output"] == "HI"
