"""`agentctl answer`: what it adds to a decision (the answer's JSON, read and checked).

The run is the authority on an answer: it checks it against the tool's answer schema
(`workflows.answers`) and refuses it with the field that does not match. The command
checks the same first, with the same code and the schema `agentctl pending` shows, so
a typo is reported before anything is sent; the `decide` update then carries it, and
a refusal comes back at once.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from durable_agents.client.errors import AgentClientError
from durable_agents.client.render import safe
from durable_agents.workflows import answers, limits
from durable_agents.workflows.agent_spec import ToolSpec
from durable_agents.workflows.payloads import PendingApproval


def add_result_argument(sub: argparse.ArgumentParser) -> None:
    """`--result JSON`, required."""
    sub.add_argument(
        "--result",
        required=True,
        metavar="JSON",
        help="the answer, as JSON matching the answer schema `agentctl pending` shows "
        "(a string answer is a JSON string: '\"yes\"'); @FILE reads it from a file",
    )


def parse_result(text: str) -> Any:
    """`--result` as JSON (from the file after `@`); bad JSON is an `AgentClientError`
    that says where."""
    if text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as file:
                text = file.read()
        except OSError as err:
            raise AgentClientError(f"--result {safe(text[:200])}: {err.strerror}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise AgentClientError(
            f"--result is not valid JSON: {err.msg} (line {err.lineno}, column {err.colno}); "
            "a string answer is quoted: '\"yes\"'"
        ) from None
    except RecursionError:
        raise AgentClientError(
            f"--result nests too deeply (at most {limits.MAX_ANSWER_DEPTH} levels)"
        ) from None
    if limits.json_depth(value) > limits.MAX_ANSWER_DEPTH:
        raise AgentClientError(
            f"--result nests too deeply (at most {limits.MAX_ANSWER_DEPTH} levels)"
        )
    return value


def check_kind(shown: PendingApproval, decision: str, result: Any) -> None:
    """Refuse here what the run would refuse: an approval of a call waiting for an
    answer, an answer to one waiting for approval, an answer its schema refuses."""
    name = safe(shown.call_id)
    if decision == "approve" and shown.kind == "answer":
        raise AgentClientError(
            f"call {name} ({safe(shown.tool)}) waits for an answer, not an approval: "
            f"agentctl answer RUN_ID {name} --result JSON (or reject it)"
        )
    if decision != "answer":
        return
    if shown.kind != "answer":
        raise AgentClientError(
            f"call {name} ({safe(shown.tool)}) waits for approve or reject; it takes no answer"
        )
    tool = ToolSpec(
        name=shown.tool, description="", parameters={}, answer_schema=shown.answer_schema
    )
    problem = answers.result_problem(tool, result)
    if problem is not None:
        raise AgentClientError(
            f"--result does not match the answer schema of {safe(shown.tool)}: {safe(problem)}; "
            "nothing sent (agentctl pending shows the schema)"
        )
