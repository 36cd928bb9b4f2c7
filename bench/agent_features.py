"""What structured output and guardrails cost (issue 17's figures):
`python -m bench.agent_features`.

One run of the `plain` bench agent (free text, no tools), one of `typed` (the same,
answering with a `Verdict`, valid the first time), one of `typed` whose first answer
is invalid (one retry), and one of `checked` (`plain` with one passing input
guardrail), against the dev server and the scripted model: workflow tasks, history
events and history bytes of each, and what each adds to the plain run. Sizes do not
vary between runs of the same script, so one run each.
"""

from __future__ import annotations

import asyncio
import json

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from bench import common
from durable_agents.testing import Reply

VALID = json.dumps({"approve": True, "amount": 40.0, "reason": "within policy"})


async def measure(client: Client, agent: str, replies: list[Reply]) -> dict[str, int]:
    """Workflow tasks, events and bytes of one run of `agent` answering `replies`."""
    script = iter(replies)
    with common.scripted_model(lambda _request: next(script)) as model:
        queue = common.task_queue(agent)
        async with common.agent_worker(client, model, queue):
            handle = await common.start_run(client, agent, queue)
            await handle.result()
            history = await handle.fetch_history()
    tasks = sum(
        1 for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    )
    size = sum(e.ByteSize() for e in history.events)
    return {"workflow_tasks": tasks, "events": len(history.events), "bytes": size}


async def main() -> None:
    async with common.dev_server(common.converter()) as env:
        plain = await measure(env.client, "plain", [Reply(content="within policy")])
        typed = await measure(env.client, "typed", [Reply(content=VALID)])
        retried = await measure(
            env.client, "typed", [Reply(content='{"approve": "maybe"}'), Reply(content=VALID)]
        )
        checked = await measure(env.client, "checked", [Reply(content="within policy")])
    print("one run each (workflow tasks / events / history bytes), and what it adds to plain")
    runs = (
        ("plain", plain),
        ("typed, valid first", typed),
        ("typed, 1 retry", retried),
        ("1 passing guardrail", checked),
    )
    for label, run in runs:
        extra = {k: run[k] - plain[k] for k in run}
        print(
            f"  {label:<20} {run['workflow_tasks']:>3} / {run['events']:>3} / {run['bytes']:>6,}"
            f"   (+{extra['workflow_tasks']} / +{extra['events']} / +{extra['bytes']:,})"
        )


if __name__ == "__main__":
    asyncio.run(main())
