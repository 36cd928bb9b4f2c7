"""The data plane's error root."""

from __future__ import annotations

from durable_agents.workflows.errors import AgentError


class DataPlaneError(AgentError):
    """Base class of every error of the data plane (codec keys and payloads, the
    payload store): a configuration that cannot work, or data that does not decode."""
