"""The client side: `AgentClient` (typed Python API) and the `agentctl` CLI.

`client.local_run.run_locally` drives a run in-process from a snapshot, without Temporal.
"""

from client.agent_client import AgentClient, PendingAcrossRuns, RunPendingApproval
from client.connect import connect
from client.errors import (
    AgentClientError,
    ConnectError,
    DecisionRefused,
    InvalidSnapshot,
    RunFailed,
    RunNotFound,
)
from client.snapshots import KEY_ENV

__all__ = [
    "KEY_ENV",
    "AgentClient",
    "AgentClientError",
    "ConnectError",
    "DecisionRefused",
    "InvalidSnapshot",
    "PendingAcrossRuns",
    "RunFailed",
    "RunNotFound",
    "RunPendingApproval",
    "connect",
]
