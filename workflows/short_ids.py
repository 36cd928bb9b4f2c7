"""Short ids for calls people decide: eight characters instead of a model's call id. Pure.

A model's call ids are long (`call_9f8e7d6c5b4a39281706f5e4`) and a chat button's
payload is small (Telegram's callback data is 64 bytes, run id included), so every
call that waits for a person also has a short id, accepted wherever its `call_id` is.

- **Derived, not drawn**: the first 40 bits of SHA-256 over the run id, the call id
  and a counter, written in Crockford's base32 (lowercase, no i, l, o, u): eight
  characters. Workflow code has no randomness; the same call gets the same id on
  every replay.
- **Given once, kept**: a call's short id is given when the model proposes it and
  stored on the call (`ToolCall.short_id`), so it never changes for the call's life:
  continue-as-new and snapshots carry it.
- **Unique in its run, by construction**: an id equal to a short id or a call id the
  run already has (or to another new call's id) is derived again with the next
  counter; a model's call id equal to an earlier short id is renamed
  (`proposed_calls.unique_call_ids`).
- **Across a tree of runs** (agents called as tools) each run gives its own calls
  their ids from its own run id, so two runs' ids coincide only by chance (40 bits:
  about one tree in 200 million with a hundred calls waiting). Should it happen, an id that
  names more than one waiting call is refused, saying so, never taken for one of them
  (`route`, `resolve`): the full call id, or `run_id`, picks the call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from durable_agents.workflows import budget
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.run_items import AssistantMessage, ToolCall
from durable_agents.workflows.state import RunState, SubApproval

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
"""Crockford's base32 in lowercase: no i, l, o or u to misread or mistype."""
LENGTH = 8
"""Characters of a short id: 40 bits (the most the pinned contract allows)."""


def derive(run_id: str, call_id: str, counter: int = 0) -> str:
    """The `counter`th candidate short id of call `call_id` of run `run_id`."""
    digest = hashlib.sha256(f"{run_id}\x00{call_id}\x00{counter}".encode()).digest()
    bits = int.from_bytes(digest[:5], "big")  # 40 bits: 8 characters of 5 bits
    return "".join(ALPHABET[(bits >> (5 * (LENGTH - 1 - i))) & 31] for i in range(LENGTH))


def of(state: RunState, call: ToolCall) -> str:
    """The short id of `call` (of `state`'s run): the one it was given, or, for a call
    recorded before short ids (or a budget request), the first one derived."""
    return call.short_id if call.short_id is not None else derive(state.run_id, call.call_id)


def assign(state: RunState, calls: list[ToolCall]) -> None:
    """Give each of `calls` (new calls, not yet in `state`) a short id that is no short
    id or call id of the run, nor of another of `calls`."""
    taken = set(_ids_in(state)) | {c.call_id for c in calls}
    for call in calls:
        counter, candidate = 0, derive(state.run_id, call.call_id)
        while candidate in taken:
            counter += 1
            candidate = derive(state.run_id, call.call_id, counter)
        call.short_id = candidate
        taken.add(candidate)


def resolve(state: RunState, ident: str) -> str:
    """The call id `ident` names in this run: itself when it is a call id of the run,
    else the call whose short id it is; `ident` unchanged when it names no call (the
    caller says so). Raises DecisionRefused when it names two calls of the run (a call
    id and another call's short id: possible only with calls recorded before short
    ids)."""
    calls = _calls(state)
    by_id = [c for c in calls if c.call_id == ident]
    by_short = [c for c in calls if of(state, c) == ident and c.call_id != ident]
    named = {c.call_id for c in by_id} | {c.call_id for c in by_short}
    if len(named) > 1:
        raise DecisionRefused(
            f"{ident!r} names {len(named)} calls of run {state.run_id} "
            f"({', '.join(sorted(named)[:5])}): use the full call id"
        )
    return named.pop() if named else ident


def matching(held: Iterable[SubApproval], ident: str) -> list[SubApproval]:
    """The calls of runs below that `ident` names, by call id or short id."""
    return [s for s in held if ident in (s.call_id, s.short_id)]


def refuse_ambiguous(ident: str, where: list[str]) -> DecisionRefused:
    """The refusal of an id that names calls in more than one run."""
    return DecisionRefused(
        f"{ident!r} names calls in {len(where)} runs ({', '.join(sorted(where)[:5])}): "
        "use the full call id, or name the run (run_id)"
    )


def _calls(state: RunState) -> list[ToolCall]:
    found = [c for i in state.items if isinstance(i, AssistantMessage) for c in i.tool_calls]
    return found + [budget.as_call(r) for r in budget.requests(state)]


def _ids_in(state: RunState) -> Iterable[str]:
    for call in _calls(state):
        yield call.call_id
        yield of(state, call)
