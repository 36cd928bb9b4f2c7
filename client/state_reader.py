"""A run's whole RunState read through `get_state`, page by page.

`get_state` answers at most a bounded size (`workflows.state_pages`): the whole
state when it fits, else a first page with cut values. This puts the pages and
the cut values together again, checks each answer against what was asked (an
answer that does not move the read on is refused, so a faulty worker cannot
keep it looping), each cut value's length and SHA-256, and the whole state's
digest; it reads again, up to three times, when the run moved on in between. A
worker of a build before pages answers the whole state to the first query:
nothing more is asked.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any, cast

from durable_agents.client.errors import AgentClientError
from durable_agents.workflows import contract
from durable_agents.workflows.state import RunState
from durable_agents.workflows.state_pages import MAX_PAGE_BYTES, CutText, StatePage
from pydantic_core import to_json
from temporalio.client import WorkflowHandle

StateQuery = Callable[[dict[str, Any] | None], Awaitable[dict[str, Any]]]
"""Sends `get_state` to the run (None: without argument) and returns the JSON answer."""

ATTEMPTS = 3


def querying(handle: WorkflowHandle[Any, Any]) -> StateQuery:
    """`get_state` sent to the run of `handle`, as `read_state` asks it."""

    async def get_state(argument: dict[str, Any] | None) -> dict[str, Any]:
        args = [] if argument is None else [argument]
        answer = await handle.query(contract.QUERY_GET_STATE, args=args, result_type=dict[str, Any])
        return cast(dict[str, Any], answer)

    return get_state


class StateReadError(AgentClientError):
    """The pages of a run's state could not be put together."""


class _MovedOn(Exception):
    """An answer came from another state than the first one's."""


async def read_state(query: StateQuery, *, page_bytes: int = MAX_PAGE_BYTES) -> RunState:
    """The run's whole RunState, however large, read `page_bytes` at a time after the
    first answer: a client whose converter has no payload store asks for
    `DEFAULT_PAGE_BYTES`, which stay inline under the store's default threshold."""
    for _ in range(ATTEMPTS):
        first = await query(None)
        if not isinstance(first, dict):
            raise StateReadError(f"get_state answered {type(first).__name__}, not a state")
        page_data = first.pop("page", None)
        if page_data is None:
            return _validated(first)
        page = StatePage.model_validate(page_data)
        try:
            return _validated(await _assemble(query, first, page, page_bytes))
        except _MovedOn:
            continue
    raise StateReadError(
        f"the run's state changed while it was read, {ATTEMPTS} times in a row; try again"
    )


async def _assemble(
    query: StateQuery, document: dict[str, Any], first: StatePage, page_bytes: int
) -> dict[str, Any]:
    digest, total = first.state_sha256, first.total_items
    cuts = {cut.pointer: cut for cut in first.cut}
    items = list(document["items"])
    next_item = first.next_item
    while next_item is not None:
        asked = {"from_item": next_item, "max_bytes": page_bytes, "state_sha256": digest}
        answer = await query(asked)
        page = _page_of(answer, digest, total)
        got = answer.get("items")
        end = total if page.next_item is None else page.next_item
        if page.from_item != next_item or not next_item < end <= total:
            raise StateReadError(
                f"get_state answered items {page.from_item}..{end}, not from {next_item}"
            )
        if not isinstance(got, list) or len(got) != end - next_item:
            raise StateReadError(f"get_state answered the wrong number of items from {next_item}")
        items += got
        cuts.update((cut.pointer, cut) for cut in page.cut)
        next_item = page.next_item
    if len(items) != total:
        raise StateReadError(f"read {len(items)} items of the run's {total}")
    document["items"] = items
    for cut in cuts.values():
        text = await _read_text(query, cut, digest, total, page_bytes)
        _put(document, cut.pointer, text if cut.kind == "string" else json.loads(text))
    if hashlib.sha256(to_json(document)).hexdigest() != digest:
        raise StateReadError("the state read from its pages does not match its digest")
    return document


async def _read_text(
    query: StateQuery, cut: CutText, digest: str, total: int, page_bytes: int
) -> str:
    parts: list[str] = []
    offset: int | None = 0
    while offset is not None:
        asked = {
            "text": cut.pointer,
            "offset": offset,
            "max_bytes": page_bytes,
            "state_sha256": digest,
        }
        chunk = _page_of(await query(asked), digest, total).text
        if chunk is None or chunk.pointer != cut.pointer or chunk.offset != offset:
            raise StateReadError(f"get_state answered no text of {cut.pointer} at {offset}")
        end = offset + len(chunk.text)
        if not chunk.text or end > cut.chars or chunk.next_offset not in (None, end):
            raise StateReadError(f"get_state answered a text of {cut.pointer} that does not fit")
        parts.append(chunk.text)
        offset = chunk.next_offset
    text = "".join(parts)
    if len(text) != cut.chars or hashlib.sha256(text.encode()).hexdigest() != cut.sha256:
        raise StateReadError(f"the text read at {cut.pointer} does not match its digest")
    return text


def _page_of(answer: Any, digest: str, total: int) -> StatePage:
    if not isinstance(answer, dict) or "page" not in answer:
        raise StateReadError("get_state answered without a page to a paged read")
    page = StatePage.model_validate(answer["page"])
    if page.state_sha256 != digest:
        raise _MovedOn
    if page.total_items != total:
        raise StateReadError("get_state answered another number of items for the same state")
    return page


def _put(document: Any, pointer: str, value: Any) -> None:
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]
    for token in tokens[:-1]:
        document = document[int(token)] if isinstance(document, list) else document[token]
    last = tokens[-1]
    if isinstance(document, list):
        document[int(last)] = value
    else:
        document[last] = value


def _validated(document: dict[str, Any]) -> RunState:
    return RunState.model_validate_json(json.dumps(document))
