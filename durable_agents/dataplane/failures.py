"""Failures as the Temporal UI shows them: short messages, no worker stack traces.

The SDK's failure converter puts each exception's Python stack trace (with the
worker's file paths) into the failure, for every cause in the chain. An
operator then meets a traceback where a sentence would do (an update refused
for an unknown call id), and a model call that kept failing can pass the
server's failure size limit, so that the UI shows Temporal's `Failure exceeds
size limit.` wrapper instead of the reason. This converter keeps the message
(at most `MAX_MESSAGE_CHARS`), the type, the details and the cause chain, and
drops the stack traces: the worker's log has them (each failed activity attempt
is logged with its traceback at WARNING).
"""

from __future__ import annotations

from temporalio.api.failure.v1 import Failure
from temporalio.converter import DefaultFailureConverter, PayloadConverter

MAX_MESSAGE_CHARS = 2_000
"""Longer messages (an HTML error page quoted by a client library) are cut."""
MAX_CAUSES = 8
"""A longer chain keeps its outer causes and its innermost one (the root cause, what the
model is told of a failed tool), and drops the middle."""
ENCODED = "Encoded failure"
"""The message of a failure whose message is in its (encrypted) encoded attributes."""


class CompactFailureConverter(DefaultFailureConverter):
    """`DefaultFailureConverter` without stack traces, with bounded messages and chains;
    with `encode_common_attributes`, the message is then encrypted as the SDK does."""

    def __init__(self, *, encode_common_attributes: bool = False) -> None:
        super().__init__(encode_common_attributes=False)
        self._encode = encode_common_attributes

    def to_failure(
        self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure
    ) -> None:
        super().to_failure(exception, payload_converter, failure)  # causes come through here
        compact(failure)
        encrypted = failure.HasField("encoded_attributes") and failure.message == ENCODED
        if self._encode and not encrypted:  # also a decoded failure raised again
            attributes = {"message": failure.message, "stack_trace": ""}
            failure.encoded_attributes.CopyFrom(payload_converter.to_payloads([attributes])[0])
            failure.message = ENCODED


class CompactFailureConverterWithEncodedAttributes(CompactFailureConverter):
    """The same, with the message moved into the (encrypted) encoded attributes."""

    def __init__(self) -> None:
        super().__init__(encode_common_attributes=True)


def compact(failure: Failure) -> None:
    """`failure` and its causes without stack traces, messages cut, the chain bounded
    (the outer causes and the innermost kept)."""
    chain = [failure]
    while chain[-1].HasField("cause"):
        chain.append(chain[-1].cause)
    for current in chain:
        current.stack_trace = ""
        if len(current.message) > MAX_MESSAGE_CHARS:
            current.message = current.message[: MAX_MESSAGE_CHARS - 1] + "…"
    if len(chain) > MAX_CAUSES:
        root = Failure()
        root.CopyFrom(chain[-1])
        chain[MAX_CAUSES - 2].cause.CopyFrom(root)  # the middle of the chain dropped
