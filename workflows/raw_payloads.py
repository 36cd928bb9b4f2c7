"""Decoding payloads the workflow takes raw (its input, the decision signals).

Decoded by the SDK, a payload that does not fit its model fails the workflow
task again and again (the input) or is dropped with only a worker log line (a
signal). Taken as `RawValue` and decoded here, it gets an answer: the run fails
with InvalidAgentInput, a signal is recorded as refused, with the reason.
Workflow code: uses the workflow's own payload converter, deterministic.
"""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import contract
    from durable_agents.workflows.payloads import problems

_M = TypeVar("_M", bound=BaseModel)


NONE = RawValue(Payload())
"""The default of a raw parameter: the sender sent no payload at all. (The SDK
takes a parameter raw only when its type is exactly `RawValue`.)"""


def decode(raw: RawValue, model: type[_M]) -> _M | str:
    """The payload as `model`, or why it is not one (one line)."""
    if raw is NONE:
        return "no payload"
    try:
        value = workflow.payload_converter().from_payload(raw.payload, model)
    except ValidationError as err:
        return problems(err)
    except Exception as err:  # not JSON at all, or another encoding
        cause: BaseException = err
        while cause.__cause__ is not None:
            cause = cause.__cause__
        return f"cannot decode the payload: {cause}"
    if not isinstance(value, model):  # null (`binary/null`), raw bytes (`binary/plain`)
        return f"the payload is {'null' if value is None else type(value).__name__}, not an object"
    return value


def as_json(raw: RawValue) -> object:
    """The payload as plain JSON, or None if there is none or it is not JSON."""
    if raw is NONE:
        return None
    try:
        value: object = workflow.payload_converter().from_payload(raw.payload)
        return value
    except Exception:
        return None


def field(raw: RawValue, name: str) -> object:
    """A field of a JSON object payload, as JSON, or None."""
    data = as_json(raw)
    return data.get(name) if isinstance(data, dict) else None


def string_field(raw: RawValue, name: str) -> str | None:
    """A string field of a JSON object payload, if it has one."""
    data = as_json(raw)
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def preview(raw: RawValue, limit: int) -> str | None:
    """The start of a payload as compact JSON text (at most `limit` characters), or
    its encoding and size when it is not JSON; None if nothing was sent."""
    if raw is NONE:
        return None
    data = as_json(raw)
    try:
        if data is None and raw.payload.data not in (b"", b"null"):
            raise TypeError("not JSON")
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):  # bytes (`binary/plain`), protobuf, not decodable
        encoding = raw.payload.metadata.get("encoding", b"?").decode(errors="replace")
        return f"<{encoding}, {len(raw.payload.data)} bytes>"[:limit]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unreadable(raw: RawValue) -> tuple[str, bool] | None:
    """For a payload the data converter could not read for this workflow (it cannot
    be decrypted for it, or plaintext was refused), the reason and whether it was
    refused by policy; None for any other payload."""
    if raw.payload.metadata.get("encoding") != contract.ENCODING_UNDECODABLE:
        return None
    refused = contract.UNDECODABLE_REFUSED in raw.payload.metadata
    return raw.payload.data.decode(errors="replace"), refused


def is_null(raw: RawValue) -> bool:
    """Nothing was sent, or JSON null (`binary/null`, or `null` as JSON)."""
    if raw is NONE:
        return True
    encoding = raw.payload.metadata.get("encoding", b"")
    return encoding == b"binary/null" or (
        encoding == b"json/plain" and raw.payload.data.strip() == b"null"
    )
