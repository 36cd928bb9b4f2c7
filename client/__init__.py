"""The client side: `AgentClient` (typed Python API) and the `agentctl` CLI.

`client.local_run.run_locally` drives a run in-process from a snapshot, without Temporal.
"""

# The repository's folder imported as a top-level package (from a checkout):
if __name__ != "durable_agents.client":
    raise ImportError(
        f"import durable_agents.client, not {__name__}: everything installs under the "
        "durable_agents namespace (agents: `from durable_agents import Agent, tool`)"
    )


from durable_agents.client.agent_client import AgentClient, PendingAcrossRuns, RunPendingApproval
from durable_agents.client.connect import connect
from durable_agents.client.errors import (
    AgentClientError,
    ConnectError,
    DecisionRefused,
    InterruptRefused,
    InvalidSnapshot,
    MessageRefused,
    PauseRefused,
    RunFailed,
    RunNotFound,
)
from durable_agents.client.snapshots import KEY_ENV

__all__ = [
    "KEY_ENV",
    "AgentClient",
    "AgentClientError",
    "ConnectError",
    "DecisionRefused",
    "InterruptRefused",
    "InvalidSnapshot",
    "MessageRefused",
    "PauseRefused",
    "PendingAcrossRuns",
    "RunFailed",
    "RunNotFound",
    "RunPendingApproval",
    "connect",
]
