"""The client side: `AgentClient` (typed Python API) and the `agentctl` CLI."""

from client.agent_client import AgentClient
from client.connect import connect
from client.errors import (
    AgentClientError,
    ConnectError,
    DecisionRefused,
    RunFailed,
    RunNotFound,
)

__all__ = [
    "AgentClient",
    "AgentClientError",
    "ConnectError",
    "DecisionRefused",
    "RunFailed",
    "RunNotFound",
    "connect",
]
