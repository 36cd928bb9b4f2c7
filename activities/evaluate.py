"""The `evaluate_call` activity: an approval policy's evaluator on one waiting call
(`ApprovalPolicy.evaluator`; `workflows.evaluations` says what its verdict does).

A function evaluator is `(arguments: dict, context: ApprovalContext) -> Verdict`, sync
or async (a dict with the same fields will do). An agent evaluator's model is asked
the request the run built (held to its budgets); its reply must be the verdict as a
JSON object. Whatever is not a verdict, and a function that raises, comes back as
`escalate` with the reason: the call then waits for a person.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from durable_agents.activities.approval_rules import ApprovalContext, call_judge
from durable_agents.activities.heartbeat import heartbeating
from durable_agents.activities.model_api import ModelActivities
from durable_agents.activities.registry import AgentRegistry
from durable_agents.workflows.check_payloads import EvaluationRequest, EvaluationResult
from durable_agents.workflows.contract import ACTIVITY_EVALUATE_CALL
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from temporalio import activity

REASON_CHARS = 2_000


class Verdict(BaseModel):
    """What an evaluator says of a waiting call."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "reject", "escalate"]
    """`approve` counts only within the policy's `auto_approve_within`; `escalate`: a
    person decides."""
    reason: str | None = Field(None, max_length=REASON_CHARS)
    """Why, for the audit and for the model (a rejection's reason reaches it)."""


class EvaluatorActivities:
    """Holds the worker's agents (their tools name the evaluators) and its model API."""

    def __init__(self, registry: AgentRegistry, model: ModelActivities) -> None:
        self._registry = registry
        self._model = model

    @activity.defn(name=ACTIVITY_EVALUATE_CALL)
    async def evaluate_call(self, request: EvaluationRequest) -> EvaluationResult:
        """Ask the call's evaluator; anything but a verdict escalates."""
        tool = self._registry.tool(request.agent, request.tool)
        policy = tool.approval if tool is not None else None
        found = policy.evaluator_object if policy is not None else None
        named = policy.evaluator if policy is not None else None
        if found is None or named is None or named.name != request.evaluator.name:
            return _escalate(
                f"this worker has no evaluator {request.evaluator.name!r} for "
                f"{request.agent}'s tool {request.tool}"
            )
        async with heartbeating():
            if request.evaluator.kind == "agent":
                return await self._ask_agent(request)
            return await _ask_function(found, request)

    async def _ask_agent(self, request: EvaluationRequest) -> EvaluationResult:
        if request.model_request is None:
            return _escalate("no model request came for the agent evaluator")
        reply = await self._model.reply(request.model_request)
        verdict = parse_verdict(reply.content or "")
        if isinstance(verdict, str):
            return _escalate(verdict, usage=reply.usage)
        return EvaluationResult(verdict=verdict.decision, reason=verdict.reason, usage=reply.usage)


async def _ask_function(fn: Any, request: EvaluationRequest) -> EvaluationResult:
    try:
        arguments = json.loads(request.arguments or "{}")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return _escalate("the arguments are not a JSON object")
    context = ApprovalContext(
        run_id=request.run_id,
        call_id=request.call_id,
        agent=request.agent,
        tool=request.tool,
        context=request.context,
    )
    try:
        answer = await call_judge(fn, arguments, context)
    except Exception as err:
        return _escalate(f"the evaluator raised {type(err).__name__}: {err}")
    try:
        verdict = answer if isinstance(answer, Verdict) else Verdict.model_validate(answer)
    except ValidationError:
        return _escalate(f"the evaluator returned {type(answer).__name__}, not a Verdict")
    return EvaluationResult(verdict=verdict.decision, reason=verdict.reason)


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def parse_verdict(text: str) -> Verdict | str:
    """The verdict an agent wrote (a JSON object, fenced or not), or why it is none."""
    try:
        return Verdict.model_validate_json(_FENCE.sub("", text.strip()))
    except ValidationError:
        return f"the evaluator's reply is not a verdict: {text[:200]!r}"


def _escalate(why: str, *, usage: Any = None) -> EvaluationResult:
    text = why if len(why) <= REASON_CHARS else why[: REASON_CHARS - 1] + "…"
    return EvaluationResult(verdict="escalate", reason=text, usage=usage)
