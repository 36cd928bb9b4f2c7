"""`worker.py --deployment NAME --build-id ID`: both or neither, checked at start."""

from __future__ import annotations

import pytest

from durable_agents.worker import WorkerSetupError, deployment_version, parse_args


def test_a_versioned_worker_needs_both_a_deployment_and_a_build():
    assert deployment_version(None, None) is None
    version = deployment_version("durable-agents", "2026.11.26-1")
    assert version is not None and (version.deployment_name, version.build_id) == (
        "durable-agents",
        "2026.11.26-1",
    )
    for name, build in (("agents", None), (None, "B"), (" ", "B"), ("a.b", "B"), ("a", "x" * 201)):
        with pytest.raises(WorkerSetupError):
            deployment_version(name, build)


def test_the_flags_and_their_environment_variables(monkeypatch):
    monkeypatch.setenv("AGENT_DEPLOYMENT", "from-env")
    monkeypatch.setenv("AGENT_BUILD_ID", "B7")
    args = parse_args(["--agents", "examples.support_agent"])
    assert (args.deployment, args.build_id) == ("from-env", "B7")
    args = parse_args(["--deployment", "d", "--build-id", "A1"])
    assert (args.deployment, args.build_id) == ("d", "A1")
    monkeypatch.setenv("AGENT_DEPLOYMENT", "")  # as compose sets it when unused
    monkeypatch.setenv("AGENT_BUILD_ID", "")
    args = parse_args([])
    assert (args.deployment, args.build_id) == (None, None)
