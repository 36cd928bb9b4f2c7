"""The `workflow.patched` ids of AgentWorkflow: each names behaviour that changed after
runs had started (and histories were recorded), and is checked where it applies
(through `patched` below); a run started since a level (`LEVELS`) answers the patches
before it without asking, so it writes one marker, when it starts. Never rename or
remove one while a run started before it may still be replayed: deploy/README.md,
"Retiring a patch", has the rule, and tests/histories/PATCHES.md which recorded
histories still need each.
"""

from __future__ import annotations

from temporalio import workflow

PATCH_UNIQUE_CALL_IDS = "unique-call-ids"
"""Empty or reused tool call ids from the model get a run-unique id."""
PATCH_PROVIDER_SAFE_CALL_IDS = "provider-safe-call-ids"
"""Those ids use only letters, digits, `_` and `-` (`<id>_t<turn>_<index>`)."""
PATCH_QUIET_REFUSALS = "quiet-refused-signals"
"""A malformed decision signal is recorded as refused (the SDK used to drop it), and a
decision signal that changes nothing (refused, malformed) no longer wakes the loop."""
PATCH_SWITCH_WHILE_WAITING = "switch-while-waiting"
"""A run waiting for a decision or a message continues as new once a switch is due."""
PATCH_PUBLISH_START_FAILURE = "publish-start-failure"
"""A run that fails or is cancelled before its state exists still sets its search attributes."""
PATCH_RESUME_UNDER_OWN_ID = "resume-under-own-id"
"""A snapshot resumed under its source's own id is a resume, not a continue-as-new."""
PATCH_ANY_SIGNAL = "any-signal-arguments"
"""Signals are taken by one dynamic handler: one with extra arguments, an unknown name
or a payload that is not the signal's is recorded as refused (it used to fail every
workflow task of the run, to be buffered, or to be dropped)."""
PATCH_BOUNDED_REFUSALS = "bounded-refusals"
"""`refused_decisions` and `refused_signals` keep their newest entries, counting the rest."""
PATCH_FIELD_LIMITS = "field-limits"
"""Decision and message payloads over `workflows.limits` are refused; held decisions and
queued messages are capped."""
PATCH_MAX_TURNS_LOWER_ONLY = "max-turns-lower-only"
"""`max_turns` from the input can only lower the agent's limit, not lift it."""
PATCH_REPEATED_KEYS = "repeated-argument-keys"
"""Tool-call arguments that name a key twice are malformed: answered to the model,
never pending approval (an approver could read one value where the tool gets another)."""
PATCH_CANCEL_IS_CANCEL = "cancel-during-model-call"
"""A run cancelled while its model call (or its start's describe_agent) runs ends
`cancelled`; it used to end `failed` with the activity's cancellation as the error."""
PATCH_HEARTBEATS = "heartbeats"
"""Model and tool calls get the spec's heartbeat timeout and retry time budget, and a
cancelled run waits for its running tools to stop (schema 1.2 specs)."""
PATCH_BOUND_DECISIONS = "bound-decisions"
"""Decisions are bound to what they decide (schema 1.3): payloads may carry `run_id`,
`arguments_sha256`, `expires_at`, `signature` and `always_when` (they used to be
refused as unknown fields), a mismatch or a bad signature is refused, only plain
rejections are held for calls not yet proposed, and `always` covers only calls with
the same arguments (or meeting `always_when`) while the tool's policy allows it."""
PATCH_RENAME_UNSAFE_IDS = "rename-unsafe-call-ids"
"""A call id outside `proposed_calls.SAFE_CALL_ID` (an `ESC[8m` that hides a terminal
row, bidi overrides, spaces) is renamed `call_t<turn>_<index>`."""
PATCH_VERIFIED_RESUME = "verified-resume"
"""A run resumed or forked from a snapshot (not its own continue-as-new) takes its
agent spec from the worker (`describe_agent`), judges its open calls again, and drops
the snapshot's decisions on them, its held decisions and its `always` rules
(`workflows.resume_trust`): a forged snapshot authorises nothing."""
PATCH_FINITE_NUMBERS = "finite-argument-numbers"
"""Tool-call arguments with NaN, Infinity or a number too large for a float are
malformed (answered to the model): comparisons with NaN are all false, so a `when`
condition such as `amount > 1000` did not hold and the call skipped approval."""
PATCH_EXECUTION_BOUND = "execution-bound-decisions"
"""A run records its execution (`RunState.execution_id`, schema 1.4: Temporal's first
run id of its chain): a decision naming another execution is refused and a signed
decision must name it, so a decision captured from an earlier run under a reused
workflow id cannot be replayed into this one."""
PATCH_STRUCTURED_OUTPUT = "structured-output"
"""An agent with an output type (schema 1.5) asks the model for it with a strict JSON
Schema; a final reply that does not match goes back to the model with the error
(`output_retries`), then the run ends `output_invalid`."""
PATCH_TOTAL_TOKENS = "total-tokens-attribute"
"""The run keeps the `AgentTotalTokens` search attribute current (schema 1.8)."""
PATCH_CONTEXT_OVERLAY = "resume-context-overlay"
"""A resume's start input `context` is laid over the snapshot's tool context; before,
it was ignored."""
PATCH_PAUSE = "pause-resume"
"""The `pause` and `resume` signals and updates pause a run (schema 1.12); before,
they were unknown signals, refused."""
PATCH_TOTAL_COST = "total-cost-attribute"
"""A priced run keeps the `AgentTotalCost` search attribute current (schema 1.10)."""
PATCH_LENIENT_RESUME = "resume-from-other-tools"
"""A start input whose `resume_from` was written by another tool loads: `null` for an
empty list or map (Go, the `temporal` CLI printing `get_state`) reads as empty, and a
whole `get_state` answer's `"page": null` is dropped (`snapshot.lenient_document`);
before, such a run failed as invalid input."""
PATCH_MCP_TOOLS = "mcp-tools"
"""An agent with MCP servers (schema 1.15) has their tools listed when a run starts or
resumes, and its MCP tools called through `temporalio-mcp`; asked only for such agents."""
PATCH_MCP_IDEMPOTENCY_KEY = "mcp-idempotency-key"
"""An MCP tool call carries its idempotency key in the request's `_meta`
(`contract.MCP_IDEMPOTENCY_KEY`); before, it carried none."""
PATCH_MCP_REFRESH = "mcp-list-again"
"""An agent's MCP tools are listed again before the model answers a session message
that came after they were listed, and on the `refresh_tools` signal (schema 1.16);
before, once per run (start or resume), and `refresh_tools` was an unknown signal."""
PATCH_MCP_IMAGES = "mcp-images"
"""An MCP tool's images are kept whole in its result (`ToolResult.attachments`, schema
1.17) and sent to a model that reads them (`AgentSpec.send_tool_images`); before, only
a line described each."""
PATCH_WEBHOOKS = "webhooks"
"""A run whose agent has webhook subscriptions (schema 1.18) announces its events: a
delivery workflow per event and endpoint (`workflows.webhook_delivery`), and takes
the `webhook_delivery` reports; asked only for such runs."""
PATCH_RUN_EVENTS = "run-events"
"""A run publishes its events on a Workflow Streams log (`workflows.event_stream`):
followed with `agentctl watch` and `AgentClient.events`; before, a run had no stream
and its `__temporal_workflow_stream_*` names were unknown."""
PATCH_HANDOFFS = "handoffs"
"""A call of a handoff tool (`ToolSpec.handoff`) switches the run's agent
(`workflows.handoffs`) instead of running an activity; asked only when a reply calls
one, so runs without handoffs record no marker."""

PATCH_AGENT_TOOLS = "agent-tools"
"""A call of an agent tool (`ToolSpec.runs_agent`) runs that agent as a child run
(`workflows.agent_calls`) instead of an activity; asked only when a reply calls one."""

PATCH_TREE_APPROVALS = "tree-approvals"
"""A run called as a tool reports the calls waiting for a decision in it and below it
to its caller (`sub_run_report`), and takes decisions its caller passes down
(`forwarded_decision`); a caller lists them and passes decisions for them down
(`workflows.tree_approvals`). Asked when a child first reports, and when a caller
first takes a report; before, a caller showed only its own calls."""

PATCH_TREE_SNAPSHOTS = "tree-snapshots"
"""A run resumed from a snapshot that carries the children of its open agent calls
(`RunState.sub_runs`, schema 1.24) resumes each child from its state instead of
starting the agent afresh; asked only when such a call runs."""

PATCH_TREE_PAUSE = "tree-pause"
"""Pausing or resuming a run (signal or update) pauses or resumes the child runs it
waits on too (agents called as tools), each by the same signal; asked only when the
run has children in flight."""

PATCH_TREE_BUDGETS = "tree-budgets"
"""A run with a token budget may call agents as tools: each child gets a share of what
is left, and what it used counts against the budget (`RunState.sub_run_usage`, schema
1.25); before, such a call was refused. Asked only when such a run calls one."""

PATCH_TREE_START = "tree-start"
"""A run whose start was signed starts the runs it calls as tools with who signed it
(`AgentInput.caller_start`, checked by the child), so `separate_duties` holds in them;
asked only when such a run calls an agent. Before, children started unsigned."""

PATCH_CHILD_FAILURE_POLICY = "child-failure-policy"
"""A child that does not complete fails the run that called it when the tool says so
(`ToolSpec.on_failure="fail_run"`, schema 1.26); asked only then."""

PATCH_UPGRADE_AT_CONTINUE_AS_NEW = "upgrade-at-continue-as-new"
"""On a versioned worker (Worker Versioning, runs pinned to their build): a run
continues as new once the deployment's current build changed, and the new run starts
on the current build (`ContinueAsNewVersioningBehavior.AUTO_UPGRADE`); asked only on
versioned workers. Before, a run stayed on its build for good."""

PATCH_DEFINITION_UPDATES = "definition-updates"
"""A run whose agent declares `definition_updates` takes a changed definition at the
points it names (`workflows.definitions`, schema 1.28); asked only for such an agent.
Before, every run kept its definition to the end."""

PATCH_WAKE_FROM_STEP = "wake-from-step"
"""A wait for a decision, a message or a resume counts the changes since its step was
chosen, so a signal that came while the run was preparing the step (announcing it to
webhooks) ends it; asked only when one did. Before, the run slept through it until the
next signal or deadline."""

PATCH_LOCAL_TOOLS = "local-tools"
"""A tool declared local (`ToolSpec.local`, schema 1.29) runs as a local activity;
asked only for such a tool. Before, every tool ran as an activity of its own."""

PATCH_START_WHEN_DECIDED = "start-when-decided"
"""A call approved while other calls of its reply run starts at once, and its result
joins theirs in the reply's order; asked only when that happens. Before, it waited
until they had all finished."""

PATCH_TOOL_QUEUES = "tool-queues"
"""A tool placed on a task queue of its own (`ToolSpec.task_queue`, schema 1.30) runs
there, and a call no worker of that queue starts in time is a tool error the model
sees; asked only for such a tool. Before, every tool ran on the run's queue."""

PATCH_COALESCED_COUNTERS = "coalesced-counters"
"""When only a run's counters changed (AgentTurn, AgentTotalTokens, AgentTotalCost)
within `visibility.COUNTERS_INTERVAL` of its last search-attribute upsert, they wait
for the next upsert, and a run continuing as new sets any still waiting first; asked
only when that happens. Before, every change was upserted at once: one history event
and one visibility write a turn."""

PATCH_ASKED_AT_START = "patches-asked-at-start"
"""A run started since this patch asks it first (`ask_at_start`, one marker) and counts
every patch listed before it in `ORDER` as asked and true, without a marker of its
own (a patch listed after it is asked right after it). Before, each patch was asked
where its branch is, the first time the run got there: one marker and one
`TemporalChangeVersion` upsert per patch per run, and a patch first asked after a
local tool's result broke the replay of a run that answered a query while that tool
ran (Temporal's core then completes the workflow task early and hands the result to
the workflow in the next task, while a replay hands it over in the first, before the
next task's markers are announced: `patched` answered False)."""

PATCH_CHECKED_TREE_SIGNALS = "checked-tree-signals"
"""A child's report over the bounds a run reports within (`REPORT_ARGUMENT_CHARS` of
arguments), or naming a call whose arguments are not a JSON object, is refused; a
decision passed down to a run that has no caller to answer (not called as a tool) is
refused. Before, such a report was kept (a forged one could put megabytes in the
state, or arguments no summary could read), and such a decision waited for an answer
that never went, so the run could not continue as new or end."""
PATCH_GUARDRAIL_CHECK_ITEMS = "guardrail-check-items"
"""A run resumed from a snapshot it cannot verify drops, with the checks of what the
model has not answered, any check that names an item after itself or after the
latest reply. Before, such a forged check vouched for a later message or the final
reply, and its guardrail never ran."""
PATCH_CHECKED_TOOL_OUTCOMES = "checked-tool-outcomes"
"""A tool's outcome is taken for the call it answers only: its call id is the call's, a
`run_tool` activity (a tools-only worker can be anyone's) can hand the run to no
agent and bring no image, and the images a batch of MCP calls brings are kept within
the run's room together (each call counted the same room before)."""
PATCH_CHECKED_REPLIES = "checked-replies"
"""A reply's calls past `loop.MAX_CALLS_PER_REPLY`, and calls whose arguments hold text
no UTF-8 can carry (a lone surrogate), are answered to the model as errors, never run
or held for approval. Before, thousands of calls were all scheduled in one workflow
task, and such arguments could not be written to the run's events."""
PATCH_LEVEL_2 = "patch-level-2"
"""A level (`LEVELS`): a run started since it asks it first, one marker, and counts
every patch before it in `ORDER` as asked and true (up to `checked-replies`)."""
PATCH_GUARDED_RETURNS = "guarded-returns"
"""A handoff back to an agent the run had before keeps the approvals its MCP tools
asked then (`mcp_tools.returning`: a tool it did not have then needs approval unless
its server's configuration says not), and an MCP tool's name is checked whole (a name
followed by a line break passed). Before, its tools were listed as at a start: a
server that marked a tool read-only meanwhile took its approval away."""

ORDER: tuple[str, ...] = (
    PATCH_UNIQUE_CALL_IDS,
    PATCH_PROVIDER_SAFE_CALL_IDS,
    PATCH_QUIET_REFUSALS,
    PATCH_SWITCH_WHILE_WAITING,
    PATCH_PUBLISH_START_FAILURE,
    PATCH_RESUME_UNDER_OWN_ID,
    PATCH_ANY_SIGNAL,
    PATCH_BOUNDED_REFUSALS,
    PATCH_FIELD_LIMITS,
    PATCH_MAX_TURNS_LOWER_ONLY,
    PATCH_REPEATED_KEYS,
    PATCH_CANCEL_IS_CANCEL,
    PATCH_HEARTBEATS,
    PATCH_BOUND_DECISIONS,
    PATCH_RENAME_UNSAFE_IDS,
    PATCH_VERIFIED_RESUME,
    PATCH_FINITE_NUMBERS,
    PATCH_EXECUTION_BOUND,
    PATCH_STRUCTURED_OUTPUT,
    PATCH_TOTAL_TOKENS,
    PATCH_CONTEXT_OVERLAY,
    PATCH_PAUSE,
    PATCH_TOTAL_COST,
    PATCH_LENIENT_RESUME,
    PATCH_MCP_TOOLS,
    PATCH_MCP_IDEMPOTENCY_KEY,
    PATCH_MCP_REFRESH,
    PATCH_MCP_IMAGES,
    PATCH_WEBHOOKS,
    PATCH_RUN_EVENTS,
    PATCH_HANDOFFS,
    PATCH_AGENT_TOOLS,
    PATCH_TREE_APPROVALS,
    PATCH_TREE_SNAPSHOTS,
    PATCH_TREE_PAUSE,
    PATCH_TREE_BUDGETS,
    PATCH_TREE_START,
    PATCH_CHILD_FAILURE_POLICY,
    PATCH_UPGRADE_AT_CONTINUE_AS_NEW,
    PATCH_DEFINITION_UPDATES,
    PATCH_WAKE_FROM_STEP,
    PATCH_LOCAL_TOOLS,
    PATCH_START_WHEN_DECIDED,
    PATCH_TOOL_QUEUES,
    PATCH_COALESCED_COUNTERS,
    PATCH_ASKED_AT_START,
    PATCH_CHECKED_TREE_SIGNALS,
    PATCH_GUARDRAIL_CHECK_ITEMS,
    PATCH_CHECKED_TOOL_OUTCOMES,
    PATCH_CHECKED_REPLIES,
    PATCH_LEVEL_2,
    PATCH_GUARDED_RETURNS,
)
"""Every patch, in the order they were added. A new patch goes at the end, never
before a level: a run that started with the level asks it when it starts (its own
marker) until a newer level (below) is added after it."""

LEVELS: tuple[str, ...] = (PATCH_ASKED_AT_START, PATCH_LEVEL_2)
"""Patches asked when a run starts, oldest first; each counts the patches before it in
`ORDER` as asked. To fold the patches added since the newest level into one marker
again, add a new level at the end of `ORDER` and here (runs replayed from before it
still find their older level, or none, and ask as they did)."""

_RANK = {patch_id: rank for rank, patch_id in enumerate(ORDER)}

DEPRECATED: frozenset[str] = frozenset()
"""Patches in the first step of their retirement (deploy/README.md, "Retiring a
patch"): every run takes the new branch and the marker is written as deprecated, so
the id can be deleted once no run started before this step is open."""


def ask_at_start() -> None:
    """The first thing a run does: ask the levels, newest first, until one answers
    True (a new run: the newest, one marker; a replayed run: the one it recorded, or
    none), then every patch added after that level, so a run with a level asks nothing
    later (a replayed run that started before such a patch answers False for good).
    `patched` asks the levels again in the same order, so it only ever reads answers
    the SDK has kept (a level asked for the first time later would write its marker
    wherever that happened to be)."""
    for level in reversed(LEVELS):
        if patched(level):
            for later in ORDER[_RANK[level] + 1 :]:
                if later not in LEVELS and later not in DEPRECATED:
                    patched(later)
            return


def written_at_start() -> list[str]:
    """The patch markers a run started by this build writes, all when it starts: its
    level's, then one for each patch added since (none once a newer level folds them)."""
    level = LEVELS[-1]
    later = ORDER[_RANK[level] + 1 :]
    return [level, *(p for p in later if p not in LEVELS and p not in DEPRECATED)]


def patched(patch_id: str) -> bool:
    """`workflow.patched(patch_id)`, True for a deprecated patch, and True without a
    marker for a patch before the level the run started with. Every branch on a patch
    asks here, so `tests/support/patch_needs.py` can replay the recorded histories as
    if a patch were retired and name the ones that still need it."""
    if patch_id not in LEVELS and _implied(patch_id):
        return True  # (deprecated or not: a run with the level writes no marker of it)
    if patch_id in DEPRECATED:
        workflow.deprecate_patch(patch_id)
        return True
    return workflow.patched(patch_id)


def _implied(patch_id: str) -> bool:
    """The run started with a level that counts `patch_id` as asked."""
    for level in reversed(LEVELS):
        if patched(level):  # answered at the start (`ask_at_start`): kept, no marker
            return _RANK[patch_id] < _RANK[level]
    return False
