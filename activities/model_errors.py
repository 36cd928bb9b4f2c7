"""How model API failures are put for Temporal's retry policy, whatever the API:
transient ones (429, 5xx, timeouts, connection errors, garbled replies) are
retryable, after the provider's `retry-after` or the policy's backoff with jitter;
the rest are non-retryable `ApplicationError`s with a `type` from the contract.
Used by each `ModelAPI` implementation (`activities.chat_completions`).
"""

from __future__ import annotations

import email.utils
import json
import math
import random
import re
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from durable_agents.workflows.contract import ERROR_MODEL_REPLY, ERROR_MODEL_UNAVAILABLE
from durable_agents.workflows.run_items import Usage
from temporalio import activity
from temporalio.exceptions import ApplicationError

MAX_RETRY_AFTER = timedelta(seconds=300)
"""Longest provider-requested wait we honour; a longer `retry-after` is cut to this."""

REQUEST_TIMEOUT_MARGIN = timedelta(seconds=2)
"""How much sooner than the activity's start-to-close timeout the HTTP request gives up."""

UNUSABLE_REPLY_ATTEMPTS = 3
"""Attempts after which a JSON reply that is not a completion fails the call."""

PREVIEW_CHARS = 120
"""Characters of an unusable reply quoted in the error."""


def request_timeout(client_timeout: object) -> float | None:
    """Seconds the HTTP request may take: the client's own timeout, but no more than
    the attempt's start-to-close timeout less a margin, so that a slow provider ends
    as a retryable timeout of ours rather than an attempt Temporal has already given
    up on. None: the client's timeout as it is (no budget, or the client has none)."""
    if not activity.in_activity():  # called directly (client.local_run, tests)
        return None
    budget = activity.info().start_to_close_timeout
    own = getattr(client_timeout, "read", client_timeout)  # an httpx.Timeout, or seconds
    if budget is None or not isinstance(own, int | float):
        return None
    return min(float(own), max((budget - REQUEST_TIMEOUT_MARGIN).total_seconds(), 1.0))


def retry_delay(headers: Mapping[str, str], *, now: float | None = None) -> timedelta | None:
    """The wait the provider asks for (`retry-after-ms`, then `retry-after` in seconds
    or as an HTTP date), capped at MAX_RETRY_AFTER; None if absent or unusable."""
    seconds: float | None = None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
            break
        except ValueError:
            if name == "retry-after":
                parsed = email.utils.parsedate_tz(value)
                if parsed is not None:
                    seconds = email.utils.mktime_tz(parsed) - (time.time() if now is None else now)
    if seconds is None or math.isnan(seconds) or seconds <= 0:
        return None
    return min(timedelta(seconds=min(seconds, 1e9)), MAX_RETRY_AFTER)


def unavailable(
    message: str, details: dict[str, Any] | None = None, *, delay: timedelta | None = None
) -> ApplicationError:
    """A transient failure (retried within the call's retry policy and time budget)
    after `delay` (the provider's `retry-after`), else after the policy's backoff
    with jitter, so that runs an outage held back do not all return at once."""
    return ApplicationError(
        f"model unavailable: {message}",
        *([details] if details is not None else []),
        type=ERROR_MODEL_UNAVAILABLE,
        next_retry_delay=delay or jittered_backoff(),
    )


def jittered_backoff(rng: random.Random | None = None) -> timedelta | None:
    """The retry policy's delay before the next attempt, times a random 0.5-1.0
    ("equal jitter"); None outside an activity or without a policy."""
    if not activity.in_activity():
        return None
    info = activity.info()
    policy = info.retry_policy
    if policy is None:
        return None
    base = policy.initial_interval.total_seconds() * policy.backoff_coefficient ** (
        min(info.attempt, 64) - 1
    )
    if policy.maximum_interval is not None:
        base = min(base, policy.maximum_interval.total_seconds())
    return timedelta(seconds=base * (rng or random).uniform(0.5, 1.0))


def reply_error(message: str) -> ApplicationError:
    """A JSON reply that is not a usable completion: tried again a few times (a
    gateway's hiccup), then a non-retryable ModelReplyError (a broken endpoint)."""
    attempt = activity.info().attempt if activity.in_activity() else UNUSABLE_REPLY_ATTEMPTS
    if attempt < UNUSABLE_REPLY_ATTEMPTS:
        return unavailable(f"unusable reply (attempt {attempt}): {message}")
    return ApplicationError(
        f"unusable model reply: {message}", type=ERROR_MODEL_REPLY, non_retryable=True
    )


MAX_REPORTED_TOKENS = 2**53
"""The largest token count a reply may report (what JSON numbers hold exactly)."""


def reported_usage(
    *,
    input_tokens: object,
    output_tokens: object,
    total_tokens: object,
    cached_input_tokens: object = 0,
    reasoning_tokens: object = 0,
) -> Usage:
    """A model call's usage as its reply reports it (absent counts: 0), checked: a budget
    and a price count it, so a count that is not a whole number from 0 to
    `MAX_REPORTED_TOKENS` is refused (`reply_error`), and a total below input + output
    is raised to it (a total of 1 would spend no budget)."""
    counts = {
        "input tokens": input_tokens,
        "output tokens": output_tokens,
        "total tokens": total_tokens,
        "cached input tokens": cached_input_tokens,
        "reasoning tokens": reasoning_tokens,
    }
    checked: list[int] = []
    for name, value in counts.items():
        count = 0 if value is None else value
        if isinstance(count, bool) or not isinstance(count, int):
            shown = json.dumps(count, default=str)[:60]
            raise reply_error(f"its usage reports {name} as {shown}: not a count")
        if not 0 <= count <= MAX_REPORTED_TOKENS:
            shown = str(count) if abs(count) < 10**20 else f"a {count.bit_length()}-bit number of"
            raise reply_error(f"its usage reports {shown} {name}: not a count")
        checked.append(count)
    given_input, given_output, total, cached, reasoning = checked
    return Usage(
        model_calls=1,
        input_tokens=given_input,
        output_tokens=given_output,
        total_tokens=max(total, given_input + given_output),
        cached_input_tokens=cached,
        reasoning_tokens=reasoning,
    )


_KEY_LIKE = re.compile(
    r"(?i)(\b(?:sk|rk|pk|ak|key|tok|api|org|proj|sess)[-_][A-Za-z0-9_\-*.]{8,}"
    r"|\bbearer\s+[A-Za-z0-9_\-.~+/=]{8,}"
    r"|\b[A-Za-z0-9_\-]{32,}\b)"
)


def redact(text: str) -> str:
    """`text` with key-like strings (`sk-...`, `Bearer ...`, long opaque tokens)
    replaced by `[redacted]`: a provider's error text can quote the credential it
    refused, and it ends up in history, the UI and logs."""
    return _KEY_LIKE.sub("[redacted]", text)


def preview(body: object) -> str:
    """What arrived, for an error message: its kind, size and start."""
    text = redact(body if isinstance(body, str) else json.dumps(body, default=repr))
    start = " ".join(text[:PREVIEW_CHARS].split())
    more = "…" if len(text) > PREVIEW_CHARS else ""
    return f"{len(text):,} characters: {start!r}{more}"
