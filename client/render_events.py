"""A run's events as `agentctl watch --follow` prints them: one line each (two for an
approval request: the commands that answer it). Every value from the run (model
text, arguments, results, names) is shown with control, bidi and zero-width
characters escaped (`argument_view.safe`), so nothing a model or tool wrote can move
the cursor or rewrite the line."""

from __future__ import annotations

import json
import shlex
from typing import Any

from durable_agents.workflows.argument_view import safe

CUT = 120
"""The longest quoted text on a line before it is cut with an ellipsis."""


def line(event: dict[str, Any]) -> str:
    """`12:30:05 #4 proposed refund(order=A12, amount=250) [r1] · needs approval`."""
    kind = str(event.get("type", "?"))
    shown = _RENDERERS.get(kind, _other)(event)
    return f"{_clock(event.get('at'))} #{event.get('seq', '?')} {shown}"


def _started(e: dict[str, Any]) -> str:
    kind = "session" if e.get("session") else "run"
    return f"{kind} started ({_text(e.get('agent'))}): {_quoted(e.get('input'))}"


def _turn(e: dict[str, Any]) -> str:
    return f"turn {e.get('turn')}: asking the model"


def _model(e: dict[str, Any]) -> str:
    parts = [f"model answered (turn {e.get('turn')})"]
    if e.get("text"):
        parts.append(_quoted(e["text"]))
    calls = e.get("tool_calls") or 0
    if calls:
        parts.append(f"{calls} tool call{'s' if calls != 1 else ''}")
    usage = e.get("usage") or {}
    if usage.get("total_tokens"):
        parts.append(f"{usage['total_tokens']} tokens")
    return " · ".join(parts)


def _proposed(e: dict[str, Any]) -> str:
    rule = " · needs approval" if e.get("needs_approval") else ""
    return f"proposed {_text(e.get('call'))} [{_text(e.get('call_id'))}]{rule}"


def _tool_started(e: dict[str, Any]) -> str:
    return f"running {_text(e.get('call'))} [{_text(e.get('call_id'))}]"


def _tool_finished(e: dict[str, Any]) -> str:
    mark = "failed" if e.get("is_error") else "returned"
    if e.get("interrupted") is True:
        mark = "interrupted (may or may not have taken effect)"
    return f"{_text(e.get('tool'))} [{_text(e.get('call_id'))}] {mark}: {_quoted(e.get('result'))}"


def _requested(e: dict[str, Any]) -> str:
    run_id, call_id = shlex.quote(str(e.get("run_id"))), shlex.quote(str(e.get("call_id")))
    args = json.dumps(e.get("args") or {}, ensure_ascii=False, separators=(",", ":"))
    deadline = f" (decide before {_text(e['deadline'])})" if e.get("deadline") else ""
    shown = _cut(args)
    digest = e.get("arguments_sha256")
    if shown.endswith("…") or not isinstance(digest, str):  # not all of it is on the line
        approve = f"agentctl pending {safe(run_id)}  (the arguments in full)"
    else:  # bound to the arguments on the line above
        approve = f"agentctl approve {safe(run_id)} {safe(call_id)} --sha256 {safe(digest[:16])}"
    return (
        f"APPROVAL NEEDED: {_text(e.get('tool'))} {shown} [{_text(e.get('call_id'))}]"
        f"{deadline}\n    {approve}  |  "
        f"agentctl reject {safe(run_id)} {safe(call_id)} --reason R"
    )


def _decided(e: dict[str, Any]) -> str:
    """`approved refund [r1] by ann: "fine"`; an answer with (the start of) the answer."""
    verbs = {"approve": "approved", "answer": "answered"}
    verb = verbs.get(str(e.get("decision")), "rejected")
    by = f" by {_text(e.get('approver'))}" if e.get("approver") else ""
    why = f": {_quoted(e.get('reason'))}" if e.get("reason") else ""
    said = ""
    if e.get("decision") == "answer" and "result" in e:
        said = f" with {_cut(json.dumps(e['result'], ensure_ascii=False))}"
    return f"{verb} {_text(e.get('tool'))} [{_text(e.get('call_id'))}]{by}{said}{why}"


def _expired(e: dict[str, Any]) -> str:
    why = f": {_text(e.get('reason'))}" if e.get("reason") else ""
    return f"no decision on {_text(e.get('tool'))} [{_text(e.get('call_id'))}]{why}"


def _paused(e: dict[str, Any]) -> str:
    by = f" by {_text(e.get('by'))}" if e.get("by") else ""
    why = f": {_quoted(e.get('reason'))}" if e.get("reason") else ""
    return f"paused{by}{why}"


def _finished(e: dict[str, Any]) -> str:
    parts = [f"run {_text(e.get('status'))} at turn {e.get('turn')}"]
    if e.get("final_output") is not None:
        output = e["final_output"]
        parts.append(_quoted(output if isinstance(output, str) else json.dumps(output)))
    if e.get("reason"):
        parts.append(_text(e["reason"]))
    return " · ".join(parts)


def _interrupted(e: dict[str, Any]) -> str:
    """`interrupted by a new message · model call cut · h1 stopped, e1 withdrawn`."""
    by = "a new message" if e.get("via") == "message" else _text(e.get("by") or "an update")
    parts = [f"interrupted by {by}" + (f": {_quoted(e['reason'])}" if e.get("reason") else "")]
    if e.get("model_call"):
        parts.append("model call cut")
    calls = e.get("calls") if isinstance(e.get("calls"), list) else []
    said = {
        "running": "stopped",
        "finished": "finished anyway",
        "awaiting_approval": "withdrawn",
        "awaiting_answer": "withdrawn",
    }
    shown = [
        f"{_text(c.get('call_id'))} {said.get(str(c.get('was')), 'not run')}"
        for c in calls
        if isinstance(c, dict)
    ]
    if shown:
        parts.append(", ".join(shown))
    return " · ".join(parts)


def _truncated(e: dict[str, Any]) -> str:
    return f"{e.get('missed')} older events were trimmed before they were read"


def _child_started(e: dict[str, Any]) -> str:
    how = " in the background" if e.get("background") else ""
    return (
        f"{_text(e.get('child_agent'))} started{how} as run {_text(e.get('child_run_id'))} "
        f"[{_text(e.get('call_id'))}]"
    )


def _child_finished(e: dict[str, Any]) -> str:
    why = f": {_quoted(e.get('reason'))}" if e.get("reason") else ""
    return (
        f"{_text(e.get('child_agent'))} in the background ended "
        f"{_text(e.get('status'))} (run {_text(e.get('child_run_id'))}){why}"
    )


def _other(e: dict[str, Any]) -> str:
    return _text(e.get("type"))


_RENDERERS = {
    "run_started": _started,
    "turn_started": _turn,
    "model_finished": _model,
    "tool_proposed": _proposed,
    "tool_started": _tool_started,
    "tool_finished": _tool_finished,
    "approval_requested": _requested,
    "approval_decided": _decided,
    "approval_expired": _expired,
    "paused": _paused,
    "interrupted": _interrupted,
    "resumed": lambda e: "resumed",
    "child_started": _child_started,
    "child_finished": _child_finished,
    "continued_as_new": lambda e: f"continued as new at turn {e.get('turn')}",
    "run_finished": _finished,
    "truncated": _truncated,
}


def _clock(at: object) -> str:
    """`12:30:05` of an RFC 3339 time (as written), else `--:--:--`."""
    text = str(at)
    return safe(text[11:19]) if len(text) >= 19 and text[10] == "T" else "--:--:--"


def _text(value: object) -> str:
    return safe(str(value))


def _quoted(value: object) -> str:
    return f'"{_cut(str(value))}"' if value is not None else '""'


def _cut(text: str) -> str:
    shown = safe(" ".join(text.split()))
    return shown if len(shown) <= CUT else shown[: CUT - 1] + "…"
