"""The payload that stands for one a process could not read: a reason, not an exception.

A workflow takes its signals and its input raw, so when a payload sent to it cannot
be decrypted for it (`dataplane.codec`) or its payload-store reference cannot be
resolved (`dataplane.payload_store`), the data converter hands it this payload
instead of raising: the run records the signal as refused, with the reason, rather
than failing every workflow task on it. Any other reader (an activity result, a
query answer) gets the reason as an error (`UnreadablePayloadConverter`).
"""

from __future__ import annotations

import functools

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import EncodingPayloadConverter

from durable_agents.dataplane.errors import DataPlaneError
from durable_agents.workflows.contract import ENCODING_UNDECODABLE, UNDECODABLE_REFUSED

KEY_ID_METADATA = "encryption-key-id"
"""Metadata naming the codec key that encrypted a payload (a name, never key material);
defined here, beside the payload that repeats it, and used by `dataplane.codec`."""
SOURCE_METADATA = "undecodable-source"
"""`codec` or `store`: which part could not read it."""


class UnreadablePayloadError(DataPlaneError):
    """A payload-store reference that cannot be resolved, read as a value."""


def unreadable(
    reason: str, *, source: str, refused: bool = False, key_id: str | None = None
) -> Payload:
    """The payload standing for one that cannot be read, with the reason (and the codec
    key id the payload named, if any). `refused`: refused by policy, not unreadable."""
    metadata = {"encoding": ENCODING_UNDECODABLE, SOURCE_METADATA: source.encode()}
    if refused:
        metadata[UNDECODABLE_REFUSED] = b"1"
    if key_id is not None:
        metadata[KEY_ID_METADATA] = key_id.encode()
    return Payload(metadata=metadata, data=reason.encode())


class UnreadablePayloadConverter(EncodingPayloadConverter):
    """Reads an unreadable payload as what it is: an error with the reason."""

    @property
    def encoding(self) -> str:
        return ENCODING_UNDECODABLE.decode()

    def to_payload(self, value: object) -> Payload | None:
        return None

    def from_payload(self, payload: Payload, type_hint: type | None = None) -> object:
        from durable_agents.dataplane.codec import CodecKeyError

        reason = payload.data.decode(errors="replace")
        if payload.metadata.get(SOURCE_METADATA) == b"store":
            raise UnreadablePayloadError(reason)
        key_id = payload.metadata.get(KEY_ID_METADATA)
        raise CodecKeyError(
            reason, key_id=key_id.decode(errors="replace") if key_id is not None else None
        )


class AgentPayloadConverter(PydanticPayloadConverter):
    """The pydantic payload converter that also reads unreadable payloads (as errors).

    Made once per process (`_first`); every other instance takes that one's state. The
    SDK makes a payload converter each time a data converter takes a serialization
    context (about 27 times per turn, most of them thrown away at once); built in full
    each time, replaying a 20-turn run took 259.8 ms of CPU, now 220.6 (2026-11-26,
    medians of 6 rounds of 5 replays). The state is converters that keep nothing per use (the
    pydantic one's TypeAdapter cache is then shared: one per process, thread-safe); each
    instance has its own map of them. Inside a workflow sandbox (a user's sandboxed
    workflow on our worker) it is built in full: there every run has its own copies of
    its types, which a shared cache would keep alive after the run."""

    def __init__(self) -> None:
        if workflow.unsafe.in_sandbox():
            PydanticPayloadConverter.__init__(self)
            self._set_converters(*self.converters.values(), UnreadablePayloadConverter())
            return
        self.__dict__.update(_first().__dict__)
        self.converters = dict(self.converters)  # shared converters, a map of its own


@functools.cache
def _first() -> PydanticPayloadConverter:
    first = PydanticPayloadConverter()
    first._set_converters(*first.converters.values(), UnreadablePayloadConverter())
    return first
