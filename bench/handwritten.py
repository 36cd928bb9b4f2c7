"""A peer for the comparison in `bench.peers`: the agent loop as most people first write
it on Temporal. The whole conversation is the workflow's state and goes into every
model activity; each tool call is an activity; no approvals, no snapshots, no limits.
Served by its runner's worker (`bench/peer_runners/handwritten.py`)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():  # the activities' client, never the loop's
    from openai import AsyncOpenAI

WORKFLOW_TYPE = "HandwrittenAgentLoop"
MODEL = "scripted"


class Activities:
    """The model call (the real `openai` client) and the one tool, `report`."""

    def __init__(self, model: AsyncOpenAI) -> None:
        self._model = model

    @activity.defn(name="handwritten_call_model")
    async def call_model(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        tools = [
            {
                "type": "function",
                "function": {
                    "name": "report",
                    "parameters": {
                        "type": "object",
                        "properties": {"size": {"type": "integer"}, "part": {"type": "integer"}},
                    },
                },
            }
        ]
        reply = await self._model.chat.completions.create(
            model=MODEL,
            messages=messages,  # type: ignore[arg-type]
            tools=tools,  # type: ignore[arg-type]
        )
        return reply.choices[0].message.model_dump(exclude_none=True)

    @activity.defn(name="handwritten_report")
    async def report(self, arguments: str) -> str:
        given = json.loads(arguments)
        head = f"part {given['part']}: "
        return head + "x" * max(given["size"] - len(head), 0)


@workflow.defn(name=WORKFLOW_TYPE)
class HandwrittenLoop:
    @workflow.run
    async def run(self, task: str) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        options = {"start_to_close_timeout": timedelta(seconds=60)}
        while True:
            reply = await workflow.execute_activity(
                "handwritten_call_model", messages, result_type=dict, **options
            )
            messages.append(reply)
            calls = reply.get("tool_calls") or []
            if not calls:
                return str(reply.get("content") or "")
            for call in calls:
                output = await workflow.execute_activity(
                    "handwritten_report", call["function"]["arguments"], result_type=str, **options
                )
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
