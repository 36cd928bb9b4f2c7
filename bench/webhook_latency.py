"""Webhooks: `python -m bench.webhook_latency [--runs N]`.

N runs of an agent whose one tool call needs approval, on one dev server and one
worker, with a local receiver that verifies each delivery (`standardwebhooks`) and
answers 204. Reports the time from a call becoming pending (the event's
`requested_at`, workflow time) to the receiver accepting its `approval_requested`
delivery (p50, p99), and what webhooks add to a run's own history: the run is
approved, finishes, and its history is compared with the same run on an agent
without webhooks (events and bytes, per delivery: the run sends three, approval
requested, decided, finished; its reports of the first two reach it, the last one
finds it ended).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import time
from datetime import datetime

from durable_agents.activities.registry import AgentRegistry
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import DecisionSignal

from bench import common
from durable_agents import Agent, ToolContext, WebhookSubscription, tool
from durable_agents.testing import Call, Reply
from durable_agents.webhooks import Endpoint
from durable_agents.worker import build_worker
from tests.support.webhook_receiver import WebhookReceiver

SECRET = "whsec_" + "YmVuY2gtd2ViaG9vay1zZWNyZXQtMDEyMzQ1Njc4"
EVENTS = ["approval_requested", "approval_decided", "run_finished"]


@tool(needs_approval=True)
def refund(amount: int, ctx: ToolContext) -> str:
    """Refund an amount (a person approves it)."""
    return f"refunded {amount}"


quiet = Agent(name="quiet", instructions="", model="m", tools=[refund], max_turns=4)
notified = dataclasses.replace(
    quiet, name="notified", webhooks=[WebhookSubscription(endpoint="desk", events=EVENTS)]
)


def respond(request: dict) -> Reply:
    if any(m["role"] == "tool" for m in request["messages"]):
        return Reply(content="done")
    return Reply(tool_calls=(Call("refund", {"amount": 5}, "c1"),))


async def one_run(client, queue: str, agent: str, receiver: WebhookReceiver | None):
    handle = await common.start_run(client, agent, queue)
    latency = None

    def mine(kind: str | None = None) -> list:
        found = receiver.accepted() if receiver is not None else []
        return [
            d for d in found if d.event["run_id"] == handle.id and kind in (None, d.event["type"])
        ]

    if receiver is not None:
        while not mine("approval_requested"):
            await asyncio.sleep(0.002)
        accepted = time.time()
        asked = mine("approval_requested")[0].event["requested_at"]
        latency = (
            accepted - datetime.fromisoformat(asked.replace("Z", "+00:00")).timestamp()
        ) * 1000
    else:
        while not await handle.query(contract.QUERY_GET_PENDING_APPROVALS):
            await asyncio.sleep(0.01)
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="c1", approver="ann"))
    await handle.result()
    while receiver is not None and len(mine()) < 3:  # every delivery in before measuring
        await asyncio.sleep(0.01)
    history = await handle.fetch_history()
    return latency, len(history.events), sum(e.ByteSize() for e in history.events)


async def measure(runs: int) -> dict[str, list[float]]:
    os.environ.setdefault("AGENT_WEBHOOK_ALLOW", "127.0.0.1")
    found: dict[str, list[float]] = {"latency": [], "events+": [], "bytes+": []}
    with WebhookReceiver(SECRET) as receiver:
        # worker-wide, the endpoint takes only `paused` (none here): `quiet` sends nothing
        desk = Endpoint(name="desk", url=receiver.url, events=("paused",), secrets=(SECRET,))
        async with common.dev_server(common.converter()) as env:
            with common.scripted_model(respond) as model:
                queue = common.task_queue("hooks")
                worker = build_worker(
                    env.client,
                    registry=AgentRegistry([quiet, notified]),
                    model_client=model,
                    task_queue=queue,
                    webhook_endpoints={"desk": desk},
                )
                async with worker:
                    await one_run(env.client, queue, "notified", receiver)  # warm up
                    for _ in range(runs):
                        _, base_events, base_bytes = await one_run(env.client, queue, "quiet", None)
                        latency, events, size = await one_run(
                            env.client, queue, "notified", receiver
                        )
                        found["latency"].append(latency or 0.0)
                        found["events+"].append(events - base_events)
                        found["bytes+"].append(size - base_bytes)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    found = asyncio.run(measure(args.runs))
    latency = found["latency"]
    print(f"runs: {args.runs}")
    print(
        f"pending -> webhook accepted: p50 {common.percentile(latency, 50):.0f} ms, "
        f"p99 {common.percentile(latency, 99):.0f} ms"
    )
    events, size = common.median(found["events+"]), common.median(found["bytes+"])
    print(
        f"run history added by webhooks (median): {events:.0f} events, {size:.0f} bytes "
        f"for 3 deliveries: {events / 3:.1f} events, {size / 3:.0f} bytes per delivery"
    )


if __name__ == "__main__":
    main()
