"""Approvals across a tree of runs: `python -m bench.tree_approvals [--runs N]`.

On one dev server and one worker, with the scripted model over HTTP answering at once:
a caller runs the mailer as a tool (a child run) whose notice waits for a decision. The
`decide` update is sent either to the child itself, or to the caller, which passes it
down (a signal) and answers once the child's report with the answer is back (another
signal). Reported: the update's round trip each way (median, p90), the time from the
child waiting to the caller listing its call, and what the tree protocol adds to the
caller's history per child approval (events, bytes).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from durable_agents.activities.registry import AgentRegistry
from durable_agents.client.state_reader import querying, read_state
from durable_agents.workflows import agent_calls, contract
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError

from bench import common
from durable_agents import Agent, tool
from durable_agents.testing import Call, Reply
from durable_agents.worker import build_worker


@tool(needs_approval=True)
def notify(to: str) -> str:
    """Send a notice (needs approval)."""
    return f"notified {to}"


mailer = Agent(name="mailer", instructions="", model="mail-model", tools=[notify])
caller = Agent(name="caller", instructions="", model="caller-model", tools=[mailer.as_tool()])

TREE_SIGNALS = (contract.SIGNAL_SUB_RUN_REPORT,)


def respond(request: dict) -> Reply:
    answered = any(m["role"] == "tool" for m in request["messages"])
    if request["model"] == "mail-model":
        return Reply("sent") if answered else Reply(tool_calls=(Call("notify", {"to": "ann"}),))
    return (
        Reply("done") if answered else Reply(tool_calls=(Call("mailer", {"input": "tell"}, "c1"),))
    )


async def pending_of(handle, *, below: bool) -> dict:
    while True:
        try:
            pending = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
        except (RPCError, WorkflowQueryFailedError):  # the child is not there yet
            pending = []
        if pending and (len(pending[0].get("path", [])) > 1) == below:
            return pending[0]
        await asyncio.sleep(0.005)


async def child_of(handle, call_id: str) -> str:
    """The id the run started its child for `call_id` under, as its state records it
    (the id has a part only the workers' gate keys make)."""
    while True:
        try:
            found = agent_calls.child_of(await read_state(querying(handle)), call_id)
        except (RPCError, WorkflowQueryFailedError):  # not started yet
            found = None
        if found is not None:
            return found
        await asyncio.sleep(0.005)


async def one_run(client, queue: str, via_caller: bool) -> dict[str, float]:
    handle = await common.start_run(client, "caller", queue)
    child = client.get_workflow_handle(await child_of(handle, "c1"))
    own = await pending_of(child, below=False)
    waiting = time.perf_counter()
    await pending_of(handle, below=True)
    listed = time.perf_counter() - waiting
    target = handle if via_caller else child
    started = time.perf_counter()
    await target.execute_update(
        contract.UPDATE_DECIDE,
        {"call_id": own["call_id"], "decision": "approve", "approver": "ann"},
    )
    took = time.perf_counter() - started
    await handle.result()
    history = await handle.fetch_history()
    tree = [
        e
        for e in history.events
        if (
            e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
            and e.workflow_execution_signaled_event_attributes.signal_name in TREE_SIGNALS
        )
        or e.event_type
        in (
            EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
            EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED,
        )
    ]
    return {
        "decide ms": took * 1000,
        "listed ms": listed * 1000,
        "tree events": len(tree),
        "tree bytes": sum(e.ByteSize() for e in tree),
    }


async def measure(runs: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    with common.scripted_model(respond) as model:
        async with common.dev_server(common.converter()) as env:
            queue = common.task_queue("tree-approvals")
            registry = AgentRegistry([caller, mailer])
            worker = build_worker(
                env.client, registry=registry, model_client=model, task_queue=queue
            )
            async with worker:
                for via in (False, True):  # warm up
                    await one_run(env.client, queue, via)
                for _ in range(runs):
                    for via, name in ((False, "child"), (True, "caller")):
                        for key, value in (await one_run(env.client, queue, via)).items():
                            found.setdefault(f"{name} {key}", []).append(value)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    found = asyncio.run(measure(args.runs))
    print(f"runs: {args.runs} each way, one child approval (median / p90)")
    for name, what in (("child", "decide sent to the child"), ("caller", "decide via the caller")):
        ms = found[f"{name} decide ms"]
        print(f"  {what:26s}: {common.median(ms):5.0f} / {common.percentile(ms, 90):5.0f} ms")
    listed = found["caller listed ms"] + found["child listed ms"]
    print(
        f"  child waits -> caller lists it: {common.median(listed):5.0f} / "
        f"{common.percentile(listed, 90):5.0f} ms"
    )
    for name in ("child", "caller"):
        events = common.median(found[f"{name} tree events"])
        size = common.median(found[f"{name} tree bytes"])
        print(
            f"  caller history, tree protocol ({name} decides): {events:.0f} events, {size:.0f} B"
        )


if __name__ == "__main__":
    main()
