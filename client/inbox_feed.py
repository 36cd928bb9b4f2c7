"""What the approval inbox lists (`GET /inbox/calls`, `GET /inbox/feed`): every call
waiting for a decision in the runs of the gateway's task queue, read with queries and
visibility only, so an open inbox adds nothing to any run's history.

One read is a visibility list (`AgentPendingApprovals > 0` on this task queue) and one
`get_pending_approvals` query per run listed; a run's policy for a call (why it waits,
who may decide, its deadline) comes once per run from its `get_state` query and is
kept. One `InboxFeed` serves every browser of a gateway: it reads every `interval`
seconds while anyone follows it (and at once after a decision made through the
gateway, `poke`), so a hundred open inboxes cost what one does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any, Literal

from durable_agents.client import ui_links
from durable_agents.client.agent_client import PENDING_QUERY, AgentClient
from durable_agents.workflows import contract
from durable_agents.workflows import search_attributes as sa
from durable_agents.workflows.agent_spec import ApprovalCondition, ApprovalPolicy
from durable_agents.workflows.argument_view import masked, named_values
from durable_agents.workflows.payloads import PendingApproval
from pydantic import BaseModel, JsonValue

log = logging.getLogger(__name__)

INTERVAL = 2.0
"""Seconds between two reads while an inbox is open: a new call shows within about
this (plus visibility's own lag); each read costs one visibility call and one query per
waiting run."""
QUERY_TIMEOUT = timedelta(seconds=2)
"""How long one run may take to answer; a run that does not is listed as unanswered."""
MAX_RUNS = 500
"""Runs read at most per refresh (the oldest waiting first are not favoured: visibility's
order)."""


class PolicyView(BaseModel):
    """Why a call waits and who may decide it, from the tool's approval policy."""

    why: str
    approvers: list[str] | None = None
    require_signature: bool = False
    separate_duties: bool = False
    limits: list[str] = []
    on_timeout: str | None = None
    allow_always: bool = True
    """Whether an approval may also approve this tool's later calls in the run
    (`always`)."""
    limit_conditions: list[ApprovalCondition] = []
    """`limits` as conditions: an `always` may cover every later call within them
    (`always_when`)."""


class InboxCall(BaseModel):
    """A call waiting for a decision, as the page shows it."""

    call_id: str
    run_id: str
    """The run that holds the call (a child's, for an agent called as a tool)."""
    root_run_id: str
    """The run the decision is sent to (the top of `path`, as far as the inbox saw)."""
    path: list[str]
    agent: str
    tool: str
    arguments: str
    args: dict[str, JsonValue] | None = None
    arguments_sha256: str | None = None
    execution_id: str | None = None
    requested_at: str
    sensitive: list[str] = []
    arguments_pretty: str
    """Every argument in full, as indented JSON (the arguments' text as sent when they
    are not a JSON object)."""
    arguments_masked: str | None = None
    """The same with the values of sensitive parameters masked (None: the tool has
    none), shown until the person asks for the values."""
    policy: PolicyView | None = None
    deadline: str | None = None
    kind: Literal["approval", "answer"] = "approval"
    """`answer`: a call of an external tool, answered with JSON (`answer_schema`)."""
    answer_schema: dict[str, JsonValue] | None = None
    answer_schema_pretty: str | None = None
    """(`answer`) the answer's JSON Schema as indented JSON, shown above the answer box."""
    short_id: str | None = None
    ui_url: str | None = None
    """The run that holds the call, in the Temporal UI (None: the UI's address is not
    known to the gateway)."""


class InboxView(BaseModel):
    """One read of every waiting call."""

    calls: list[InboxCall] = []
    unanswered: list[str] = []
    """Runs listed as waiting that did not answer their query in time."""
    error: str | None = None
    """Why the last read failed (Temporal unreachable); `calls` are then the last read's."""


class InboxFeed:
    """The shared reader of waiting calls (see the module docstring)."""

    def __init__(
        self,
        agents: AgentClient,
        *,
        interval: float = INTERVAL,
        query_timeout: timedelta = QUERY_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        ui: str | None = None,
    ) -> None:
        self._agents = agents
        self.agents = agents
        """The client it reads with (the inbox's on-demand reads use it too)."""
        self.ui = ui
        """The Temporal UI's address, for each call's `ui_url` (None: no links)."""
        self.interval = interval
        self._query_timeout = query_timeout
        self._clock = clock
        self.view = InboxView()
        self._read_at = -math.inf
        self._version = 0
        self._changed = asyncio.Condition()
        self._reading = asyncio.Lock()
        self._wake = asyncio.Event()
        self._followers = 0
        self._task: asyncio.Task[None] | None = None
        self._policies: dict[tuple[str, str | None], dict[str, ApprovalPolicy] | None] = {}
        self.counts: Counter[str] = Counter()
        """Calls made so far: `visibility` (list calls), `queries` (pending queries),
        `state_reads` (`get_state`, once per run); `reads` done."""

    async def current(self) -> InboxView:
        """The latest read, read again first when it is older than `interval`."""
        if self._clock() - self._read_at >= self.interval:
            await self.refresh()
        return self.view

    async def refresh(self) -> None:
        """Read again (requests that ask at once share one read)."""
        asked = self._clock()
        async with self._reading:
            if self._read_at >= asked:
                return
            started = self._clock()
            try:
                view = await self._read()
                self.counts["reads"] += 1
            except Exception as err:  # Temporal down: say so, keep the last calls shown
                log.warning("inbox: reading waiting calls failed: %s", err)
                view = self.view.model_copy(update={"error": f"cannot read the runs: {err}"})
            self._read_at = started
            if view != self.view:
                self.view = view
                async with self._changed:
                    self._version += 1
                    self._changed.notify_all()

    def poke(self) -> None:
        """Read again now (a decision was just made): the call leaves every inbox at once."""
        self._read_at = -math.inf
        self._wake.set()

    @contextlib.asynccontextmanager
    async def following(self) -> AsyncIterator[None]:
        """While inside, the feed reads every `interval` seconds (one reader for all)."""
        self._followers += 1
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._poll())
        try:
            yield
        finally:
            self._followers -= 1

    async def changed_since(self, seen: int, *, timeout: float) -> int:
        """The view's version once it is not `seen` (-1: at once), or after `timeout`."""
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self._version != seen), timeout
                )
            return self._version

    async def _poll(self) -> None:
        while self._followers > 0:
            self._wake.clear()
            await self.refresh()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)

    async def _read(self) -> InboxView:
        client = self._agents.client
        query = f'{PENDING_QUERY} AND TaskQueue = "{self._agents.task_queue}"'
        self.counts["visibility"] += 1
        listed: dict[str, str | None] = {}
        async for run in client.list_workflows(query, limit=MAX_RUNS):
            listed[run.id] = run.typed_search_attributes.get(sa.AGENT_NAME)
        answers = await asyncio.gather(*(self._pending(r) for r in listed), return_exceptions=True)
        found: dict[tuple[str, str], tuple[PendingApproval, str]] = {}
        unanswered = []
        for run_id, answer in zip(listed, answers, strict=True):
            if isinstance(answer, BaseException):
                unanswered.append(run_id)
                continue
            for item in answer:
                key = (item.run_id or run_id, item.call_id)
                kept = found.get(key)
                if kept is None or len(item.path) > len(kept[0].path):  # the view from the top
                    found[key] = (item, run_id)
        calls = []
        for (holder, _), (item, root) in found.items():
            tools = await self._tool_policies(holder, item.execution_id)
            policy = (tools or {}).get(item.tool)
            found_call = _call(item, holder, root, listed.get(holder), policy)
            if self.ui is not None:
                namespace = self._agents.client.namespace
                found_call.ui_url = ui_links.run(self.ui, namespace, holder)
            calls.append(found_call)
        held = {(c.run_id, c.execution_id) for c in calls}
        for gone in set(self._policies) - held:
            del self._policies[gone]
        calls.sort(key=lambda c: (c.requested_at, c.run_id, c.call_id))
        return InboxView(calls=calls, unanswered=sorted(unanswered))

    async def _pending(self, run_id: str) -> list[PendingApproval]:
        self.counts["queries"] += 1
        return await self._agents.client.get_workflow_handle(run_id).query(
            contract.QUERY_GET_PENDING_APPROVALS,
            result_type=list[PendingApproval],
            rpc_timeout=self._query_timeout,
        )

    async def _tool_policies(
        self, run_id: str, execution_id: str | None
    ) -> dict[str, ApprovalPolicy] | None:
        """The approval policy of each tool of the run (read once per run; None: unread)."""
        key = (run_id, execution_id)
        if key not in self._policies:
            self.counts["state_reads"] += 1
            try:
                async with asyncio.timeout(self._query_timeout.total_seconds()):
                    state = await self._agents.state(run_id)
            except Exception as err:  # shown without its policy, tried again next read
                log.info("inbox: no policy for run %s: %s", run_id, err)
                return None
            self._policies[key] = {
                t.name: t.approval for t in state.agent.tools if t.needs_approval
            }
        return self._policies[key]


def _call(
    item: PendingApproval,
    holder: str,
    root: str,
    agent: str | None,
    policy: ApprovalPolicy | None,
) -> InboxCall:
    deadline = None
    if policy is not None and policy.timeout is not None:
        deadline = _time(item.requested_at + policy.timeout)
    path = item.path or [agent or "?"]
    return InboxCall(
        call_id=item.call_id,
        run_id=holder,
        root_run_id=root,
        path=path,
        agent=path[-1],
        tool=item.tool,
        arguments=item.arguments,
        args=item.args,
        arguments_sha256=item.arguments_sha256,
        execution_id=item.execution_id,
        requested_at=_time(item.requested_at),
        sensitive=item.sensitive,
        arguments_pretty=_pretty(item.args, item.arguments),
        arguments_masked=_masked(item) if item.sensitive else None,
        policy=_policy(policy) if policy is not None else None,
        deadline=deadline,
        kind=item.kind,
        answer_schema=item.answer_schema,
        answer_schema_pretty=(
            json.dumps(item.answer_schema, indent=2, ensure_ascii=False)
            if item.kind == "answer"
            else None
        ),
        short_id=item.short_id,
    )


def _pretty(args: dict[str, JsonValue] | None, text: str) -> str:
    return text if args is None else json.dumps(args, indent=2, ensure_ascii=False)


def _masked(item: PendingApproval) -> str:
    if item.args is None:
        shown = named_values(item.arguments, item.sensitive)
        return shown if isinstance(shown, str) else json.dumps(dict(shown), indent=2)
    hidden = {n: masked(v) if n in item.sensitive else v for n, v in item.args.items()}
    return json.dumps(hidden, indent=2, ensure_ascii=False)


def _policy(policy: ApprovalPolicy) -> PolicyView:
    if policy.when:
        why = "needs a decision when " + " or ".join(_condition(c) for c in policy.when)
    else:
        why = "every call of this tool needs a decision"
    on_timeout = None
    if policy.timeout is not None:
        on_timeout = "the call is rejected" if policy.on_timeout == "reject" else "the run fails"
    return PolicyView(
        why=why,
        approvers=policy.approvers,
        require_signature=policy.require_signature or policy.separate_duties,
        separate_duties=policy.separate_duties,
        limits=[_condition(c) for c in policy.limits],
        on_timeout=on_timeout,
        allow_always=policy.allow_always,
        limit_conditions=policy.limits,
    )


def _condition(condition: ApprovalCondition) -> str:
    value: Any = condition.value
    return f"{condition.field} {condition.op} {json.dumps(value, ensure_ascii=False)}"


def _time(moment: Any) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
