"""Checks that a RunState's parts agree with each other, beyond what the schema says.

A digest anyone can recompute (SHA-256) does not stop an edited snapshot from
loading, so RunState refuses one whose items contradict each other: a decision
for a call no reply proposed, made before the reply, on a call that needs no
approval, a second decision on one call, a rule decision with no `always`
decision behind it; a tool result for an unknown call; turns that do not match
the replies; negative usage; a status the loop reaches only with every call
answered (completed, max_turns_exceeded, awaiting_input) while one is not.
Every check holds for every state the loop produces (the golden fixtures and
the end-to-end tests are made by it).

One pass over the items (O(items + calls)). Works on attributes only, so
`workflows.state` can call it without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from durable_agents.workflows.run_items import Decision, ToolCall
    from durable_agents.workflows.state import RunState

Problem = tuple[str, str]
"""(JSON path, what is wrong)."""

_MADE_BY_PERSON = ("signal", "update")

_ALL_ANSWERED = ("completed", "max_turns_exceeded", "awaiting_input")
"""Statuses the loop reaches only once every call of the latest reply is answered."""


USAGE_LIMIT = 10**15
"""More tokens (or model calls) than any run spends: a count past it is forged, and the
run's search attributes (64-bit integers) could not hold it."""


SUB_RUN_NESTING = 4
"""How deeply a snapshot's sub-runs may nest (`agent_calls.MAX_DEPTH`: runs nest no
deeper)."""


def _nesting(state: RunState) -> int:
    return max((1 + _nesting(s.state) for s in state.sub_runs), default=0)


def first_problem(state: RunState) -> Problem | None:
    """The first contradiction in `state`, or None if its parts agree."""
    for name in ("model_calls", "input_tokens", "output_tokens", "total_tokens"):
        if getattr(state.usage, name) < 0:
            return f"$.usage.{name}", "usage cannot be negative"
    for name in (
        "model_calls",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "cached_input_tokens",
        "reasoning_tokens",
    ):
        if getattr(state.usage, name) > USAGE_LIMIT:
            return f"$.usage.{name}", f"more than {USAGE_LIMIT:.0e} is not a count a run reaches"
    if _nesting(state) > SUB_RUN_NESTING:
        return "$.sub_runs", f"sub-runs nest at most {SUB_RUN_NESTING} deep (runs do)"
    if len({s.call_id for s in state.sub_runs}) < len(state.sub_runs):
        return "$.sub_runs", "two sub-runs of one call"
    proposed_at = {
        call.call_id: index
        for index, item in reversed(list(enumerate(state.items)))
        if item.type == "assistant_message"
        for call in item.tool_calls
    }
    walk = _Walk(proposed_at)
    for index, item in enumerate(state.items):
        problem = walk.step(index, item)
        if problem is not None:
            return problem
    if state.turn != walk.replies:
        return "$.turn", f"turn is {state.turn} but the items hold {walk.replies} model replies"
    if state.context_overflow is not None and state.context_overflow > state.turn + 1:
        return "$.context_overflow", f"a refused call {state.context_overflow} not yet made"
    unanswered = [c for c in walk.window if c not in walk.answered]
    if unanswered and state.status.value in _ALL_ANSWERED:
        return (
            "$.status",
            f"status {state.status.value} while tool call {unanswered[0]!r} is unanswered "
            "(a run resumed from it would drop the call)",
        )
    return None


@dataclass
class _Walk:
    """What the items so far established: the latest reply's calls and their decisions."""

    proposed_at: dict[str, int]
    """Call id -> index of the first reply proposing it."""
    replies: int = 0
    window: dict[str, list[ToolCall]] = field(default_factory=dict)
    """The latest reply's calls by id (a model may repeat an id within a reply)."""
    decided: dict[str, list[Decision]] = field(default_factory=dict)
    """Decisions on the latest reply's calls."""
    known: set[str] = field(default_factory=set)
    """Every call id proposed so far."""
    answered: set[str] = field(default_factory=set)
    """Call ids with a result since the latest reply."""
    rules: set[tuple[str, str, str]] = field(default_factory=set)
    """(tool, decision, approver) of each `always` decision so far."""
    reply_at: set[int] = field(default_factory=set)
    """Indexes of the replies so far (where a compaction may cut)."""
    budgets: dict[str, list[Decision]] = field(default_factory=dict)
    """Budget request id -> its decisions."""

    def step(self, index: int, item: Any) -> Problem | None:
        path = f"$.items[{index}]"
        if item.type == "assistant_message":
            self.replies += 1
            self.reply_at.add(index)
            if item.turn != self.replies:
                return f"{path}.turn", f"reply of turn {item.turn}, expected {self.replies}"
            self.window, self.decided, self.answered = {}, {}, set()
            for call in item.tool_calls:
                self.window.setdefault(call.call_id, []).append(call)
                self.known.add(call.call_id)
        elif item.type == "tool_result":
            if item.call_id not in self.known:
                why = f"result for tool call {item.call_id!r}{self._unseen(item)}"
                return f"{path}.call_id", why
            self.answered.add(item.call_id)
        elif item.type == "decision":
            return self._decision(path, index, item)
        elif item.type == "compaction":
            if item.up_to > index:
                return f"{path}.up_to", f"a compaction covers items up to {item.up_to}, past itself"
            if item.up_to and item.up_to not in self.reply_at:
                return f"{path}.up_to", "a compaction must cut the conversation at a reply"
            if item.turn > self.replies + 1:
                return f"{path}.turn", f"a compaction for call {item.turn} after {self.replies}"
            unknown = [c for c in item.stubbed if c not in self.known]
            if unknown:
                return f"{path}.stubbed", f"stubs tool call {unknown[0]!r}, which no reply proposed"
        elif item.type == "handoff":
            if item.call_id not in self.known:
                return (
                    f"{path}.call_id",
                    f"a handoff by call {item.call_id!r}, which no reply proposed",
                )
            if item.turn > self.replies:
                return f"{path}.turn", f"a handoff asked in turn {item.turn} after {self.replies}"
            self.rules = set()  # `always` rules given to an earlier agent decide nothing now
        elif item.type == "budget_request":
            if item.call_id in self.budgets or item.call_id in self.proposed_at:
                return f"{path}.call_id", f"a second call or request with id {item.call_id!r}"
            self.budgets[item.call_id] = []
        return None

    def _decision(self, path: str, index: int, decision: Decision) -> Problem | None:
        call_id = decision.call_id
        if call_id in self.budgets:
            if self.budgets[call_id]:
                return f"{path}.call_id", f"second decision for budget request {call_id!r}"
            if decision.via == "rule" or decision.always:
                return f"{path}.via", "a budget request is decided once, by no rule"
            if decision.via == "timeout" and decision.decision != "reject":
                return f"{path}.decision", "a decision at the approval deadline can only reject"
            self.budgets[call_id].append(decision)
            return None
        calls = self.window.get(call_id)
        if calls is None:
            if call_id in self.known:
                why = " of an earlier turn (a decision follows the reply that proposed its call)"
            else:
                why = self._unseen(decision)
            return f"{path}.call_id", f"decision for tool call {call_id!r}{why}"
        if not any(call.needs_approval for call in calls):
            return f"{path}.call_id", f"decision for tool call {call_id!r}, which needs no approval"
        earlier = self.decided.setdefault(call_id, [])
        if len(earlier) >= len(calls):
            first = earlier[0]
            return (
                f"{path}.call_id",
                f"second decision for tool call {call_id!r} "
                f"(already decided: {first.decision} by {first.approver})",
            )
        earlier.append(decision)
        return self._rule(path, decision, calls[0].tool)

    def _rule(self, path: str, decision: Decision, tool: str) -> Problem | None:
        key = (tool, decision.decision, decision.approver)
        if decision.via == "rule" and key not in self.rules:
            return (
                f"{path}.via",
                f"rule decision with no earlier `always` {decision.decision} "
                f"by {decision.approver} on {tool} behind it",
            )
        if decision.via == "timeout" and decision.decision != "reject":
            return f"{path}.decision", "a decision at the approval deadline can only reject"
        if decision.always and decision.via in _MADE_BY_PERSON:
            self.rules.add(key)
        return None

    def _unseen(self, item: Any) -> str:
        later = self.proposed_at.get(item.call_id)
        if later is None:
            return ", which no reply proposed"
        return f" comes before the reply that proposed it (items[{later}])"
