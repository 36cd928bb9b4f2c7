"""Where the recorded histories live and the workflow id each was recorded under."""

from __future__ import annotations

from pathlib import Path

HISTORIES = Path(__file__).resolve().parents[1] / "histories"


def recorded_id(path: Path) -> str:
    """The id `tests/support/record_histories.py` gave the run (`<name>.runN.json` is
    run N of `history-<name>`). A run's id is part of its logic: a decision bound to
    another run's id is refused, so a history replays only under its own."""
    return f"history-{path.stem.split('.')[0]}"


def replayed_workflows() -> list[type]:
    """The workflow classes the recorded histories are histories of."""
    from durable_agents.workflows.agent_workflow import AgentWorkflow
    from durable_agents.workflows.webhook_delivery import WebhookDeliveryWorkflow

    return [AgentWorkflow, WebhookDeliveryWorkflow]
