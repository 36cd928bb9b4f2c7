"""Forward migrations of RunState snapshots: pure, step-by-step functions on plain dicts.

`MIGRATIONS` maps a released schema version to the step that turns a snapshot
of that version into one of the next version; `workflows.snapshot.loads`
applies the steps one by one until the data is at `SCHEMA_VERSION`, then
validates it. Released: 1.0 to 1.31 (the newest), each minor in turn.

Releasing a new version: bump `SCHEMA_VERSION` (and the `schema_version`
literal) in `workflows/state.py`, register `MIGRATIONS["<old>"] = _<old>_to_<new>`
here, commit the new schema (`python -m schemas.generate`) and a golden fixture
written by the new code (`tests/fixtures/runstate-<new>.json`, see
`tests/support/snapshot_golden.py`); the tests then hold every released version to its
schema and fixture. Never edit, renumber or remove a released step: snapshots
in users' stores depend on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Migration = Callable[[dict[str, Any]], dict[str, Any]]
"""One step: a snapshot dict of version V in, a new dict of the next version out.

It must set `schema_version` to the version it produces (strictly newer than
V). It gets a deep copy of the data (see `workflows.snapshot.migrate`), so a
step that edits its argument in place harms nothing, but should not rely on
that: return a new dict. It never sees `integrity`: the digest is checked
before migrating, over the content as it was written.
"""


def _1_0_to_1_1(data: dict[str, Any]) -> dict[str, Any]:
    """1.1 added the optional `ToolCall.idempotency_key`: nothing to convert. A 1.0
    snapshot without it keeps its keys: the loop falls back to `origin` for calls
    the source run proposed (see `workflows.loop.idempotency_key`)."""
    return {**data, "schema_version": "1.1"}


def _1_1_to_1_2(data: dict[str, Any]) -> dict[str, Any]:
    """1.2 added optional fields only (heartbeat timeouts, a retry time budget, the
    bounded refusal audit): nothing to convert. A 1.1 run keeps its specs as they
    were (no heartbeat timeout, attempts alone bound retries)."""
    return {**data, "schema_version": "1.2"}


def _1_2_to_1_3(data: dict[str, Any]) -> dict[str, Any]:
    """1.3 added optional fields only (the approval gate's bindings, approver keys,
    policy limits): nothing to convert. A 1.2 run's policies stay as permissive as
    they were (no signature required, `always` allowed, no limits)."""
    return {**data, "schema_version": "1.3"}


def _1_3_to_1_4(data: dict[str, Any]) -> dict[str, Any]:
    """1.4 added optional fields only (the execution a decision binds to, the signed
    start, separation of duties, sensitive arguments): nothing to convert. A 1.3
    run binds decisions to its workflow id only, as it did."""
    return {**data, "schema_version": "1.4"}


def _1_4_to_1_5(data: dict[str, Any]) -> dict[str, Any]:
    """1.5 added optional fields only (structured output) and a status: nothing to
    convert. A 1.4 run's agent has free-text output."""
    return {**data, "schema_version": "1.5"}


def _1_5_to_1_6(data: dict[str, Any]) -> dict[str, Any]:
    """1.6 added optional fields only (model settings): nothing to convert. A 1.5 run
    is asked with the endpoint's defaults, as it was."""
    return {**data, "schema_version": "1.6"}


def _1_6_to_1_7(data: dict[str, Any]) -> dict[str, Any]:
    """1.7 added optional fields, an item type and a status (guardrails): nothing to
    convert. A 1.6 run has no guardrails."""
    return {**data, "schema_version": "1.7"}


def _1_7_to_1_8(data: dict[str, Any]) -> dict[str, Any]:
    """1.8 added optional fields and a status (the token ledger and budget): nothing to
    convert. A 1.7 run's replies carry no usage of their own, and it has no budget."""
    return {**data, "schema_version": "1.8"}


def _1_8_to_1_9(data: dict[str, Any]) -> dict[str, Any]:
    """1.9 added optional fields only (the Responses API): nothing to convert. A 1.8
    run's agent speaks the worker's default API, and its replies carry no reasoning."""
    return {**data, "schema_version": "1.9"}


def _1_9_to_1_10(data: dict[str, Any]) -> dict[str, Any]:
    """1.10 added optional fields only (prices, costs, cost budgets): nothing to convert.
    A 1.9 run is not priced: its costs stay 0 until a resume takes the worker's price."""
    return {**data, "schema_version": "1.10"}


def _1_10_to_1_11(data: dict[str, Any]) -> dict[str, Any]:
    """1.11 added optional fields and an item type (budget extensions): nothing to
    convert. A 1.10 run stops at its budgets."""
    return {**data, "schema_version": "1.11"}


def _1_11_to_1_12(data: dict[str, Any]) -> dict[str, Any]:
    """1.12 added an optional field and a status (pause): nothing to convert. A 1.11
    run is not paused."""
    return {**data, "schema_version": "1.12"}


def _1_12_to_1_13(data: dict[str, Any]) -> dict[str, Any]:
    """1.13 added optional fields and an item type (context management): nothing to
    convert. A 1.12 run sends the model everything."""
    return {**data, "schema_version": "1.13"}


def _1_13_to_1_14(data: dict[str, Any]) -> dict[str, Any]:
    """1.14 added an optional field (decision metadata): nothing to convert."""
    return {**data, "schema_version": "1.14"}


def _1_14_to_1_15(data: dict[str, Any]) -> dict[str, Any]:
    """1.15 added MCP servers and MCP tools: none before."""
    return {**data, "schema_version": "1.15"}


def _1_15_to_1_16(data: dict[str, Any]) -> dict[str, Any]:
    """1.16 added optional fields (listing MCP tools again): nothing to convert. A 1.15
    run has its tools listed again for a new message only once a listing was asked
    (`refresh_tools`, taken by workflow runs started since the patch)."""
    return {**data, "schema_version": "1.16"}


def _1_16_to_1_17(data: dict[str, Any]) -> dict[str, Any]:
    """1.17 added optional fields (images from tools): nothing to convert. A 1.16 run
    kept none."""
    return {**data, "schema_version": "1.17"}


def _1_17_to_1_18(data: dict[str, Any]) -> dict[str, Any]:
    """1.18 added optional fields (webhooks): nothing to convert. A 1.17 run sends none."""
    return {**data, "schema_version": "1.18"}


def _1_18_to_1_19(data: dict[str, Any]) -> dict[str, Any]:
    """1.19 added an optional field (token streaming): nothing to convert. A 1.18 run
    streams nothing."""
    return {**data, "schema_version": "1.19"}


def _1_19_to_1_20(data: dict[str, Any]) -> dict[str, Any]:
    """1.20 added an optional field (runs imported from the OpenAI Agents SDK): nothing
    to convert. A 1.19 run was never imported."""
    return {**data, "schema_version": "1.20"}


def _1_20_to_1_21(data: dict[str, Any]) -> dict[str, Any]:
    """1.21 added handoffs (an optional tool field, an item type): nothing to convert.
    A 1.20 run never handed over."""
    return {**data, "schema_version": "1.21"}


def _1_21_to_1_22(data: dict[str, Any]) -> dict[str, Any]:
    """1.22 added an optional tool field (agents as tools): nothing to convert."""
    return {**data, "schema_version": "1.22"}


def _1_22_to_1_23(data: dict[str, Any]) -> dict[str, Any]:
    """1.23 added `RunState.sub_approvals` (optional, empty: a 1.22 run's children did
    not report their pending calls): nothing to convert."""
    return {**data, "schema_version": "1.23"}


def _1_23_to_1_24(data: dict[str, Any]) -> dict[str, Any]:
    """1.24 added `RunState.sub_runs` (optional: a 1.23 snapshot carries no sub-run):
    nothing to convert. From 1.24 on, a step applies to each sub-run's state too
    (`workflows.snapshot.migrate` hands them to it in turn)."""
    return {**data, "schema_version": "1.24"}


def _1_24_to_1_25(data: dict[str, Any]) -> dict[str, Any]:
    """1.25 added `RunState.sub_run_usage` (optional: a 1.24 run with a budget called no
    agent as a tool): nothing to convert, here or in the sub-runs."""
    return {**data, "schema_version": "1.25"}


def _1_25_to_1_26(data: dict[str, Any]) -> dict[str, Any]:
    """1.26 added optional tool and handoff fields (a child's failure policy, a handoff's
    input filter): nothing to convert."""
    return {**data, "schema_version": "1.26"}


def _1_26_to_1_27(data: dict[str, Any]) -> dict[str, Any]:
    """1.27 added `RunState.start_proof` (optional: a 1.26 run passes no proof on):
    nothing to convert."""
    return {**data, "schema_version": "1.27"}


def _1_27_to_1_28(data: dict[str, Any]) -> dict[str, Any]:
    """1.28 added `AgentSpec.definition_updates` (a 1.27 run keeps its definition, as
    "never" says), `RunState.definition_checked` and `redefinitions`: nothing to convert."""
    return {**data, "schema_version": "1.28"}


def _1_28_to_1_29(data: dict[str, Any]) -> dict[str, Any]:
    """1.29 added `ToolSpec.local` (a 1.28 tool runs as an activity of its own, as
    False says): nothing to convert."""
    return {**data, "schema_version": "1.29"}


def _1_29_to_1_30(data: dict[str, Any]) -> dict[str, Any]:
    """1.30 added `ToolSpec.task_queue` and `queue_timeout_seconds` (a 1.29 tool runs on
    the run's own queue, as None says): nothing to convert."""
    return {**data, "schema_version": "1.30"}


def _1_30_to_1_31(data: dict[str, Any]) -> dict[str, Any]:
    """1.31 added `RunState.mcp_tools_left` (a 1.30 run remembers no agent's MCP tools:
    a handoff back lists them as before): nothing to convert."""
    return {**data, "schema_version": "1.31"}


MIGRATIONS: dict[str, Migration] = {
    "1.0": _1_0_to_1_1,
    "1.1": _1_1_to_1_2,
    "1.2": _1_2_to_1_3,
    "1.3": _1_3_to_1_4,
    "1.4": _1_4_to_1_5,
    "1.5": _1_5_to_1_6,
    "1.6": _1_6_to_1_7,
    "1.7": _1_7_to_1_8,
    "1.8": _1_8_to_1_9,
    "1.9": _1_9_to_1_10,
    "1.10": _1_10_to_1_11,
    "1.11": _1_11_to_1_12,
    "1.12": _1_12_to_1_13,
    "1.13": _1_13_to_1_14,
    "1.14": _1_14_to_1_15,
    "1.15": _1_15_to_1_16,
    "1.16": _1_16_to_1_17,
    "1.17": _1_17_to_1_18,
    "1.18": _1_18_to_1_19,
    "1.19": _1_19_to_1_20,
    "1.20": _1_20_to_1_21,
    "1.21": _1_21_to_1_22,
    "1.22": _1_22_to_1_23,
    "1.23": _1_23_to_1_24,
    "1.24": _1_24_to_1_25,
    "1.25": _1_25_to_1_26,
    "1.26": _1_26_to_1_27,
    "1.27": _1_27_to_1_28,
    "1.28": _1_28_to_1_29,
    "1.29": _1_29_to_1_30,
    "1.30": _1_30_to_1_31,
}
"""Released version -> the step from it to the next version."""
