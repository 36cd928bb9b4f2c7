"""Failures without worker stack traces, with bounded messages and cause chains
(durable_agents.dataplane.failures), encrypted or not."""

from __future__ import annotations

from temporalio.api.failure.v1 import Failure
from temporalio.exceptions import ApplicationError

from durable_agents.dataplane.codec import codec_data_converter
from durable_agents.dataplane.failures import MAX_CAUSES, MAX_MESSAGE_CHARS
from tests.unit.test_codec import B64_A, keys


def raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as caught:  # with a traceback, as a worker's error has one
        return caught


def chain(depth: int) -> BaseException:
    error: BaseException = raised(ValueError("root cause"))
    for n in range(depth):
        try:
            raise ApplicationError(f"level {n}", type="Wrapped") from error
        except ApplicationError as caught:
            error = caught
    return error


def causes(failure: Failure) -> list[Failure]:
    found = [failure]
    while found[-1].HasField("cause"):
        found.append(found[-1].cause)
    return found


async def test_no_stack_trace_nor_path_anywhere_in_the_chain():
    converter = codec_data_converter(None)
    failure = Failure()
    await converter.encode_failure(chain(3), failure)
    assert [f.message for f in causes(failure)] == ["level 2", "level 1", "level 0", "root cause"]
    assert all(f.stack_trace == "" for f in causes(failure))
    assert b".py" not in failure.SerializeToString()
    assert causes(failure)[0].application_failure_info.type == "Wrapped"
    decoded = await converter.decode_failure(failure)
    assert isinstance(decoded, ApplicationError) and decoded.message == "level 2"
    assert decoded.__cause__.message == "level 1"


async def test_a_huge_message_is_cut_and_a_deep_chain_bounded():
    converter = codec_data_converter(None)
    failure = Failure()
    await converter.encode_failure(ApplicationError("<html>" + "x" * 100_000), failure)
    assert len(failure.message) == MAX_MESSAGE_CHARS and failure.message.endswith("…")
    deep = Failure()
    await converter.encode_failure(chain(30), deep)
    assert len(causes(deep)) == MAX_CAUSES
    assert deep.ByteSize() < 2_000


async def test_encrypted_failures_keep_their_message_and_lose_their_trace():
    converter = codec_data_converter(keys(f"k1:{B64_A}"))
    failure = Failure()
    await converter.encode_failure(chain(1), failure)
    assert failure.message == "Encoded failure" and failure.cause.message == "Encoded failure"
    assert b"root cause" not in failure.SerializeToString()
    decoded = await converter.decode_failure(failure)
    assert decoded.message == "level 0" and decoded.__cause__.message == "root cause"
    assert not getattr(decoded, "stack_trace", None)


async def test_a_decoded_failure_raised_again_is_encrypted_again():
    converter = codec_data_converter(keys(f"k1:{B64_A}"))
    first = Failure()
    await converter.encode_failure(ApplicationError("card 4111 declined", type="Declined"), first)
    decoded = await converter.decode_failure(first)  # keeps the failure, message in clear
    again = Failure()
    await converter.encode_failure(decoded, again)  # e.g. a tool that lets it propagate
    assert b"4111" not in again.SerializeToString() and again.message == "Encoded failure"
    try:
        raise RuntimeError("the sub-run failed") from decoded
    except RuntimeError as wrapped:
        outer = Failure()
        await converter.encode_failure(wrapped, outer)
    assert b"4111" not in outer.SerializeToString()
    back = await converter.decode_failure(outer)
    assert back.message == "the sub-run failed" and back.__cause__.message == "card 4111 declined"


async def test_a_long_chain_keeps_its_root_cause_what_the_model_is_told():
    converter = codec_data_converter(None)
    failure = Failure()
    await converter.encode_failure(chain(12), failure)
    kept = [f.message for f in causes(failure)]
    assert len(kept) == MAX_CAUSES
    assert kept[0] == "level 11" and kept[-1] == "root cause"
