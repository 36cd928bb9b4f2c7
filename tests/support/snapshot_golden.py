"""The golden snapshots, one per released schema version (`tests/fixtures/runstate-<v>.json`),
the states they load as, and helpers to edit them."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from durable_agents.workflows import definitions
from durable_agents.workflows.canonical import canonical_json
from durable_agents.workflows.migrations import MIGRATIONS
from durable_agents.workflows.state import (
    SCHEMA_VERSION,
    AgentSpec,
    ApprovalCondition,
    ApprovalPolicy,
    ApproverKey,
    AssistantMessage,
    Attachment,
    BudgetRequest,
    Compaction,
    ContextPolicy,
    Decision,
    DecisionAttempt,
    DefinitionCheck,
    DroppedItem,
    ErrorInfo,
    GuardrailCheck,
    GuardrailSpec,
    Handoff,
    ImportedDecision,
    ImportRecord,
    MCPServer,
    MCPToolsLeft,
    ModelPrice,
    ModelSettings,
    Notices,
    OutputSpec,
    Pause,
    PauseEvent,
    ReasoningItem,
    Redefinition,
    RefusedSignal,
    RetrySpec,
    RunOrigin,
    RunState,
    RunStatus,
    Starter,
    StartProof,
    SubApproval,
    SubRunSnapshot,
    ToolCall,
    ToolListing,
    ToolResult,
    ToolSpec,
    ToolsRefresh,
    Usage,
    UserMessage,
    WebhookDelivery,
    WebhookSubscription,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KEY = b"test-signing-key"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
OBJECT = {"type": "object", "properties": {}}
REFUND_PARAMETERS = {
    "type": "object",
    "properties": {"order_id": {"type": "integer"}, "amount": {"type": "number"}},
    "required": ["order_id", "amount"],
}


def case(make: Callable[[], str | bytes], message: str, id: str) -> Any:
    """A refusal case: `make` builds the file, `message` is the refusal expected."""
    return pytest.param(make, message, id=id)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _version_key(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


RELEASED = sorted({*MIGRATIONS, SCHEMA_VERSION}, key=_version_key)
"""Every released schema version, oldest first: each has a committed schema and fixture."""


def fixture_path(version: str) -> Path:
    """Where the golden snapshot of a released version is committed."""
    return FIXTURES / f"runstate-{version}.json"


def golden_state(version: str = SCHEMA_VERSION) -> RunState:
    """What the golden fixture of `version` loads as with the newest code.

    Each fixture was written once by the code of its version, with `dumps` of
    this state, and is never written again. Releasing a version: add its
    function to `_GOLDEN` (covering what the version added) and write its fixture
    with `fixture_path(v).write_text(dumps(golden_state(v)))`; on a later bump,
    make each function return what its fixture migrates to.
    """
    return _GOLDEN[version]()


def _golden_1_0() -> RunState:
    """Every item type, every kind of decision record (signal, update with edited
    arguments, `always` and the rule it made), an approval policy with a
    condition, approvers and a timeout, a held and a refused decision signal.
    """
    refund_reason = "customer is verified"
    rejection = (
        "Tool call rejected by bob: account deletion needs a ticket Do not retry it unchanged."
    )
    return RunState(
        run_id="support-7",
        agent=AgentSpec(
            name="support",
            instructions="Help customers with orders.",
            model="gpt-test",
            max_turns=8,
            tools=[
                ToolSpec(
                    name="lookup_order",
                    description="Find an order.",
                    parameters={
                        "type": "object",
                        "properties": {"order_id": {"type": "integer"}},
                        "required": ["order_id"],
                    },
                ),
                ToolSpec(
                    name="refund",
                    description="Refund an order.",
                    parameters=REFUND_PARAMETERS,
                    needs_approval=True,
                    approval=ApprovalPolicy(
                        when=[ApprovalCondition(field="amount", op=">", value=100)],
                        approvers=["alice", "bob"],
                        timeout=timedelta(hours=24),
                    ),
                    timeout_seconds=30.0,
                    retry=RetrySpec(maximum_attempts=1),
                ),
                ToolSpec(
                    name="delete_account",
                    description="",
                    parameters=OBJECT,
                    needs_approval=True,
                    approval=ApprovalPolicy(
                        approvers=["bob"], timeout=timedelta(minutes=30), on_timeout="fail"
                    ),
                ),
            ],
        ),
        status=RunStatus.FAILED,
        turn=2,
        max_turns=8,
        context={"customer": {"id": "cus_1", "tier": "gold", "flags": [True, None, 1.5, "ü€"]}},
        items=[
            UserMessage(content="Refund orders 42 and 43, then close my account."),
            AssistantMessage(
                turn=1,
                tool_calls=[
                    ToolCall(call_id="c1", tool="lookup_order", arguments='{"order_id": 42}'),
                    ToolCall(
                        call_id="c2",
                        tool="refund",
                        arguments='{"order_id": 42, "amount": 190.0}',
                        needs_approval=True,
                    ),
                ],
                at=at(1.25),
            ),
            ToolResult(call_id="c1", content='{"order": 42, "total": 150.0}'),
            Decision(
                call_id="c2",
                decision="approve",
                approver="alice",
                reason=refund_reason,
                always=True,
                via="update",
                arguments={"order_id": 42, "amount": 150.0},
                at=at(60),
            ),
            ToolResult(call_id="c2", content="refunded 150.0 on order 42"),
            AssistantMessage(
                turn=2,
                content="Refunding order 43 and closing the account.",
                tool_calls=[
                    ToolCall(
                        call_id="c3",
                        tool="refund",
                        arguments='{"order_id": 43, "amount": 120}',
                        needs_approval=True,
                    ),
                    ToolCall(
                        call_id="c4", tool="delete_account", arguments="{}", needs_approval=True
                    ),
                ],
                at=at(61.5),
            ),
            Decision(
                call_id="c3",
                decision="approve",
                approver="alice",
                reason=refund_reason,
                via="rule",
                at=at(61.5),
            ),
            Decision(
                call_id="c4",
                decision="reject",
                approver="bob",
                reason="account deletion needs a ticket",
                via="signal",
                at=at(90),
            ),
            ToolResult(call_id="c4", content=rejection, is_error=True),
            ToolResult(call_id="c3", content="refunded 120 on order 43"),
        ],
        error=ErrorInfo(
            type="ModelRequestError",
            message="400 Bad Request: context length exceeded",
            details={"status_code": 400, "body": {"error": {"code": "context_length_exceeded"}}},
        ),
        usage=Usage(model_calls=2, input_tokens=812, output_tokens=97, total_tokens=909),
        origin=RunOrigin(run_id="support-3", turn=0, mode="resume"),
        workflow_runs=["0195a6f1-7c2e-7d43-9b1a-3f5e2d4c1b0a"],
        held_decisions=[
            DecisionAttempt(
                call_id="c5", decision="approve", approver="bob", always=True, at=at(93.5)
            )
        ],
        refused_decisions=[
            DecisionAttempt(
                call_id="c4",
                decision="approve",
                approver="carol",
                reason="ticket T-9 filed",
                arguments={"confirm": True},
                at=at(91),
                refused_because="tool call c4 is already decided (reject by bob)",
            )
        ],
        created_at=T0,
        updated_at=at(95.000123),
    )


def _golden_1_1() -> RunState:
    """1.0's, but turn 2's calls were proposed by run support-3 and carried open into
    this run by a resume: they keep support-3's idempotency keys (new in 1.1); a
    tool's retry policy names error types never retried, and the agent has a
    history-size budget, and a decision names the program that sent it (new in 1.1)."""
    state = _golden_1_0()
    state.agent.history_bytes_per_workflow_run = 2_000_000
    state.agent.tools[0].retry.non_retryable_error_types = ["LookupError"]
    first_decision = next(i for i in state.items if isinstance(i, Decision))
    first_decision.sender = "agentctl"
    state.origin = RunOrigin(run_id="support-3", turn=2, mode="resume")
    for call in state.items[5].tool_calls:  # type: ignore[union-attr]
        call.idempotency_key = f"support-3:{call.call_id}"
    return state


def _golden_1_2() -> RunState:
    """1.1's, with what 1.2 added: heartbeat timeouts on the model and a tool, a
    retry time budget, and the bounded refusal audit (dropped counts, a refused
    signal of an unknown name)."""
    state = _golden_1_1()
    state.agent.model_heartbeat_timeout_seconds = 5.0
    state.agent.model_retry.budget_seconds = 21_600.0
    state.agent.tools[0].heartbeat_timeout_seconds = 5.0
    state.refused_decisions_dropped = 50
    state.refused_signals = [
        RefusedSignal(
            signal="aprove",
            payload='{"call_id":"c4","approver":"carol"}',
            refused_because="unknown signal 'aprove'",
            at=at(92),
        )
    ]
    state.refused_signals_dropped = 3
    return state


def _golden_1_3() -> RunState:
    """1.2's, with what 1.3 added: policy limits, a policy that requires signed
    decisions and forbids `always`, an approver key, decisions bound to their run
    and arguments (a scoped `always` with `always_when`, the rule it made, a signed
    rejection), and a decision dropped from a resumed snapshot, whose rule is revoked."""
    state = _golden_1_2()
    refund, delete = state.agent.tools[1], state.agent.tools[2]
    refund.approval.limits = [ApprovalCondition(field="amount", op="<=", value=1000)]
    delete.approval.require_signature = True
    delete.approval.allow_always = False
    state.agent.approver_keys = [
        ApproverKey(
            key_id="bob-2026",
            owner="bob",
            public_key="11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
            not_after=datetime(2027, 1, 1, tzinfo=UTC),
        )
    ]
    c2, c3, c4 = (i for i in state.items if isinstance(i, Decision))
    c2.run_id = "support-7"
    c2.arguments_sha256 = "9ac4d1a7d20e9cb0b3e3ee6b8c1a5dd4c1ce1a0e29e4cf1a0a5e0f7a5a1e5b52"
    c2.expires_at = "2026-03-02T09:00:00Z"
    c2.always_when = [ApprovalCondition(field="amount", op="<=", value=200)]
    c3.arguments_sha256 = "5b0f6a3c7a0c5d3a1f1f3c3e2d5b6a7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6"
    c4.run_id = "support-7"
    c4.arguments_sha256 = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    c4.expires_at = "2026-03-01T10:00:00+01:00"
    c4.signed_by = "bob-2026"
    state.agent.snapshot_keys = [
        ApproverKey(
            key_id="ops-export",
            owner="ops",
            public_key="A6EHv_POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg",
        )
    ]
    state.agent.refuse_unverified_snapshots = True
    state.revoked_rules = ["c2"]
    state.refused_decisions.append(
        DecisionAttempt(
            call_id="c9",
            decision="approve",
            approver="mallory",
            via="snapshot",
            at=at(94),
            refused_because="carried in a snapshot that could not be verified",
        )
    )
    return state


def _golden_1_4() -> RunState:
    """1.3's, with what 1.4 added: the run's execution and a signed start (who started
    it), a policy that separates duties, a tool's sensitive parameter, and decisions
    (and a refused attempt) that name the execution."""
    state = _golden_1_3()
    refund, delete = state.agent.tools[1], state.agent.tools[2]
    refund.sensitive = ["order_id"]
    delete.approval.separate_duties = True
    state.execution_id = "0b6b2a9e-3c1f-4d5e-9a7b-8c9d0e1f2a3b"
    state.started_by = Starter(key_id="carol-2026", owner="carol")
    c4 = [i for i in state.items if isinstance(i, Decision)][2]
    c4.execution_id = state.execution_id
    state.refused_decisions.append(
        DecisionAttempt(
            call_id="c4",
            decision="approve",
            approver="bob",
            execution_id="f00d0000-0000-4000-8000-000000000000",
            at=at(95),
            refused_because="the decision is for another execution of run support-7",
        )
    )
    return state


def _golden_1_5() -> RunState:
    """1.4's, with what 1.5 added: an output type (a strict schema, wrapped), its
    retries, a feedback message after an invalid reply, and the `output_invalid` end."""
    state = _golden_1_4()
    state.agent.output = OutputSpec(
        name="list_str",
        json_schema={
            "type": "object",
            "properties": {"output": {"type": "array", "items": {"type": "string"}}},
            "required": ["output"],
            "additionalProperties": False,
        },
        sha256="3f1d6c0e9b7a5c4d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d",
        wrapped=True,
    )
    state.agent.output_retries = 1
    state.items.append(
        UserMessage(
            content="Your reply is not a valid list_str: output: Field required\n"
            "Reply again with only the JSON that matches the required schema.",
            feedback=True,
        )
    )
    state.status = RunStatus.OUTPUT_INVALID
    state.error = ErrorInfo(
        type="OutputInvalid",
        message="the final reply is not a valid list_str after 2 attempts: output: Field required",
        details={"output_type": "list_str"},
    )
    return state


def _golden_1_6() -> RunState:
    """1.5's, with what 1.6 added: the agent's model settings (every field) and the
    run's, with a start input's temperature over the agent's."""
    state = _golden_1_5()
    state.agent.model_settings = ModelSettings(
        temperature=0.7,
        top_p=0.9,
        max_output_tokens=800,
        tool_choice=state.agent.tools[0].name,
        parallel_tool_calls=False,
        reasoning_effort="low",
        seed=7,
        stop=["END"],
        metadata={"team": "billing"},
        extra_headers={"X-Tenant": "acme"},
        extra_body={"top_k": 40},
    )
    state.model_settings = state.agent.model_settings.model_copy(update={"temperature": 0.0})
    return state


def _golden_1_7() -> RunState:
    """1.6's, with what 1.7 added: an input and an output guardrail in the spec, a
    passed input check and a tripped output check."""
    state = _golden_1_6()
    state.agent.input_guardrails = [GuardrailSpec(name="no_secrets", kind="input")]
    state.agent.output_guardrails = [
        GuardrailSpec(
            name="refund_cap",
            kind="output",
            timeout_seconds=10.0,
            retry=RetrySpec(maximum_attempts=2),
        )
    ]
    state.items.append(GuardrailCheck(kind="input", name="no_secrets", tripped=False, at=at(98)))
    state.items.append(
        GuardrailCheck(
            kind="output", name="refund_cap", tripped=True, reason="over 1000 EUR", at=at(99)
        )
    )
    return state


def _golden_1_8() -> RunState:
    """1.7's, with what 1.8 added: a token budget (the agent's, lowered by the run),
    cached and reasoning tokens in the totals, a reply with its own usage, and
    guardrail checks that name what they checked."""
    state = _golden_1_7()
    state.agent.token_budget = 100_000
    state.token_budget = 50_000
    state.usage.cached_input_tokens = 40
    state.usage.reasoning_tokens = 12
    checks = [i for i in state.items if isinstance(i, GuardrailCheck)]
    checks[0].item = 0  # the first message
    checks[1].item = max(n for n, i in enumerate(state.items) if isinstance(i, AssistantMessage))
    reply = next(i for i in reversed(state.items) if isinstance(i, AssistantMessage))
    reply.usage = Usage(
        model_calls=1,
        input_tokens=120,
        output_tokens=30,
        total_tokens=150,
        cached_input_tokens=40,
        reasoning_tokens=12,
    )
    return state


def _golden_1_9() -> RunState:
    """1.8's, with what 1.9 added: an agent that speaks the Responses API (without the
    settings it has no parameter for), a reply with its reasoning items (one carried
    encrypted with summaries, one without encrypted content)."""
    state = _golden_1_8()
    state.agent.model_api = "responses"
    unsupported = {"seed": None, "stop": None}
    state.agent.model_settings = state.agent.model_settings.model_copy(update=unsupported)
    state.model_settings = state.model_settings.model_copy(update=unsupported)
    reply = next(i for i in reversed(state.items) if isinstance(i, AssistantMessage))
    reply.reasoning = [
        ReasoningItem(
            id="rs_golden_1",
            summary=["**Checking the refund**", "The amount is under the cap."],
            encrypted_content="gAAAAABgolden-opaque-ciphertext==",
        ),
        ReasoningItem(id="rs_golden_2"),
    ]
    return state


def _golden_1_10() -> RunState:
    """1.9's, with what 1.10 added: the model's price from the worker's table (cached
    input priced on its own, in euros), the agent's cost budget lowered by the run,
    and the cost of each reply and of the run."""
    state = _golden_1_9()
    state.agent.price = ModelPrice(input=2.5, cached_input=1.25, output=10.0, currency="EUR")
    state.agent.cost_budget = 5.0
    state.cost_budget = 2.5
    reply = next(i for i in reversed(state.items) if isinstance(i, AssistantMessage))
    assert reply.usage is not None
    reply.usage.cost = state.agent.price.cost(reply.usage)
    state.usage.cost = reply.usage.cost
    return state


def _golden_1_11() -> RunState:
    """1.10's, with what 1.11 added: an agent that asks to extend its budgets (who may,
    up to what, for how long), a request approved with an edited budget, and one
    rejected at its deadline, each after the last reply."""
    state = _golden_1_10()
    state.agent.on_budget = "ask"
    state.agent.budget_approval = ApprovalPolicy(
        approvers=["finance"],
        timeout=timedelta(hours=4),
        limits=[ApprovalCondition(field="cost_budget", op="<=", value=20)],
    )
    state.items.append(
        BudgetRequest(
            call_id="budget/1",
            kind="cost",
            budget=2.5,
            needed=3.1,
            proposed=7.5,
            message="the next model call could cost up to 0.700000 EUR; the run has spent "
            "2.400000 of its budget of 2.5 EUR",
            at=at(100),
        )
    )
    state.items.append(
        Decision(
            call_id="budget/1",
            decision="approve",
            approver="finance",
            arguments={"cost_budget": 4},
            via="update",
            at=at(101),
        )
    )
    state.cost_budget = 4.0
    state.items.append(
        BudgetRequest(
            call_id="budget/2",
            kind="tokens",
            budget=50_000,
            needed=50_420,
            proposed=100_000,
            message="the next model call could use up to 1,000 tokens; the run has used "
            "49,420 of its budget of 50,000",
            at=at(102),
        )
    )
    state.items.append(
        Decision(
            call_id="budget/2",
            decision="reject",
            approver="system",
            reason="no decision within 4 h",
            via="timeout",
            at=at(103),
        )
    )
    return state


def _golden_1_12() -> RunState:
    """1.11's, with what 1.12 added: the run paused by an operator, with a reason."""
    state = _golden_1_11()
    state.paused = Pause(by="oncall", reason="the refunds look wrong", at=at(104))
    state.pause_log = [
        PauseEvent(action="pause", by="ann", at=at(100)),
        PauseEvent(action="resume", by="ann", at=at(101)),
        PauseEvent(action="pause", by="oncall", reason="the refunds look wrong", at=at(104)),
    ]
    return state


def _golden_1_13() -> RunState:
    """1.12's, with what 1.13 added: a context policy, a compaction that stubbed a tool
    output and one that summarized the first turns, and a call the provider refused as
    too long."""
    state = _golden_1_12()
    state.agent.context_policy = ContextPolicy(
        max_input_tokens=8_000, strategy="summarize", keep_recent_turns=1
    )
    results = [i for i in state.items if isinstance(i, ToolResult)]
    replies = [n for n, i in enumerate(state.items) if isinstance(i, AssistantMessage)]
    state.items.append(
        Compaction(
            turn=state.turn + 1,
            strategy="stub_tool_outputs",
            reason="window",
            up_to=replies[-1],
            stubbed=[results[0].call_id],
            tokens_before=9_100,
            tokens_after=6_200,
            at=at(105),
        )
    )
    state.items.append(
        Compaction(
            turn=state.turn + 1,
            strategy="summarize",
            reason="context_length_exceeded",
            up_to=replies[-1],
            summary="The user asked for a refund of order A12; it was looked up and approved.",
            tokens_before=6_200,
            tokens_after=900,
            usage=Usage(model_calls=1, input_tokens=5_000, output_tokens=40, total_tokens=5_040),
            at=at(106),
        )
    )
    state.context_overflow = state.turn + 1
    return state


def _golden_1_14() -> RunState:
    """1.13's, with what 1.14 added: a decision, and a held one, carrying the sender's
    metadata."""
    state = _golden_1_13()
    made = next(i for i in state.items if isinstance(i, Decision) and i.via == "update")
    made.metadata = {"ticket": "CHG-4711", "approved_in": "change-board", "risk": 2}
    state.held_decisions[0].metadata = {"ticket": "CHG-4712"}
    return state


def _golden_1_15() -> RunState:
    """1.14's, with what 1.15 added: an MCP server of the agent, and two of its tools in
    the run's tools (a read-only one without approval, a destructive one with)."""
    state = _golden_1_14()
    state.agent.mcp_servers = [
        MCPServer(name="tickets", prefix="tickets_", allow=["lookup_*", "delete_*"])
    ]
    schema = {"type": "object", "properties": {"ticket_id": {"type": "string"}}}
    state.agent.tools += [
        ToolSpec(
            name="tickets_lookup_ticket", description="Look a ticket up.", parameters=schema,
            mcp_server="tickets", mcp_tool="lookup_ticket",
        ),
        ToolSpec(
            name="tickets_delete_ticket", description="Delete a ticket.", parameters=schema,
            needs_approval=True, mcp_server="tickets", mcp_tool="delete_ticket",
        ),
    ]  # fmt: skip
    return state


def _golden_1_16() -> RunState:
    """1.15's, with what 1.16 added: the count of user messages at the last MCP
    listing, a refresh asked and not done yet, and two listings after the start (one
    that changed the tools, one that failed)."""
    state = _golden_1_15()
    at = state.updated_at
    state.tools_listed_messages = 2
    state.tools_refresh = ToolsRefresh(by="ann", at=at)
    state.tool_listings = [
        ToolListing(
            at=at, turn=1, reason="session_message", added=["tickets_delete_ticket"],
            removed=["tickets_close_ticket"], changed=["tickets_lookup_ticket"],
        ),
        ToolListing(
            at=at, turn=2, reason="requested", by="ann",
            error="cannot list the tools of MCP server 'tickets': connection refused",
        ),
    ]  # fmt: skip
    return state


def _golden_1_17() -> RunState:
    """1.16's, with what 1.17 added: an agent that sends its tools' images to the model,
    and a tool result that kept one."""
    state = _golden_1_16()
    state.agent.send_tool_images = True
    result = next(i for i in state.items if isinstance(i, ToolResult) and not i.is_error)
    result.attachments = [Attachment(mime_type="image/png", data="iVBORw0KGgo=")]
    return state


def _golden_1_18() -> RunState:
    """1.17's, with what 1.18 added: the agent's and a tool's webhook subscriptions, the
    events announced so far, and a delivery that goes and one that failed."""
    state = _golden_1_17()
    at = state.updated_at
    state.agent.webhooks = [
        WebhookSubscription(endpoint="approvals", events=["approval_requested", "run_finished"])
    ]
    state.agent.tools[0].webhooks = [
        WebhookSubscription(endpoint="payments.desk", events=["approval_requested"])
    ]
    state.notices = Notices(seq=3, pending=["call_9"], paused=False, finished=False)
    state.webhook_deliveries = [
        WebhookDelivery(
            endpoint="approvals", webhook_id="support-7:2", event="approval_decided",
            status="delivered", attempts=1, code=204, at=at,
        ),
        WebhookDelivery(
            endpoint="payments.desk", webhook_id="support-7:3", event="approval_requested",
            status="failing", attempts=3, code=503, error="HTTP 503: maintenance",
            next_try_at=at, at=at,
        ),
    ]  # fmt: skip
    return state


def _golden_1_19() -> RunState:
    """1.18's, with what 1.19 added: an agent that streams its model's replies."""
    state = _golden_1_18()
    state.agent.stream = True
    return state


def _golden_1_20() -> RunState:
    """1.19's, with what 1.20 added: the record of a run imported from the OpenAI Agents SDK."""
    state = _golden_1_19()
    state.imported = ImportRecord(
        schema_version="1.21", sha256="ab" * 32, agent="Support", turn=2, max_turns=10,
        decisions=[
            ImportedDecision(call_id="call_9", tool="refund", decision="reject", message="no"),
            ImportedDecision(tool="lookup_order", decision="approve"),
        ],
        dropped=[DroppedItem(where="$.generated_items[4]", what="web_search_call (hosted tool)")],
        at=datetime(2026, 11, 26, 9, 30, tzinfo=UTC),
    )  # fmt: skip
    return state


def _golden_1_21() -> RunState:
    """1.20's, with what 1.21 added: a handoff tool, and a handoff the run took."""
    state = _golden_1_20()
    state.agent.tools.append(
        ToolSpec(
            name="transfer_to_billing",
            description="Hand the conversation over to the billing agent.",
            parameters={"type": "object", "properties": {"reason": {"type": "string"}}},
            handoff="billing",
        )
    )
    reply = next(i for i in state.items if isinstance(i, AssistantMessage) and i.tool_calls)
    state.items.append(
        Handoff(
            call_id=reply.tool_calls[0].call_id, from_agent="triage", to_agent=state.agent.name,
            turn=reply.turn, reason="a refund question", at=state.updated_at,
        )
    )  # fmt: skip
    return state


def _golden_1_22() -> RunState:
    """1.21's, with what 1.22 added: an agent called as a tool (a child run), and the
    agent the run had when it first handed over."""
    state = _golden_1_21()
    state.agent.tools.append(
        ToolSpec(
            name="ask_researcher",
            description="Ask the researcher agent.",
            parameters={"type": "object", "properties": {"input": {"type": "string"}}},
            runs_agent="researcher",
        )
    )
    state.first_agent = "triage"
    state.depth = 1  # a child: its caller called it as a tool
    return state


def _golden_1_23() -> RunState:
    """1.22's, with what 1.23 added: a call waiting for a decision in a run below this
    one, as its child reported it."""
    state = _golden_1_22()
    state.sub_approvals.append(
        SubApproval(
            via="golden-run/c9",
            run_id="golden-run/c9/m2",
            execution_id="golden-exec-c9-m2",
            path=["researcher", "mailer"],
            call_id="n1",
            tool="notify",
            arguments='{"to": "ann", "text": "5"}',
            arguments_sha256="ab" * 32,
            requested_at=state.updated_at,
            sensitive=["text"],
        )
    )
    return state


def _golden_1_24() -> RunState:
    """1.23's, with what 1.24 added: an unfinished child run exported with its caller
    (1.0's golden run, as this version writes it, stands for the child)."""
    state = _golden_1_23()
    child = _golden_1_0()
    child.run_id = "support-7/c9"
    child.depth = 1
    state.sub_runs.append(SubRunSnapshot(call_id="c9", state=child))
    return state


def _golden_1_25() -> RunState:
    """1.24's, with what 1.25 added: what the runs it called as tools used."""
    state = _golden_1_24()
    state.sub_run_usage = Usage(model_calls=2, input_tokens=300, output_tokens=40, total_tokens=340)
    return state


def _golden_1_26() -> RunState:
    """1.25's, with what 1.26 added: a child's failure policy, a handoff's input filter."""
    state = _golden_1_25()
    tool = next(t for t in state.agent.tools if t.runs_agent is not None)
    tool.on_failure = "fail_run"
    billing = next(t for t in state.agent.tools if t.handoff is not None)
    billing.input_filter = "remove_tools"
    handed = next(i for i in state.items if isinstance(i, Handoff))
    handed.input_filter = "remove_tools"
    return state


def _golden_1_27() -> RunState:
    """1.26's, with what 1.27 added: the signed start its children check."""
    state = _golden_1_26()
    state.start_proof = StartProof(
        key_id="alice-test",
        workflow_id="support-7",
        sig="A" * 86,
        body='{"agent":"support","input":"hi","start_signature":{"key_id":"alice-test"}}',
    )
    return state


def _golden_1_28() -> RunState:
    """1.27's, with what 1.28 added: an agent whose changed definition reaches its runs
    at the next message, the run's last look and a definition it took."""
    state = _golden_1_27()
    state.agent.definition_updates = "next_message"
    state.definition_checked = DefinitionCheck(messages=1, workflow_run=state.workflow_runs[-1])
    state.redefinitions = [
        Redefinition(
            at=state.updated_at,
            turn=1,
            reason="session_message",
            before="0123456789ab",
            after=definitions.digest(state.agent),
            changed=["definition_updates", "instructions"],
        )
    ]
    return state


def _golden_1_29() -> RunState:
    """1.28's, with what 1.29 added: a local tool."""
    state = _golden_1_28()
    tool = next(t for t in state.agent.tools if not t.needs_approval and t.runs_agent is None
                and t.handoff is None)  # fmt: skip
    tool.local = True
    return state


def _golden_1_30() -> RunState:
    """1.29's, with what 1.30 added: a tool on a task queue of its own."""
    state = _golden_1_29()
    tool = next(t for t in state.agent.tools if t.name == "refund")
    tool.task_queue = "payments"
    tool.queue_timeout_seconds = 300.0
    return state


def _golden_1_31() -> RunState:
    """1.30's, with what 1.31 added: the MCP tools of an agent the run handed over from."""
    state = _golden_1_30()
    state.mcp_tools_left = [
        MCPToolsLeft(
            agent="helpdesk",
            tools=["tickets_lookup_ticket", "tickets_delete_ticket"],
            asked=["tickets_delete_ticket"],
        )
    ]
    return state


_GOLDEN: dict[str, Callable[[], RunState]] = {
    "1.0": _golden_1_0,
    "1.1": _golden_1_1,
    "1.2": _golden_1_2,
    "1.3": _golden_1_3,
    "1.4": _golden_1_4,
    "1.5": _golden_1_5,
    "1.6": _golden_1_6,
    "1.7": _golden_1_7,
    "1.8": _golden_1_8,
    "1.9": _golden_1_9,
    "1.10": _golden_1_10,
    "1.11": _golden_1_11,
    "1.12": _golden_1_12,
    "1.13": _golden_1_13,
    "1.14": _golden_1_14,
    "1.15": _golden_1_15,
    "1.16": _golden_1_16,
    "1.17": _golden_1_17,
    "1.18": _golden_1_18,
    "1.19": _golden_1_19,
    "1.20": _golden_1_20,
    "1.21": _golden_1_21,
    "1.22": _golden_1_22,
    "1.23": _golden_1_23,
    "1.24": _golden_1_24,
    "1.25": _golden_1_25,
    "1.26": _golden_1_26,
    "1.27": _golden_1_27,
    "1.28": _golden_1_28,
    "1.29": _golden_1_29,
    "1.30": _golden_1_30,
    "1.31": _golden_1_31,
}


def golden_text(version: str = SCHEMA_VERSION) -> str:
    return fixture_path(version).read_text(encoding="utf-8")


def sign(doc: dict[str, Any], key: bytes | None = None) -> dict[str, Any]:
    """`doc` with an integrity block computed independently of `dumps`."""
    content = {k: v for k, v in doc.items() if k != "integrity"}
    body = canonical_json(content)
    if key is None:
        return {
            **content,
            "integrity": {"algorithm": "sha256", "digest": hashlib.sha256(body).hexdigest()},
        }
    digest = hmac.new(key, body, "sha256").hexdigest()
    return {**content, "integrity": {"algorithm": "hmac-sha256", "digest": digest}}


def edited(edit: Callable[[dict[str, Any]], None], *, resign: bool = True) -> str:
    """The newest golden snapshot after `edit`, re-digested (as anyone can) unless `resign`
    is False."""
    doc = json.loads(golden_text())
    edit(doc)
    return json.dumps(sign(doc) if resign else doc, ensure_ascii=False)


def set_at(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit setting the value at a dotted path (numbers index lists)."""

    def edit(doc: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        for part in parents:
            doc = doc[part]
        doc[last] = value

    return edit


def drop_at(path: str) -> Callable[[dict[str, Any]], None]:
    """An edit deleting the value at a dotted path."""

    def edit(doc: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        for part in parents:
            doc = doc[part]
        del doc[last]

    return edit


def move_item(source: int, target: int) -> Callable[[dict[str, Any]], None]:
    """An edit moving items[source] to items[target]."""

    def edit(doc: dict[str, Any]) -> None:
        doc["items"].insert(target, doc["items"].pop(source))

    return edit


def insert_item(index: int, item: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """An edit inserting `item` at items[index]."""

    def edit(doc: dict[str, Any]) -> None:
        doc["items"].insert(index, item)

    return edit


def nulled(value: Any) -> Any:
    """`value` with every empty list written as null, as the `temporal` CLI prints a
    query answer and Go writes a nil slice."""
    if isinstance(value, dict):
        return {key: nulled(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [nulled(inner) for inner in value] if value else None
    return value
