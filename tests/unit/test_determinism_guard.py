"""`workflows/` runs outside the workflow sandbox (its workflows are `sandboxed=False`,
its modules passed through for any other workflow that imports them), so no sandbox
stops a clock read or I/O written there: this does, statically.
Workflow code takes time from `workflow.now()`, ids from `workflow.uuid4()`, and
does no I/O; the replay tests catch what slips past this."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

WORKFLOWS = sorted((Path(__file__).resolve().parents[2] / "workflows").glob("*.py"))

FORBIDDEN_MODULES = {
    "random",
    "secrets",
    "time",
    "os",
    "socket",
    "subprocess",
    "threading",
    "urllib",
    "http",
    "httpx",
    "openai",
    "requests",
    "activities",
    "client",
    "dataplane",
    "durable_agents",
}
"""Modules workflow code may not import (sources of time, randomness, I/O, or our
activity and client code)."""
FORBIDDEN_CALLS = {"now", "utcnow", "today", "uuid1", "uuid4", "open", "sleep", "getenv"}
"""Names that read the clock, make ids, sleep or do I/O when called."""


def imported_roots(tree: ast.AST) -> set[str]:
    """Top-level modules imported; ours by their subpackage (`durable_agents.client`:
    `client`), the package itself as `durable_agents` (its public face loads
    activity and client code)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {_root(name) for name in names}


def _root(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "durable_agents" and len(parts) > 1:
        return parts[1]
    return parts[0]


PURE = [
    p
    for p in WORKFLOWS
    if p.stem
    not in {
        "agent_workflow",
        "tool_batch",
        "evaluator_runs",
        "announcements",
        "run_start",
        "run_switch",
        "run_tree",
        "background_tree",
        "fresh_ids",
        "secret_ids",
        "activity_calls",
        "inbox",
        "metrics",
        "raw_payloads",
        "search_attributes",
        "visibility",
        "webhook_delivery",
        "store_gc_workflow",
        "event_stream",
        "patches",
        "steering",
        "run_queries",
        "signal_routing",
        "update_checks",
    }
]
"""The pure modules of `workflows/`: the loop, decisions, state and the wire contract,
plain functions and data that run (and are tested) without Temporal. The others
face Temporal: the workflow classes, how a run begins and its run tree, the signal
inbox and activity calls, visibility and metrics, raw payloads, the patches."""


def forbidden_calls(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        owner = (
            func.value.id
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            else ""
        )
        if name in FORBIDDEN_CALLS and owner != "workflow":
            found.append(f"line {node.lineno}: {owner + '.' if owner else ''}{name}()")
    return found


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_code_reads_no_clock_and_does_no_io(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert imported_roots(tree) & FORBIDDEN_MODULES == set()
    assert forbidden_calls(tree) == []


def test_the_guard_catches_what_it_is_for():
    bad = ast.parse(
        "import time\nfrom datetime import datetime\nfrom uuid import uuid4\n"
        "def f():\n    datetime.now()\n    uuid4()\n    workflow.now()\n    open('x')\n"
    )
    assert imported_roots(bad) & FORBIDDEN_MODULES == {"time"}
    assert forbidden_calls(bad) == ["line 5: datetime.now()", "line 6: uuid4()", "line 8: open()"]


@pytest.mark.parametrize("path", PURE, ids=lambda p: p.name)
def test_pure_modules_do_not_import_temporalio(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert "temporalio" not in imported_roots(tree)


def test_the_guard_sees_our_subpackages_through_the_namespace():
    tree = ast.parse(
        "from durable_agents.dataplane.codec import x\nimport durable_agents\n"
        "from durable_agents.workflows import loop\n"
    )
    assert imported_roots(tree) == {"dataplane", "durable_agents", "workflows"}


def test_our_workflows_run_outside_the_sandbox_so_this_guard_is_what_guards_them() -> None:
    from durable_agents.workflows.agent_workflow import AgentWorkflow
    from durable_agents.workflows.store_gc_workflow import StoreGCWorkflow
    from durable_agents.workflows.webhook_delivery import WebhookDeliveryWorkflow
    from temporalio.workflow import _Definition

    for cls in (AgentWorkflow, StoreGCWorkflow, WebhookDeliveryWorkflow):
        assert _Definition.must_from_class(cls).sandboxed is False, cls
