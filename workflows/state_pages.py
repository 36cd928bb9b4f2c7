"""`get_state` answers of bounded size, so that any client reads a run's state.

A query answer over the payload store's threshold (16 KiB by default) is stored
like any large payload, and a client without our converter (the `temporal`
CLI, a Go or TypeScript service) then receives a reference to the worker's
store instead of the state. So `get_state` answers at most `max_bytes` of JSON
(14,000 by default, inline under the default threshold):

- the whole RunState (without integrity block) when it fits: exactly what it
  answered before pages existed, with no `page` field;
- else its first page: the RunState's fields, where needed with long strings
  cut to a 200-character preview and long lists emptied (each listed in
  `page.cut` with its JSON pointer, length and SHA-256), the items that fit,
  and `page.next_item`;
- with `from_item` > 0: `{"items": [...], "page": {...}}`, the items from there
  (only a page's first item is ever cut: the others that do not fit whole wait
  for the next page);
- with `text` (a JSON pointer `page.cut` named): `{"items": [], "page": {"text":
  ...}}`, that string (or the list's compact JSON text) from `offset`, in Unicode
  code points, as much as fits.

Every page carries `state_sha256`, the digest of the whole state when it was
read. A reader passes the digest of its first page back (`state_sha256`): a
run that moved on since answers an empty page with its new digest instead of
refusing a pointer or an item index that no longer applies, and the reader
starts again. `AgentClient.state` puts the pages together
(`client.state_reader`). Pure: no Temporal imports, no I/O.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from durable_agents.workflows.run_items import Item
from durable_agents.workflows.state import RunState
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import to_json

DEFAULT_PAGE_BYTES = 14_000
"""A `get_state` answer without argument fits in this: inline under the payload
store's default threshold (16,384 bytes), also with the converter's envelope."""
MIN_PAGE_BYTES = 4_000
MAX_PAGE_BYTES = 1_000_000
PREVIEW_CHARS = 200
"""A cut string keeps this many characters."""
MAX_POINTER_CHARS = 1_000
_SHA256 = r"^[0-9a-f]{64}$"


class StateQuery(BaseModel):
    """The optional argument of `get_state` (all fields optional)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    from_item: int = Field(0, ge=0)
    """The first item the answer holds (the run's item index); above 0 the answer is
    `{"items", "page"}` without the state's other fields."""
    max_bytes: int = Field(DEFAULT_PAGE_BYTES, ge=MIN_PAGE_BYTES, le=MAX_PAGE_BYTES)
    """The answer's size bound, in bytes of JSON."""
    text: str | None = Field(None, min_length=1, max_length=MAX_POINTER_CHARS)
    """The JSON pointer (RFC 6901) of a value `page.cut` named, e.g. `/items/7/content`:
    the answer holds its text from `offset`, and no items."""
    offset: int = Field(0, ge=0)
    """Where in the `text` value to start, in Unicode code points."""
    state_sha256: str | None = Field(None, pattern=_SHA256)
    """The digest of the state the reader is putting together (its first page's): if
    the run has moved on, the answer is an empty page with the new digest."""


class CutText(BaseModel):
    """A value of the answer shortened: a string to its first 200 characters, or a list
    emptied."""

    pointer: str
    """Its JSON pointer in the run's state (item indexes are the run's, not the page's)."""
    kind: Literal["string", "json"] = "string"
    """`string`: its text is the string; `json`: a list, whose text is its compact JSON."""
    chars: int
    """The length of its text, in Unicode code points."""
    sha256: str
    """Hex SHA-256 of its whole text, UTF-8."""


class TextChunk(BaseModel):
    """Part of the text of one cut value (a `get_state` with `text`)."""

    pointer: str
    offset: int
    text: str
    next_offset: int | None
    """Where the rest starts; None: `text` ends it."""


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
    """The `get_state` answer without argument (or `from_item` 0): a RunState (without
    integrity block), and `page` when it is not the whole state (a page of it can not
    be resumed from)."""

    page: StatePage | None = None


class StatePart(BaseModel):
    """The `get_state` answer to `from_item` > 0, `text`, or a `state_sha256` the run has
    moved on from: items (maybe none) and the page."""

    items: list[Item] = []
    page: StatePage


class StateQueryError(ValueError):
    """A `get_state` argument this run cannot answer (the message says why)."""


@dataclass
class Whole:
    """A state as JSON data; its JSON text (made once, when asked for) gives its size
    and its digest."""

    data: dict[str, Any]

    @cached_property
    def size(self) -> int:
        return len(self._text)

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self._text).hexdigest()

    @cached_property
    def _text(self) -> bytes:
        return to_json(self.data)


def whole(state: RunState) -> Whole:
    """`state` as JSON data."""
    return Whole(state.model_dump(mode="json"))


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


def answer(state: Whole | RunState, query: StateQuery) -> dict[str, Any]:
    """The `get_state` answer (JSON data) for `query`."""
    read = state if isinstance(state, Whole) else whole(state)
    total = len(read.data["items"])
    if query.state_sha256 is not None and query.state_sha256 != read.sha256:
        page = StatePage(from_item=query.from_item, next_item=None, total_items=total,
                         state_sha256=read.sha256)  # fmt: skip
        return {"items": [], "page": page.model_dump(mode="json")}
    if query.text is not None:
        return _text_answer(read, query)
    if query.from_item > total:
        raise StateQueryError(f"from_item {query.from_item} is past the run's {total} items")
    if not query.from_item and read.size <= query.max_bytes:
        return read.data  # the whole state, as before pages existed
    return _items_answer(read, query)


def _items_answer(read: Whole, query: StateQuery) -> dict[str, Any]:
    items: list[Any] = read.data["items"]
    page = StatePage(
        from_item=query.from_item, next_item=None, total_items=len(items), state_sha256=read.sha256
    )
    header: dict[str, Any] | None = None
    if not query.from_item:  # the first page: the state's other fields too
        header = _fit(_without_items(read.data), query.max_bytes // 2, "", page.cut)
    taken: list[Any] = []
    used = _size(_shaped(read.data, header, [], page))
    fresh = query.max_bytes - _size(_shaped(read.data, None, [], page))  # a next page's room
    for index in range(query.from_item, len(items)):
        item, size = items[index], _size(items[index]) + 1
        if used + size > query.max_bytes:
            if taken and size <= fresh:
                page.next_item = index  # it waits for the next page, whole
                break
            cuts: list[CutText] = []  # too large for any page: cut here
            item = _fit(item, query.max_bytes - used, f"/items/{index}", cuts)
            size = _size(item) + 1 + sum(_size(c.model_dump()) + 1 for c in cuts)
            if taken and used + size > query.max_bytes:
                page.next_item = index
                break
            page.cut += cuts
        taken.append(item)
        used += size
    return _shaped(read.data, header, taken, page)


def _text_answer(read: Whole, query: StateQuery) -> dict[str, Any]:
    pointer = query.text or ""
    value = _resolve(read.data, pointer)
    text = value if isinstance(value, str) else to_json(value).decode()
    if query.offset > len(text):
        raise StateQueryError(f"offset {query.offset} is past the value's {len(text)} characters")
    chunk = TextChunk(pointer=pointer, offset=query.offset, text="", next_offset=len(text))
    page = StatePage(
        from_item=0,
        next_item=None,
        total_items=len(read.data["items"]),
        state_sha256=read.sha256,
        text=chunk,
    )
    room = query.max_bytes - _size(_shaped(read.data, None, [], page)) + _size("")
    chunk.text = _prefix_within(text[query.offset :], room)
    end = query.offset + len(chunk.text)
    chunk.next_offset = end if end < len(text) else None
    return _shaped(read.data, None, [], page)


def _without_items(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key != "items"}


def _shaped(
    data: dict[str, Any], header: dict[str, Any] | None, items: list[Any], page: StatePage
) -> dict[str, Any]:
    """The answer: the state's fields in their order with `items` in its place, or only
    `items` (no header); then `page`."""
    if header is None:
        return {"items": items, "page": page.model_dump(mode="json")}
    fields = {key: items if key == "items" else header[key] for key in data}
    return {**fields, "page": page.model_dump(mode="json")}


def _fit(value: Any, budget: int, pointer: str, cuts: list[CutText]) -> Any:
    """`value` with long strings cut to previews and long lists emptied, the greatest
    saving first, until its JSON and the cuts' entries take at most `budget` bytes (or
    nothing worth cutting is left); each cut appended to `cuts`."""
    size = _size(value)
    if size <= budget:
        return value
    found: list[tuple[int, str, Any]] = []
    _candidates(value, pointer, found)
    found.sort(key=lambda f: f[0], reverse=True)  # a list saves more than anything in it
    emptied: list[str] = []
    for _, where, inner in found:
        if size <= budget:
            break
        if any(where.startswith(f"{done}/") for done in emptied):
            continue  # inside a list emptied already
        text = inner if isinstance(inner, str) else to_json(inner).decode()
        cut = CutText(
            pointer=where,
            kind="string" if isinstance(inner, str) else "json",
            chars=len(text),
            sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        )
        shorter = inner[:PREVIEW_CHARS] if isinstance(inner, str) else []
        saving = _size(inner) - _size(shorter) - _size(cut.model_dump()) - 1
        if saving <= 0:
            continue
        value = _replace(value, where[len(pointer) :], shorter)
        size -= saving
        cuts.append(cut)
        if isinstance(inner, list):
            emptied.append(where)
    return value


_CUT_ENTRY_BYTES = 160
"""About what a `page.cut` entry takes: a value that saves less is not worth cutting."""


def _candidates(value: Any, pointer: str, found: list[tuple[int, str, Any]]) -> None:
    """Strings over PREVIEW_CHARS and non-empty lists within `value`, with an estimate of
    what cutting each saves (only those worth it)."""
    if isinstance(value, str):
        if len(value) > PREVIEW_CHARS:
            saving = _size(value) - _size(value[:PREVIEW_CHARS]) - _CUT_ENTRY_BYTES
            if saving > 0:
                found.append((saving, pointer, value))
        return
    if isinstance(value, list) and value:
        saving = _size(value) - 2 - _CUT_ENTRY_BYTES
        if saving > 0:
            found.append((saving, pointer, value))
        for index, inner in enumerate(value):
            _candidates(inner, f"{pointer}/{index}", found)
    elif isinstance(value, dict):
        for key, inner in value.items():
            _candidates(inner, f"{pointer}/{_escape(key)}", found)


def _replace(value: Any, pointer: str, new: Any) -> Any:
    """A copy of `value` with the value at relative `pointer` replaced (the copy shares
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


def _resolve(document: Any, pointer: str) -> Any:
    """The string or list at `pointer` in `document`; StateQueryError otherwise."""
    if not pointer.startswith("/"):
        raise StateQueryError(
            f"text must be a JSON pointer such as /items/0/content, not {pointer!r}"
        )
    value = document
    for token in pointer[1:].split("/"):
        key, position = _unescape(token), _index(token)
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and position is not None and position < len(value):
            value = value[position]
        else:
            raise StateQueryError(f"text {pointer!r} names nothing in the run's state")
    if not isinstance(value, str | list):
        raise StateQueryError(
            f"text {pointer!r} names a {type(value).__name__}, not a string or a list"
        )
    return value


def _index(token: str) -> int | None:
    """An array index as RFC 6901 writes it (ASCII digits, no leading zero), or None."""
    if token.isascii() and token.isdigit() and (token == "0" or not token.startswith("0")):
        return int(token)
    return None


def _prefix_within(text: str, budget: int) -> str:
    """The longest prefix of `text` whose JSON takes at most `budget` bytes (at least one
    character, so that a reader always moves on)."""
    if _size(text) <= budget:
        return text
    low, high = 1, max(1, min(len(text), budget))  # a character takes at least one byte
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
