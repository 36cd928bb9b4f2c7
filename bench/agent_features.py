"""What structured output, guardrails and the Responses API cost (issue 17's figures):
`python -m bench.agent_features`.

One run of the `plain` bench agent (free text, no tools), one of `typed` (the same,
answering with a `Verdict`, valid the first time), one of `typed` whose first answer
is invalid (one retry), and one of `checked` (`plain` with one passing input
guardrail), against the dev server and the scripted model: workflow tasks, history
events and history bytes of each, and what each adds to the plain run. Then a loop
of 10 tool calls over Chat Completions (`looped`) and over the Responses API
(`reasoned`), each reply carrying a reasoning item of `THOUGHT` characters (about
the size of OpenAI's encrypted reasoning): what keeping reasoning in the run costs.
The last row is the Responses loop with a payload store (worker.py's default: payloads
of 16 KiB or more kept out of history, by reference). Sizes do not vary between runs
of the same script, so one run each.
"""

from __future__ import annotations

import asyncio
import json
import tempfile

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from bench import common
from durable_agents.testing import Call, Reply

VALID = json.dumps({"approve": True, "amount": 40.0, "reason": "within policy"})
LOOP = 10
"""Tool calls in the loop runs."""
THOUGHT = "t" * 1_500
"""One reasoning summary; its sealed copy is about as long."""


def loop_replies(reasoning: tuple[str, ...]) -> list[Reply]:
    calls = [
        Reply(tool_calls=(Call("echo", {"text": f"step {n}"}),), reasoning=reasoning)
        for n in range(LOOP)
    ]
    return [*calls, Reply(content="done", reasoning=reasoning)]


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
        looped = await measure(env.client, "looped", loop_replies(()))
        reasoned = await measure(env.client, "reasoned", loop_replies((THOUGHT,)))
    with tempfile.TemporaryDirectory() as store:  # worker.py's default: a payload store
        async with common.dev_server(common.converter(store)) as env:
            stored = await measure(env.client, "reasoned", loop_replies((THOUGHT,)))
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

    print(f"a loop of {LOOP} tool calls (workflow tasks / events / history bytes)")
    extra = {k: reasoned[k] - looped[k] for k in reasoned}
    loops = (
        ("chat completions", looped),
        ("responses + reasoning", reasoned),
        ("the same, store on", stored),
    )
    for label, run in loops:
        print(f"  {label:<22} {run['workflow_tasks']:>3} / {run['events']:>3} / {run['bytes']:>7,}")
    print(
        f"  reasoning kept in the run: +{extra['bytes']:,} bytes "
        f"({extra['bytes'] / (LOOP + 1):,.0f} per reply of {len(THOUGHT):,} characters)"
    )


if __name__ == "__main__":
    asyncio.run(main())
