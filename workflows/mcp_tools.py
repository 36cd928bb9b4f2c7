"""MCP servers' tools as an agent's tools: listed once per run, called like `@tool`s.

An agent names its MCP servers (`AgentSpec.mcp_servers`); when a run starts or
resumes, the workflow lists each server's tools (an activity, through
`temporalio-mcp`) and `with_mcp_tools` freezes them into the run's spec as
`ToolSpec`s: the allow-list applied, the prefix put before each name, the input
schema as the parameters, and the approval rule decided (the agent's word first;
where it says nothing, the server's annotations: read-only needs no approval,
anything else does, since annotations are the server's claim). So replay never
calls the server, a run's tools do not change under it, and approval policies,
argument checks and deadlines apply to MCP tools exactly as to `@tool`s.
`outcome` turns an MCP tool result into what the model reads.

Pure: plain data in and out (the MCP SDK's models dumped to JSON), no Temporal.
"""

from __future__ import annotations

import fnmatch
import json
import re
from datetime import datetime
from typing import Any, Literal

from durable_agents.workflows import decisions
from durable_agents.workflows.agent_spec import AgentSpec, MCPServerSpec, ToolSpec
from durable_agents.workflows.audit import LISTINGS_KEPT, ToolListing
from durable_agents.workflows.payloads import ToolOutcome
from durable_agents.workflows.run_items import (
    BUDGET_TOOL,
    IMAGE_TYPES,
    MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENTS,
    MAX_RUN_IMAGE_BYTES,
    Attachment,
    ToolResult,
    UserMessage,
)
from durable_agents.workflows.state import (
    AGENTS_LEFT_KEPT,
    MCP_TOOLS_KEPT,
    MCPToolsLeft,
    RunState,
    ToolsRefresh,
)

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What model APIs accept as a function name."""
MAX_DESCRIPTION_CHARS = 4_000
MAX_TOOLS = 128
"""The most functions OpenAI's APIs take in one request."""


def with_mcp_tools(spec: AgentSpec, listed: dict[str, list[dict[str, Any]]]) -> AgentSpec:
    """`spec` with the tools of its MCP servers added (`listed`: server name -> the tools
    it listed, as JSON). Raises ValueError when a name clashes or cannot be used, and
    when there are too many tools, before any is read (a server may list 100,000)."""
    tools = list(spec.tools)
    total = len(tools) + sum(
        len(_allowed(server, listed.get(server.name, []))) for server in spec.mcp_servers
    )
    if total > MAX_TOOLS:
        raise ValueError(_too_many(total))
    names = {t.name for t in tools}  # a set: 10,000 tools listed were 50 million comparisons
    for server in spec.mcp_servers:
        for tool in tool_specs(server, listed.get(server.name, [])):
            if tool.name == BUDGET_TOOL:
                raise ValueError(
                    f"MCP server {server.name!r} has a tool named {BUDGET_TOOL!r}, the name "
                    "of a budget extension request: give the server a prefix"
                )
            if tool.name in names:
                raise ValueError(
                    f"MCP server {server.name!r} has a tool {tool.mcp_tool!r} that would be "
                    f"named {tool.name!r}, a name the agent has already: give the server a "
                    "prefix (MCPServer(prefix=...)) or leave the tool out (allow=[...])"
                )
            tools.append(tool)
            names.add(tool.name)
    if len(tools) > MAX_TOOLS:
        raise ValueError(_too_many(len(tools)))
    return spec.model_copy(update={"tools": tools})


def _too_many(count: int) -> str:
    return (
        f"the agent would have {count} tools, more than model APIs take "
        f"({MAX_TOOLS}): narrow its MCP servers with allow=[...]"
    )


def _allowed(server: MCPServerSpec, listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools `server` listed that its `allow` lets the agent have."""
    if server.allow is None:
        return listed
    allow = server.allow
    return [
        tool
        for tool in listed
        if any(fnmatch.fnmatchcase(str(tool.get("name", "")), g) for g in allow)
    ]


def tool_specs(server: MCPServerSpec, listed: list[dict[str, Any]]) -> list[ToolSpec]:
    """The allowed tools of `server` as the agent's tools (a name is checked whole: a
    line break after it does not pass)."""
    found = []
    for tool in _allowed(server, listed):
        name = str(tool.get("name", ""))
        shown = f"{server.prefix}{name}"
        usable = TOOL_NAME.fullmatch(shown)
        if not usable:
            raise ValueError(
                f"MCP server {server.name!r} has a tool named {name!r}, which a model cannot "
                "be given (names are letters, digits, _ and -, at most 64): leave it out "
                "with allow=[...]"
            )
        schema = tool.get("inputSchema")
        found.append(
            ToolSpec(
                name=shown,
                description=_description(tool),
                parameters=schema if isinstance(schema, dict) else {"type": "object"},
                needs_approval=needs_approval(server, name, tool.get("annotations")),
                approval=server.approval,
                mcp_repeatable=repeatable(tool.get("annotations")),
                mcp_server=server.name,
                mcp_tool=name,
            )
        )
    return found


def needs_approval(server: MCPServerSpec, name: str, annotations: object) -> bool:
    """The agent's rule for the tool `name`; where it has none, the annotations'."""
    rule = server.needs_approval
    if isinstance(rule, bool):
        return rule
    if rule is not None and any(fnmatch.fnmatchcase(name, g) for g in rule):
        return True
    hints = annotations if isinstance(annotations, dict) else {}
    return hints.get("readOnlyHint") is not True  # destructive or unannotated: ask


def repeatable(annotations: object) -> bool:
    """Tried again only where that cannot do it twice: read-only or idempotent tools."""
    hints = annotations if isinstance(annotations, dict) else {}
    return hints.get("readOnlyHint") is True or hints.get("idempotentHint") is True


def stricter(spec: AgentSpec, before: AgentSpec) -> AgentSpec:
    """`spec` (listed again on resume) where a tool the snapshot's run asked approval for
    still asks it: a server whose annotations changed (or a forged snapshot) can add an
    approval, never take one away."""
    asked = {t.name for t in before.tools if t.mcp_server is not None and t.needs_approval}
    tools = [
        t.model_copy(update={"needs_approval": True}) if t.name in asked else t for t in spec.tools
    ]
    return spec.model_copy(update={"tools": tools})


def guarded(fresh: AgentSpec, before: AgentSpec) -> AgentSpec:
    """`fresh` (the tools listed again, or a changed definition) taken over `before`
    without an approval going away: a tool that asked for one still does (`stricter`),
    and an MCP tool `before` did not have needs one unless the agent's configuration of
    its server says it does not (a server could drop a tool and bring it back marked
    read-only: its annotations are not trusted mid-run)."""
    fresh = stricter(fresh, before)
    had = {t.name for t in before.tools}
    servers = {s.name: s for s in fresh.mcp_servers}
    tools = []
    for tool in fresh.tools:
        server = servers.get(tool.mcp_server or "")
        if tool.name not in had and server is not None and server.needs_approval is not False:
            tool = tool.model_copy(update={"needs_approval": True})
        tools.append(tool)
    return fresh.model_copy(update={"tools": tools})


def remember_leaving(state: RunState) -> None:
    """Keep the MCP tools of the agent the run is handing over from (`mcp_tools_left`),
    for a handoff back to it (`returning`)."""
    mine = [t for t in state.agent.tools if t.mcp_server is not None]
    others = [m for m in state.mcp_tools_left if m.agent != state.agent.name]
    if not state.agent.mcp_servers:
        state.mcp_tools_left = others
        return
    left = MCPToolsLeft(
        agent=state.agent.name,
        tools=[t.name for t in mine][:MCP_TOOLS_KEPT],
        asked=[t.name for t in mine if t.needs_approval][:MCP_TOOLS_KEPT],
    )
    state.mcp_tools_left = [*others, left][-AGENTS_LEFT_KEPT:]


def returning(spec: AgentSpec, state: RunState) -> AgentSpec:
    """`spec` (an agent the run hands over to, its MCP tools listed now) as a listing
    mid-run (`guarded`) when the run had this agent before, or has it now (a handoff
    to itself): a tool that asked for approval then still does, and a tool it did not
    have then needs approval unless the agent's configuration of its server says it
    does not. A server cannot take an approval away by marking a tool read-only while
    the run is with another agent."""
    if not spec.mcp_servers:
        return spec
    if spec.name == state.agent.name:  # a handoff to itself: what it has now
        return guarded(spec, state.agent)
    before = next((m for m in state.mcp_tools_left if m.agent == spec.name), None)
    if before is None:
        return spec
    asked = set(before.asked)
    had = [
        ToolSpec(
            name=name,
            description="",
            parameters={"type": "object"},
            needs_approval=name in asked,
            mcp_server="(earlier)",
        )
        for name in before.tools
    ]
    earlier = spec.model_copy(update={"tools": [*without_mcp_tools(spec).tools, *had]})
    return guarded(spec, earlier)


def user_messages(state: RunState) -> int:
    """The user's messages in the conversation (not the run's feedback to the model)."""
    return sum(1 for i in state.items if isinstance(i, UserMessage) and not i.feedback)


def listing_due(state: RunState) -> Literal["session_message", "requested"] | None:
    """Why the run's MCP tools are to be listed again before its next model call: it was
    asked to (`refresh_tools`; at most once a turn, so a flood of requests cannot keep
    the run listing), or a session message arrived since they were last listed. None:
    not due (or the agent has no MCP servers)."""
    if not state.agent.mcp_servers:
        return None
    listed_this_turn = bool(state.tool_listings) and state.tool_listings[-1].turn == state.turn
    if state.tools_refresh is not None and not listed_this_turn:
        return "requested"
    if state.tools_listed_messages is None:
        return None
    return "session_message" if user_messages(state) > state.tools_listed_messages else None


def without_mcp_tools(spec: AgentSpec) -> AgentSpec:
    """`spec` with only its own (`@tool`) tools: what its MCP servers' tools are listed onto."""
    return spec.model_copy(update={"tools": [t for t in spec.tools if t.mcp_server is None]})


def record_listing(
    state: RunState,
    listed: AgentSpec | str,
    reason: Literal["session_message", "requested"],
    *,
    asked: ToolsRefresh | None,
    now: datetime,
) -> None:
    """Take the tools listed again (`listed`; a str: why they could not be, and the run
    keeps the ones it has) and record what changed. `asked`: the request this listing
    answers (`tools_refresh` when it began; one made meanwhile stays for the next).

    A listing never takes an approval away: a tool that asked for one still does
    (`stricter`), and a tool that appears after the run started needs one unless the
    agent's configuration says it does not (its annotations are not trusted then: a
    server could drop a tool and bring it back as read-only). `always` rules on a tool
    that changed or went away no longer decide its calls (`revoked_rules`)."""
    before = {t.name: t for t in state.agent.tools}
    entry = ToolListing(
        at=now, turn=state.turn, reason=reason, by=asked.by if asked is not None else None
    )
    if isinstance(listed, str):
        entry.error = listed[:2_000]
    else:
        fresh = guarded(listed, state.agent)
        after = {t.name: t for t in fresh.tools}
        entry.added = [n for n in after if n not in before]
        entry.removed = [n for n in before if n not in after]
        entry.changed = [n for n in after if n in before and after[n] != before[n]]
        revoked = decisions.always_rules_on(state, {*entry.changed, *entry.removed})
        state.revoked_rules = sorted({*state.revoked_rules, *revoked})
        state.agent = fresh
    state.tool_listings = [*state.tool_listings, entry][-LISTINGS_KEPT:]
    if state.tools_refresh is asked:
        state.tools_refresh = None
    state.tools_listed_messages = user_messages(state)
    state.updated_at = now


def _description(tool: dict[str, Any]) -> str:
    text = tool.get("description") or tool.get("title") or ""
    return str(text)[:MAX_DESCRIPTION_CHARS]


def outcome(
    call_id: str,
    tool: str,
    result: dict[str, Any],
    *,
    keep_images: bool = False,
    room: int = MAX_RUN_IMAGE_BYTES,
) -> ToolOutcome:
    """What the model reads of an MCP tool's result: its text blocks, a line for each
    other block, its structured content as JSON when it sent no text; a result flagged
    `isError` as the tool's error. With `keep_images`, its images (of the types model
    APIs read, up to `MAX_ATTACHMENTS` of `MAX_ATTACHMENT_BYTES`, `room` bytes in all)
    are kept whole as attachments, each still named by its line; other images are only
    described."""
    blocks = [b for b in result.get("content") or [] if isinstance(b, dict)]
    attachments: list[Attachment] = []
    texts = []
    for block in blocks:
        kept = _attachment(block) if keep_images and len(attachments) < MAX_ATTACHMENTS else None
        if kept is not None and kept.size <= room:
            room -= kept.size
            attachments.append(kept)
            number = len(attachments)
            texts.append(f"[image {kept.mime_type}, {kept.size:,} bytes: image {number}]")
        elif text := _block(block):
            texts.append(text)
    structured = result.get("structuredContent")
    if structured is not None and not any(b.get("type") == "text" for b in blocks):
        texts.append(json.dumps(structured, ensure_ascii=False))
    content = "\n".join(texts)
    if result.get("isError") is True:
        return ToolOutcome(
            call_id=call_id,
            content=f"Error: tool '{tool}' reported an error: {content or '(no message)'}",
            is_error=True,
            attachments=attachments,
        )
    return ToolOutcome(call_id=call_id, content=content, attachments=attachments)


def within_image_room(state: RunState, outcomes: list[ToolOutcome]) -> list[ToolOutcome]:
    """`outcomes` (of calls that ran at once, each given the whole room) with the images
    past the run's room (`MAX_RUN_IMAGE_BYTES`, less what it keeps) left out, in order:
    an outcome whose images do not fit keeps none, and says so."""
    room = MAX_RUN_IMAGE_BYTES - image_bytes(state)
    kept = []
    for found in outcomes:
        size = sum(a.size for a in found.attachments)
        if size <= room:
            room -= size
            kept.append(found)
            continue
        note = (
            f"\n[its {len(found.attachments)} image(s) were not kept: the run keeps at most "
            f"{MAX_RUN_IMAGE_BYTES:,} bytes of images]"
        )
        kept.append(found.model_copy(update={"attachments": [], "content": found.content + note}))
    return kept


def image_bytes(state: RunState) -> int:
    """The image bytes the run keeps (`MAX_RUN_IMAGE_BYTES` at most)."""
    return sum(a.size for i in state.items if isinstance(i, ToolResult) for a in i.attachments)


def _attachment(block: dict[str, Any]) -> Attachment | None:
    """An image block as an attachment; None when it cannot be one (another kind, a
    type model APIs do not read, too large, not base64)."""
    if block.get("type") != "image" or block.get("mimeType") not in IMAGE_TYPES:
        return None
    data = block.get("data")
    if not isinstance(data, str) or len(data) > (MAX_ATTACHMENT_BYTES + 2) // 3 * 4:
        return None
    try:
        return Attachment(mime_type=block["mimeType"], data=data)
    except ValueError:
        return None


def _block(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        data = block.get("data")
        size = len(data) * 3 // 4 if isinstance(data, str) else 0
        return f"[{kind} {block.get('mimeType', '?')}, about {size:,} bytes, not shown]"
    if kind == "resource_link":
        return f"[resource {block.get('name', '')} at {block.get('uri', '?')}]"
    if kind == "resource":
        resource = block.get("resource") if isinstance(block.get("resource"), dict) else {}
        assert isinstance(resource, dict)
        if isinstance(resource.get("text"), str):
            return str(resource["text"])
        return f"[resource {resource.get('uri', '?')} ({resource.get('mimeType', 'binary')})]"
    return f"[{kind} content, not shown]"
