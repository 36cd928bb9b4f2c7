"""An agent whose conversation carries marker strings, for the encryption tests.

Each marker stands for one kind of content that must never reach Temporal's
history in plain text: the prompt, a tool argument, a tool output, a failure
message, the model's answer.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

from durable_agents import Agent, tool

PROMPT_MARKER = "PROMPT-MARKER-7f3a"
ARGUMENT_MARKER = "ARGUMENT-MARKER-91bc"
OUTPUT_MARKER = "OUTPUT-MARKER-c4d2"
FAILURE_MARKER = "FAILURE-MARKER-e85f"
ANSWER_MARKER = "ANSWER-MARKER-0b6e"
REASON_MARKER = "REASON-MARKER-5a91"
"""For the approval reason an operator sends with the `temporal` CLI."""
MARKERS = (PROMPT_MARKER, ARGUMENT_MARKER, OUTPUT_MARKER, FAILURE_MARKER, ANSWER_MARKER)

CONTEXT_MARKER = "CONTEXT-MARKER-3d17"
"""In the run's `context` (handed to tools, never to the model)."""
DECISION_MARKER = "DECISION-MARKER-8c40"
"""The reason of a `decide` update."""
EDITED_MARKER = "EDITED-MARKER-f2a6"
"""Arguments an approver puts in place of the model's (`decide` with `arguments`)."""
MESSAGE_MARKER = "MESSAGE-MARKER-61e9"
"""A session's next user message (`send_message`)."""
END_MARKER = "END-MARKER-b5c3"
"""The reason given to `end_session`."""
SESSION_MARKERS = (
    PROMPT_MARKER,
    ARGUMENT_MARKER,
    CONTEXT_MARKER,
    DECISION_MARKER,
    EDITED_MARKER,
    MESSAGE_MARKER,
    END_MARKER,
)
REFUSAL_MARKER = "REFUSAL-MARKER-47d0"
"""In a model provider's 400 answer that echoes the prompt: the run's failure message."""


@tool
def lookup(query: str) -> str:
    """Look something up; the answer carries the output marker."""
    return f"found {OUTPUT_MARKER} for {query}"


@tool(
    retry_policy=RetryPolicy(
        initial_interval=timedelta(milliseconds=50), maximum_attempts=2, backoff_coefficient=1.0
    )
)
def explode(reason: str) -> str:
    """Always fails; the failure message carries the failure marker."""
    raise RuntimeError(f"exploded: {FAILURE_MARKER}")


@tool(needs_approval=True)
def disclose(topic: str) -> str:
    """Disclose something (needs a person's approval)."""
    return f"disclosed {topic}"


keeper = Agent(
    name="keeper",
    instructions="You keep secrets.",
    model="test-model",
    tools=[lookup, explode, disclose],
    max_turns=4,
)
