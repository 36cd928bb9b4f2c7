"""An activity's failure as the activity gate sends and takes it
(`durable_agents.gate_interceptor`): the workers' tag over the call and what the failure
says, as its last detail, so a run takes a failure (which its model may read) only from
our activities."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from durable_agents import gate
from durable_agents.gate import GateKeys


def fields(call: list[str], message: str, kind: str, final: bool) -> list[str]:
    """What a failure's tag is over: the call's fields and what the failure says."""
    return ["failure", *call[1:], gate.digest([message, kind, final])]


def tagged(keys: GateKeys, call: list[str], err: Exception) -> ApplicationError:
    """`err` as the ApplicationError the SDK would send (same message, type, retry
    behaviour and details), with the workers' tag over it as its last detail: a run
    takes an activity's failure, which its model may read, only from our activities."""
    if isinstance(err, ApplicationError):
        message, kind, final = err.message, err.type or "", err.non_retryable
        details, delay, category = list(err.details), err.next_retry_delay, err.category
    else:
        message, kind, final = str(err), type(err).__name__, False
        details, delay, category = [], None, ApplicationErrorCategory.UNSPECIFIED
    mac = gate.tag(keys, fields(call, message, kind, final))
    return ApplicationError(
        message,
        *details,
        {gate.FAILURE_TAG_FIELD: mac},
        type=kind,
        non_retryable=final,
        next_retry_delay=delay,
        category=category,
    )
