"""A run state of the OpenAI Agents SDK (`openai-agents`, `RunState.to_string()`) read
as ours: pure functions on plain JSON data, no Temporal, no network.

The file says what was said and what waits; it decides nothing. The agent (its
instructions, tools, approval rules) is the one this worker serves under the name the
importer gives, and its rules say which calls that have not run wait for a decision,
exactly as if the run had started here; decisions the file records (approved or
rejected call ids, `always` per tool) are kept in `RunState.imported` for the audit
and never applied. What only the SDK can run (hosted
tools, computer use, handoffs, calls of tools our agent does not have) is refused,
each with its JSON path, unless the importer accepts dropping it (`lossy`); what was
dropped is recorded. The mapping is the table of docs/how-to/openai-agents.md, per
item:

- `original_input` (text, or input items), then `generated_items` (their `raw_item`)
  and `pending_input`, in that order, make the conversation: user messages,
  assistant messages, `function_call`s and `reasoning` (grouped into one reply per
  run of them), `function_call_output`s (tool results);
- `current_step`'s interruptions (`tool_approval_item`s) are the calls that wait;
- `context.context` is the tool context, `context.usage` the run's usage.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from durable_agents.workflows import loop
from durable_agents.workflows.agent_spec import AgentSpec
from durable_agents.workflows.argument_view import safe
from durable_agents.workflows.audit import (
    IMPORT_ENTRIES_KEPT,
    DroppedItem,
    ImportedDecision,
    ImportRecord,
)
from durable_agents.workflows.payloads import AgentInput
from durable_agents.workflows.proposed_calls import SAFE_CALL_ID
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Item,
    ReasoningItem,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from durable_agents.workflows.state import RunState, RunStatus
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

SDK_RELEASE = "openai-agents 0.24.0"
"""The release whose run states the mapping was built and tested against."""
SUPPORTED_SCHEMA_VERSIONS = tuple(f"1.{minor}" for minor in range(22))
"""Every `$schemaVersion` that release reads (and so this import): 1.0 to 1.21."""
WRITTEN_SCHEMA_VERSION = "1.21"
"""The version that release writes, and export writes."""

_SDK_ONLY = {
    "computer_call": "computer use",
    "computer_call_output": "computer use",
    "local_shell_call": "a local shell",
    "local_shell_call_output": "a local shell",
    "shell_call": "a shell",
    "shell_call_output": "a shell",
    "apply_patch_call": "apply_patch",
    "apply_patch_call_output": "apply_patch",
    "custom_tool_call": "a custom (free-form) tool",
    "custom_tool_call_output": "a custom (free-form) tool",
    "web_search_call": "a hosted tool (web search)",
    "file_search_call": "a hosted tool (file search)",
    "code_interpreter_call": "a hosted tool (code interpreter)",
    "image_generation_call": "a hosted tool (image generation)",
    "tool_search_call": "a hosted tool (tool search)",
    "tool_search_output": "a hosted tool (tool search)",
    "mcp_call": "a hosted MCP tool",
    "mcp_list_tools": "a hosted MCP tool",
    "mcp_approval_request": "a hosted MCP tool's approval",
    "mcp_approval_response": "a hosted MCP tool's approval",
    "program": "programmatic tool calling",
    "program_output": "programmatic tool calling",
    "compaction": "a server-side compaction",
    "item_reference": "a reference to an item stored by OpenAI",
}
"""Item types only the SDK (or OpenAI's servers) can run or read: what they are."""

_RUN_ITEM_ONLY = {
    "handoff_call_item": "a handoff (this run is one agent)",
    "handoff_output_item": "a handoff (this run is one agent)",
    "mcp_list_tools_item": "a hosted MCP tool",
    "mcp_approval_request_item": "a hosted MCP tool's approval",
    "mcp_approval_response_item": "a hosted MCP tool's approval",
    "compaction_item": "a server-side compaction",
    "tool_search_call_item": "a hosted tool (tool search)",
    "tool_search_output_item": "a hosted tool (tool search)",
}
"""Run item types (`generated_items[].type`) with no counterpart here."""


@dataclass(frozen=True)
class Problem:
    """Why part of the file cannot be carried over, and where."""

    where: str
    """JSON path in the file."""
    what: str
    droppable: bool = False
    """Only the SDK can run it: `lossy` drops it (and records that)."""

    def __str__(self) -> str:
        return f"{_shown(self.where, 120)}: {_shown(self.what, 300)}"


class ImportRefused(ValueError):
    """The file cannot become a run here: every problem found, with its path."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        lines = [str(p) for p in problems[:20]]
        if len(problems) > 20:
            lines.append(f"... and {len(problems) - 20} more")
        hint = ""
        if problems and all(p.droppable for p in problems):
            hint = "\n(--lossy drops these and records what was dropped)"
        super().__init__(
            "cannot import this OpenAI Agents SDK run state:\n  " + "\n  ".join(lines) + hint
        )


def read_document(text: str | bytes) -> dict[str, Any]:
    """The file's JSON object; ImportRefused if it is not one."""
    try:
        document = json.loads(text, parse_constant=_not_json)
    except (ValueError, UnicodeDecodeError) as err:
        raise ImportRefused([Problem("$", f"not JSON: {err}")]) from None
    except RecursionError:
        raise ImportRefused([Problem("$", "nested too deeply to read")]) from None
    if not isinstance(document, dict):
        raise ImportRefused([Problem("$", "a run state is a JSON object")])
    return document


def import_state(
    document: dict[str, Any],
    spec: AgentSpec,
    *,
    run_id: str,
    now: datetime,
    sha256: str,
    lossy: bool = False,
) -> RunState:
    """Our RunState for the SDK run state `document`, run by `spec` (the agent a worker
    serves), as run `run_id`. Raises ImportRefused listing everything that cannot be
    carried over (with `lossy`, only what dropping cannot fix)."""
    version = document.get("$schemaVersion")
    if not isinstance(version, str) or not version:
        raise ImportRefused([Problem("$.$schemaVersion", "missing: not an SDK run state")])
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise ImportRefused(
            [
                Problem(
                    "$.$schemaVersion",
                    f"version {version[:20]!r} is unknown: this build reads 1.0 to "
                    f"{WRITTEN_SCHEMA_VERSION} ({SDK_RELEASE})",
                )
            ]
        )
    reading = _Reading(spec=spec, lossy=lossy, now=now)
    header = reading.header(document)
    reading.conversation(document)
    reading.interruptions(document.get("current_step"))
    decisions = reading.decisions(document.get("context"))
    problems = [p for p in reading.problems if not (lossy and p.droppable)]
    if problems:
        raise ImportRefused(problems)
    items = reading.items
    if not any(isinstance(i, UserMessage) for i in items):
        raise ImportRefused([Problem("$.original_input", "no user message: nothing to go on")])
    step = document.get("current_step")
    kind = step.get("type") if isinstance(step, dict) else None
    ended = isinstance(items[-1], AssistantMessage) and not items[-1].tool_calls
    if ended or kind not in ("next_step_interruption", "next_step_run_again"):
        raise ImportRefused(
            [Problem("$.current_step", "the SDK run has ended (it has its final output)")]
        )
    state = loop.new_state(
        spec,
        AgentInput(agent=spec.name, input=""),
        run_id=run_id,
        now=now,
    )
    state.items = items
    state.queued_messages = reading.queued
    state.turn = reading.replies
    state.context = header.context
    state.usage = loop.priced(header.usage, spec.price) if spec.price else header.usage
    state.status = RunStatus.AWAITING_APPROVAL if reading.waiting else RunStatus.RUNNING
    try:  # read back as the workflow reads its input: JSON, every check of a snapshot
        kept = IMPORT_ENTRIES_KEPT
        state.imported = ImportRecord(
            schema_version=version,
            sha256=sha256,
            agent=header.agent,
            turn=header.turn,
            max_turns=header.max_turns,
            decisions=decisions[:kept],
            decisions_omitted=max(0, len(decisions) - kept),
            dropped=reading.dropped[:kept],
            dropped_omitted=max(0, len(reading.dropped) - kept),
            at=now,
        )
        return RunState.model_validate_json(state.model_dump_json())
    except ValidationError as err:
        found = err.errors()[0]
        where = found.get("ctx", {}).get("path") or "$"
        what = f"the run it makes is invalid (at {where} of the durable RunState): {found['msg']}"
        raise ImportRefused([Problem("$", what)]) from None
    except PydanticSerializationError:
        what = "holds text JSON cannot carry (a lone surrogate, \\ud800-\\udfff)"
        raise ImportRefused([Problem("$", what)]) from None
    except (ValueError, RecursionError):
        raise ImportRefused([Problem("$", "nested too deeply to carry over")]) from None


MAX_COUNT = 2**31 - 1
"""The largest turn count a file may give (10^200 would reach every reader of the state,
some in languages whose integers stop at 2^63)."""


@dataclass
class _Header:
    agent: str
    turn: int
    max_turns: int | None
    context: Any
    usage: Usage


@dataclass
class _Reading:
    """One pass over the file: the items it makes, and what is wrong with it."""

    spec: AgentSpec
    lossy: bool
    now: datetime
    items: list[Item] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    dropped: list[DroppedItem] = field(default_factory=list)
    waiting: bool = False
    queued: list[str] = field(default_factory=list)
    """User messages given after the interruption (`pending_input`): the run's queued
    messages, delivered once the waiting calls are answered."""
    replies: int = 0
    _last: AssistantMessage | None = None
    """The latest reply closed."""
    _reply: AssistantMessage | None = None
    _calls: dict[str, ToolCall] = field(default_factory=dict)
    _answered: set[str] = field(default_factory=set)
    _gone: set[str] = field(default_factory=set)
    """Call ids dropped (lossy): their outputs go too."""

    def refuse(self, where: str, what: str, *, droppable: bool = False) -> None:
        where, what = _carried(where), _carried(what)  # they may quote the file
        self.problems.append(Problem(where, what, droppable))
        if droppable and self.lossy:
            self.dropped.append(DroppedItem(where=where[:200], what=what[:500]))

    def header(self, document: dict[str, Any]) -> _Header:
        turn = document.get("current_turn")
        if not isinstance(turn, int) or isinstance(turn, bool) or not 0 <= turn <= MAX_COUNT:
            self.refuse("$.current_turn", "missing, or not a count of model calls")
            turn = 0
        max_turns = document.get("max_turns")
        if max_turns is not None and (
            not isinstance(max_turns, int)
            or isinstance(max_turns, bool)
            or not 1 <= max_turns <= MAX_COUNT
        ):
            self.refuse("$.max_turns", f"not a positive integer up to {MAX_COUNT:,}, or null")
            max_turns = None
        agent = _agent_name(document.get("current_agent"))
        if agent is None:
            self.refuse("$.current_agent", "missing: the SDK agent that was running")
        context = document.get("context")
        if not isinstance(context, dict):
            self.refuse("$.context", "missing, or not an object")
            context = {}
        meta = context.get("context_meta")
        if isinstance(meta, dict) and meta.get("omitted"):
            self.refuse(
                "$.context.context",
                "the SDK left the context object out (it could not write it as JSON)",
                droppable=True,
            )
        tool_context = context.get("context")
        if tool_context is not None and not isinstance(tool_context, dict):
            self.refuse("$.context.context", "not an object or null (the SDK writes no other)")
            tool_context = None
        elif _depth(tool_context) > MAX_CONTEXT_DEPTH:
            self.refuse("$.context.context", f"nested deeper than {MAX_CONTEXT_DEPTH} levels")
            tool_context = None
        return _Header(
            agent=_carried(agent or "?")[:200],
            turn=turn,
            max_turns=max_turns,
            context=tool_context,
            usage=_usage(context.get("usage")),
        )

    def conversation(self, document: dict[str, Any]) -> None:
        original = document.get("original_input")
        if isinstance(original, str):
            self._item("$.original_input", {"role": "user", "content": original})
        elif isinstance(original, list):
            for index, raw in enumerate(original):
                self._item(f"$.original_input[{index}]", raw)
        else:
            self.refuse("$.original_input", "missing: neither text nor a list of items")
        generated = document.get("generated_items", [])
        if not isinstance(generated, list):
            self.refuse("$.generated_items", "not a list")
            generated = []
        for index, run_item in enumerate(generated):
            where = f"$.generated_items[{index}]"
            if not isinstance(run_item, dict) or not isinstance(run_item.get("raw_item"), dict):
                self.refuse(where, "not a run item (an object with a raw_item)")
                continue
            kind = run_item.get("type")
            if kind == "tool_approval_item":
                continue  # what waits is read from current_step
            if isinstance(kind, str) and kind in _RUN_ITEM_ONLY:
                self.refuse(where, f"{kind}: {_RUN_ITEM_ONLY[kind]}", droppable=True)
                continue
            self._item(f"{where}.raw_item", run_item["raw_item"])
        self._close()
        pending = document.get("pending_input", [])
        if not isinstance(pending, list):
            self.refuse("$.pending_input", "not a list")
            pending = []
        for index, raw in enumerate(pending):
            where = f"$.pending_input[{index}]"
            if self._unanswered() and isinstance(raw, dict) and raw.get("role") == "user":
                text = self._text(where, raw.get("content"))
                if text:  # for after the waiting calls, as the SDK sends it
                    self.queued.append(text)
            else:
                self._item(where, raw)
        self._close()

    def _item(self, where: str, raw: Any) -> None:
        if not isinstance(raw, dict):
            self.refuse(where, "not an item (a JSON object)")
            return
        kind, role = raw.get("type"), raw.get("role")
        if role is not None and kind in (None, "message"):
            self._message(where, role, raw.get("content"))
        elif kind == "function_call":
            self._call(where, raw)
        elif kind == "function_call_output":
            self._output(where, raw)
        elif kind == "reasoning":
            self._reasoning(where, raw)
        elif isinstance(kind, str) and kind in _SDK_ONLY:
            self.refuse(
                where, f"{kind}: {_SDK_ONLY[kind]}, which only the SDK runs", droppable=True
            )
        else:
            self.refuse(where, f"an item of unknown type {str(kind)[:50]!r}", droppable=True)

    def _message(self, where: str, role: Any, content: Any) -> None:
        text = self._text(where, content)
        if text is None or (text == "" and isinstance(content, list) and content):
            return  # not text, or only parts that were not (refused, or dropped)
        if role == "user":
            self._all_answered(where)
            self.items.append(UserMessage(content=text))
        elif role == "assistant":
            reply = self._open(where)
            reply.content = text if reply.content is None else f"{reply.content}\n\n{text}"
        elif role in ("system", "developer"):
            self.refuse(
                where,
                f"a {role} message: the instructions are this worker's agent's",
                droppable=True,
            )
        else:
            self.refuse(where, f"a message of unknown role {str(role)[:50]!r}")

    def _text(self, where: str, content: Any) -> str | None:
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            self.refuse(f"{where}.content", "neither text nor a list of parts")
            return None
        texts = []
        for index, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in ("input_text", "output_text", "text") and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "refusal" and isinstance(part.get("refusal"), str):
                texts.append(part["refusal"])
            else:
                self.refuse(
                    f"{where}.content[{index}]",
                    f"a {str(kind)[:50]!r} part (only text is carried over)",
                    droppable=True,
                )
        return "".join(texts)

    def _call(self, where: str, raw: dict[str, Any]) -> None:
        call_id, name, arguments = raw.get("call_id"), raw.get("name"), raw.get("arguments")
        if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
            self.refuse(where, "a function_call without call_id or name")
            return
        if not SAFE_CALL_ID.fullmatch(call_id):
            self.refuse(where, "a call id of other than 1-200 letters, digits and _.:-")
            return
        if not isinstance(arguments, str):
            self.refuse(where, "a function_call whose arguments are not a JSON string")
            return
        if call_id in self._calls or call_id in self._gone:
            self.refuse(where, f"a second call with id {call_id!r}")
            return
        if raw.get("namespace"):
            self.refuse(where, f"a call of namespaced tool {name!r}", droppable=True)
            self._gone.add(call_id)
            return
        tool = next((t for t in self.spec.tools if t.name == name), None)
        if tool is None:
            self.refuse(
                where,
                f"a call of tool {name!r}, which agent {self.spec.name!r} here does not have",
                droppable=True,
            )
            self._gone.add(call_id)
            return
        reply = self._open(where)
        if len(reply.tool_calls) >= loop.MAX_CALLS_PER_REPLY:
            self.refuse(
                where,
                f"a reply's call past the {loop.MAX_CALLS_PER_REPLY}th (a run makes at most "
                f"{loop.MAX_CALLS_PER_REPLY} at once)",
            )
            return
        call = ToolCall(call_id=call_id, tool=name, arguments=arguments)
        call.needs_approval = tool.needs_approval
        self._calls[call_id] = call
        reply.tool_calls.append(call)

    def _output(self, where: str, raw: dict[str, Any]) -> None:
        call_id = raw.get("call_id")
        if isinstance(call_id, str) and call_id not in self._calls and call_id in self._gone:
            self.refuse(where, f"the output of dropped call {call_id!r}", droppable=True)
            self._close()  # an output ends its reply, kept or not
            return
        if not isinstance(call_id, str) or call_id not in self._calls:
            self.refuse(where, f"an output for call {str(call_id)[:100]!r}, which no item made")
            return
        if call_id in self._answered:
            self.refuse(where, f"a second output for call {call_id!r}")
            return
        output = raw.get("output")
        content = output if isinstance(output, str) else self._text(f"{where}.output", output)
        if content is None:
            return
        self._close()
        self._answered.add(call_id)
        self.items.append(ToolResult(call_id=call_id, content=content))

    def _reasoning(self, where: str, raw: dict[str, Any]) -> None:
        summary = raw.get("summary", [])
        texts = [
            part["text"]
            for part in summary if isinstance(part, dict) and isinstance(part.get("text"), str)
        ] if isinstance(summary, list) else []  # fmt: skip
        encrypted = raw.get("encrypted_content")
        try:
            reasoning = ReasoningItem(
                id=raw.get("id"),  # type: ignore[arg-type]  # validated here
                summary=texts,
                encrypted_content=encrypted if isinstance(encrypted, str) else None,
            )
        except ValidationError:
            self.refuse(where, "a reasoning item without an id", droppable=True)
            return
        self._open(where).reasoning.append(reasoning)

    def _open(self, where: str) -> AssistantMessage:
        if self._reply is None:
            self._all_answered(where)
            self._reply = AssistantMessage(turn=self.replies + 1, at=self.now)
        return self._reply

    def _close(self) -> None:
        reply, self._reply = self._reply, None
        if reply is not None and (reply.content is not None or reply.tool_calls or reply.reasoning):
            self.items.append(reply)
            self.replies += 1
            self._last = reply

    def _all_answered(self, where: str) -> None:
        """A new reply or user message comes: every call before it must have its output."""
        self._close()
        for call in self._unanswered():
            self.refuse(
                where,
                f"comes after call {call.call_id!r} ({call.tool}), which has no output",
            )
            self._answered.add(call.call_id)  # said once

    def _unanswered(self) -> list[ToolCall]:
        calls = self._last.tool_calls if self._last is not None else []
        return [c for c in calls if c.call_id not in self._answered]

    def interruptions(self, step: Any) -> None:
        """The calls the SDK stopped for: they wait for a decision here."""
        if step is None:
            return
        if not isinstance(step, dict):
            self.refuse("$.current_step", "not an object")
            return
        if step.get("type") != "next_step_interruption":
            return
        data = step.get("data") if isinstance(step.get("data"), dict) else step
        found = data.get("interruptions", [])
        if not isinstance(found, list):
            self.refuse("$.current_step.data.interruptions", "not a list")
            return
        open_calls = {c.call_id: c for c in self._unanswered()}
        for index, item in enumerate(found):
            where = f"$.current_step.data.interruptions[{index}]"
            raw = item.get("raw_item") if isinstance(item, dict) else None
            if not isinstance(raw, dict):
                self.refuse(where, "not an approval item (an object with a raw_item)")
                continue
            kind = raw.get("type")
            if kind != "function_call":
                what = _SDK_ONLY.get(str(kind), f"an approval of a {str(kind)[:50]!r}")
                shown = f"{str(kind)[:50]!r}: {what}, which only the SDK runs"
                self.refuse(where, shown, droppable=True)
                continue
            call_id = raw.get("call_id")
            if not isinstance(call_id, str):
                self.refuse(where, "waits for a call whose id is not text")
                continue
            if call_id in self._gone:
                continue  # refused (or dropped) where the call was made
            call = open_calls.get(call_id)
            if call is None:
                why = (
                    "which already has an output"
                    if call_id in self._answered
                    else "not a call of the last reply"
                )
                self.refuse(where, f"waits for call {str(call_id)[:100]!r}, {why}")
                continue
            call.needs_approval = True
        self.waiting = any(c.needs_approval for c in self._unanswered())

    def decisions(self, context: Any) -> list[ImportedDecision]:
        """The decisions the file records: the audit's, never the run's."""
        if not isinstance(context, dict):
            return []
        found: list[ImportedDecision] = []
        entries = context.get("function_tool_approvals", [])
        if not isinstance(entries, list):
            self.refuse("$.context.function_tool_approvals", "not a list")
            entries = []
        for index, entry in enumerate(entries):
            where = f"$.context.function_tool_approvals[{index}]"
            if not isinstance(entry, dict):
                self.refuse(where, "not an object")
                continue
            found += self._decision(where, entry.get("tool_key"), entry.get("decision"))
        legacy = context.get("approvals", {})
        if not isinstance(legacy, dict):
            self.refuse("$.context.approvals", "not an object")
            legacy = {}
        for tool, decision in legacy.items():
            found += self._decision(f"$.context.approvals.{tool}", tool, decision)
        return found

    def _decision(self, where: str, tool: Any, decision: Any) -> list[ImportedDecision]:
        if not isinstance(tool, str) or not tool or not isinstance(decision, dict):
            self.refuse(where, "not a decision (a tool name and its decision)")
            return []
        messages = decision.get("rejection_messages")
        messages = messages if isinstance(messages, dict) else {}
        sticky = decision.get("sticky_rejection_message")
        found = []
        for verdict, key in (("approve", "approved"), ("reject", "rejected")):
            value = decision.get(key, [])
            if value is True:
                message = sticky if verdict == "reject" and isinstance(sticky, str) else None
                found.append((None, verdict, message))
            elif isinstance(value, list):
                for call_id in value:
                    if not isinstance(call_id, str) or not call_id:
                        self.refuse(f"{where}.{key}", "a call id that is not text")
                        continue
                    message = messages.get(call_id) if verdict == "reject" else None
                    found.append((call_id, verdict, message))
            elif value is not False:
                self.refuse(f"{where}.{key}", "neither true, false nor a list of call ids")
        try:
            return [
                ImportedDecision(
                    call_id=call_id,
                    tool=tool,
                    decision=verdict,  # type: ignore[arg-type]  # approve or reject
                    message=message[:2_000] if isinstance(message, str) else None,
                )
                for call_id, verdict, message in found
            ]
        except ValidationError as err:
            self.refuse(where, f"a decision that cannot be recorded: {err.errors()[0]['msg']}")
            return []


MAX_CONTEXT_DEPTH = 64
"""Levels of nesting the tool context may have (the run's input is read with a bound)."""


def _depth(value: Any) -> int:
    """How deeply `value` nests (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        current, level = stack.pop()
        children = (
            current.values()
            if isinstance(current, dict)
            else current
            if isinstance(current, list)
            else None
        )
        if children is None:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_CONTEXT_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


def _shown(text: str, limit: int) -> str:
    """`text` safe to print (control and bidi characters shown as escapes), cut."""
    flat = safe(text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _agent_name(ref: Any) -> str | None:
    if isinstance(ref, str) and ref:
        return ref
    if isinstance(ref, dict) and isinstance(ref.get("name"), str) and ref["name"]:
        return str(ref["name"])
    return None


def _usage(raw: Any) -> Usage:
    """The SDK's running usage (`context.usage`) as ours; zeros for what it lacks."""
    if not isinstance(raw, dict):
        return Usage()

    def count(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    def detail(key: str, name: str) -> int:
        value = raw.get(key)
        if isinstance(value, list):  # the SDK writes a one-element list at the top level
            value = value[0] if value else None
        return count(value.get(name)) if isinstance(value, dict) else 0

    return Usage(
        model_calls=count(raw.get("requests")),
        input_tokens=count(raw.get("input_tokens")),
        output_tokens=count(raw.get("output_tokens")),
        total_tokens=count(raw.get("total_tokens")),
        cached_input_tokens=detail("input_tokens_details", "cached_tokens"),
        reasoning_tokens=detail("output_tokens_details", "reasoning_tokens"),
    )


def _carried(text: str) -> str:
    """`text` (it may quote the file) with any lone surrogate written as its escape: a
    refusal or a record of what was dropped must itself be text JSON can carry."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
