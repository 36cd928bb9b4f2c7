"""`get_state` answers of bounded size, so that any client reads a run's state.

A query answer over the payload store's threshold (16 KiB by default) is stored
like any large payload, and a client without our converter (the `temporal`
CLI, a Go or TypeScript service) then receives a reference to the worker's
store instead of the state. So `get_state` answers at most `max_bytes` of JSON
(14,000 by default, inline under the default threshold):

- the whole RunState (without integrity block) when it fits: exactly what it
  answered before pages existed, with no `page` field;
- else a page: the RunState's fields with the items from `from_item` that fit,
  strings over 200 characters cut to a preview where needed (each listed in
  `page.cut` with its JSON pointer, length and SHA-256), and `page.next_item`;
- with `text` (the JSON pointer of a cut string): that string, from `offset`
  (in Unicode code points), as much as fits, in `page.text`.

Every page carries `state_sha256`, the digest of the whole state when it was
read: a reader whose pages disagree read a run that moved on, and reads again.
`AgentClient.state` puts the pages together (`client.state_reader`). Pure: no
Temporal imports, no I/O.
"""

from __future__ import annotations

import hashlib
from typing import Any

from durable_agents.workflows.state import RunState
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import to_json

DEFAULT_PAGE_BYTES = 14_000
"""A `get_state` answer without argument fits in this: inline under the payload
store's default threshold (16,384 bytes), also with the converter's envelope."""
MIN_PAGE_BYTES = 2_000
MAX_PAGE_BYTES = 1_000_000
PREVIEW_CHARS = 200
"""A cut string keeps this many characters."""
MAX_POINTER_CHARS = 1_000


class StateQuery(BaseModel):
    """The optional argument of `get_state` (all fields optional)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    from_item: int = Field(0, ge=0)
    """The first item the page holds (the run's item index)."""
    max_bytes: int = Field(DEFAULT_PAGE_BYTES, ge=MIN_PAGE_BYTES, le=MAX_PAGE_BYTES)
    """The answer's size bound, in bytes of JSON."""
    text: str | None = Field(None, min_length=1, max_length=MAX_POINTER_CHARS)
    """The JSON pointer (RFC 6901) of one string of the state, e.g. `/items/7/content`,
    as `page.cut` names it: the answer holds that string from `offset` and no items."""
    offset: int = Field(0, ge=0)
    """Where in the `text` string to start, in Unicode code points."""


class CutText(BaseModel):
    """A string of the answer shortened to a preview."""

    pointer: str
    """Its JSON pointer in the run's state (item indexes are the run's, not the page's)."""
    chars: int
    """Its whole length, in Unicode code points."""
    sha256: str
    """Hex SHA-256 of its whole UTF-8 text."""


class TextChunk(BaseModel):
    """Part of one string of the state (a `get_state` with `text`)."""

    pointer: str
    offset: int
    text: str
    next_offset: int | None
    """Where the rest starts; None: `text` ends the string."""


class StatePage(BaseModel):
    """Present when a `get_state` answer is not the whole state."""

    from_item: int
    next_item: int | None
    """The first item not in this answer; None: the items end here."""
    total_items: int
    state_sha256: str
    """Hex SHA-256 of the whole state's JSON when this page was read."""
    cut: list[CutText] = []
    text: TextChunk | None = None


class StateView(RunState):
    """The `get_state` answer: a RunState (without integrity block), and `page` when
    the answer is not the whole state (a page of it can not be resumed from)."""

    page: StatePage | None = None


class StateQueryError(ValueError):
    """A `get_state` argument this run cannot answer (the message says why)."""


def parse_query(argument: Any) -> StateQuery:
    """The `get_state` argument as sent (None: the defaults); StateQueryError if invalid."""
    if argument is None:
        return StateQuery()
    try:
        return StateQuery.model_validate(argument)
    except ValidationError as err:
        where = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(argument)'}: {e['msg']}"
            for e in err.errors()
        )
        raise StateQueryError(f"invalid get_state argument: {where}") from None


def answer(state: RunState, query: StateQuery) -> dict[str, Any]:
    """The `get_state` answer (JSON data) for `query`."""
    whole = state.model_dump(mode="json")
    digest = hashlib.sha256(to_json(whole)).hexdigest()
    if query.text is not None:
        return _text_answer(whole, query, digest)
    if query.from_item > len(whole["items"]):
        raise StateQueryError(
            f"from_item {query.from_item} is past the run's {len(whole['items'])} items"
        )
    return _items_answer(whole, query, digest)


def _items_answer(whole: dict[str, Any], query: StateQuery, digest: str) -> dict[str, Any]:
    items: list[Any] = whole["items"]
    if not query.from_item and _size(whole) <= query.max_bytes:
        return whole  # the whole state, as before pages existed
    cuts: list[CutText] = []
    header = _fit(_without_items(whole), query.max_bytes // 2, "", cuts)
    page = StatePage(
        from_item=query.from_item, next_item=None, total_items=len(items), state_sha256=digest
    )
    page.cut = cuts
    used = _size({**header, "items": [], "page": page.model_dump(mode="json")})
    taken: list[Any] = []
    for index in range(query.from_item, len(items)):
        item, size = items[index], _size(items[index]) + 1
        if used + size > query.max_bytes:  # cut its long strings to fit
            trial: list[CutText] = []
            item = _fit(item, query.max_bytes - used, f"/items/{index}", trial)
            size = _size(item) + 1 + sum(_size(c.model_dump()) + 1 for c in trial)
            if used + size > query.max_bytes and taken:
                page.next_item = index
                break
            cuts += trial  # the page's first item is taken, however cut
        taken.append(item)
        used += size
    if not (query.from_item or page.next_item is not None or cuts):
        return {**whole, "items": taken}  # the whole state, as before pages existed
    result = _with_items(whole, header, taken, page)
    while _size(result) > query.max_bytes and len(taken) > 1:  # the sums above are close
        taken.pop()
        page.next_item = query.from_item + len(taken)
        result = _with_items(whole, header, taken, page)
    return result


def _text_answer(whole: dict[str, Any], query: StateQuery, digest: str) -> dict[str, Any]:
    pointer = query.text or ""
    value = _resolve(whole, pointer)
    if query.offset > len(value):
        raise StateQueryError(f"offset {query.offset} is past the string's {len(value)} characters")
    header = _fit(_without_items(whole), query.max_bytes // 2, "", [])
    chunk = TextChunk(pointer=pointer, offset=query.offset, text="", next_offset=len(value))
    page = StatePage(
        from_item=0,
        next_item=0,
        total_items=len(whole["items"]),
        state_sha256=digest,
        text=chunk,
    )
    room = query.max_bytes - _size(_with_items(whole, header, [], page))
    chunk.text = _prefix_within(value[query.offset :], max(room + _size(""), 64))
    end = query.offset + len(chunk.text)
    chunk.next_offset = end if end < len(value) else None
    page.text = chunk
    return _with_items(whole, header, [], page)


def _without_items(whole: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in whole.items() if key != "items"}


def _with_items(
    whole: dict[str, Any], header: dict[str, Any], items: list[Any], page: StatePage
) -> dict[str, Any]:
    """The answer: the state's fields in their order, `items` in its place, then `page`."""
    fields = {key: items if key == "items" else header[key] for key in whole}
    return {**fields, "page": page.model_dump(mode="json")}


def _fit(value: Any, budget: int, pointer: str, cuts: list[CutText]) -> Any:
    """`value` with its longest strings cut to previews, longest first, until its JSON
    takes at most `budget` bytes (or nothing long is left); each cut added to `cuts`."""
    size = _size(value)
    if size <= budget:
        return value
    found: list[tuple[str, str]] = []
    _long_strings(value, pointer, found)
    found.sort(key=lambda f: len(f[1]), reverse=True)
    for where, text in found:
        if size <= budget:
            break
        cut = CutText(
            pointer=where,
            chars=len(text),
            sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        )
        preview = text[:PREVIEW_CHARS]
        value = _replace(value, where[len(pointer) :], preview)
        size -= _size(text) - _size(preview) - _size(cut.model_dump()) - 1
        cuts.append(cut)
    return value


def _long_strings(value: Any, pointer: str, found: list[tuple[str, str]]) -> None:
    if isinstance(value, str) and len(value) > PREVIEW_CHARS:
        found.append((pointer, value))
    elif isinstance(value, dict):
        for key, inner in value.items():
            _long_strings(inner, f"{pointer}/{_escape(key)}", found)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            _long_strings(inner, f"{pointer}/{index}", found)


def _replace(value: Any, pointer: str, new: str) -> Any:
    """A copy of `value` with the string at relative `pointer` replaced (the copy shares
    everything off the pointer's path)."""
    if not pointer:
        return new
    head = pointer[1:].split("/", 1)[0]
    rest = pointer[1 + len(head) :]
    if isinstance(value, dict):
        key = _unescape(head)
        return {**value, key: _replace(value[key], rest, new)}
    copy = list(value)
    copy[int(head)] = _replace(copy[int(head)], rest, new)
    return copy


def _resolve(document: Any, pointer: str) -> str:
    if not pointer.startswith("/"):
        raise StateQueryError(
            f"text must be a JSON pointer such as /items/0/content, not {pointer!r}"
        )
    value = document
    for token in pointer[1:].split("/"):
        key = _unescape(token)
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            raise StateQueryError(f"text {pointer!r} names nothing in the run's state")
    if not isinstance(value, str):
        raise StateQueryError(f"text {pointer!r} names a {type(value).__name__}, not a string")
    return value


def _prefix_within(text: str, budget: int) -> str:
    """The longest prefix of `text` whose JSON takes at most `budget` bytes (at least one
    character, so that a reader always moves on)."""
    if _size(text) <= budget:
        return text
    low, high = 1, min(len(text), budget)  # a character takes at least one byte
    while low < high:  # the largest n with size(text[:n]) <= budget
        middle = (low + high + 1) // 2
        if _size(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def _size(value: Any) -> int:
    return len(to_json(value))


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")
