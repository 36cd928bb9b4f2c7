"""The payload that stands for one a process could not read: a reason, not an exception.

A workflow takes its signals and its input raw, so when a payload sent to it cannot
be decrypted for it (`dataplane.codec`) or its payload-store reference cannot be
resolved (`dataplane.payload_store`), the data converter hands it this payload
instead of raising: the run records the signal as refused, with the reason, rather
than failing every workflow task on it. Any other reader (an activity result, a
query answer) gets the reason as an error (`UnreadablePayloadConverter`).
"""

from __future__ import annotations

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
    """The pydantic payload converter that also reads unreadable payloads (as errors)."""

    def __init__(self) -> None:
        super().__init__()
        self._set_converters(*self.converters.values(), UnreadablePayloadConverter())
