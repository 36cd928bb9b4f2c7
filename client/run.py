"""`AgentRun`: a handle on one run, like Temporal's `WorkflowHandle`.

    run = await agents.start("support", "refund order A12")
    [call] = await run.pending()
    await run.decide(call.call_id, "approve", approver="ann")
    result = await run.result()

Each method is `AgentClient`'s of the same name, for this run (composition: the
handle holds the client and the run id, nothing else).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from durable_agents.client.agent_client import AgentClient
    from durable_agents.workflows.payloads import AgentResult, PendingApproval, StatusView
    from durable_agents.workflows.run_items import Decision
    from durable_agents.workflows.state import RunState


@dataclass(frozen=True)
class AgentRun:
    """One run (a workflow id) and the client that talks to it."""

    agents: AgentClient
    id: str
    """The run id: the workflow id."""

    def __str__(self) -> str:
        return self.id

    async def status(self) -> StatusView:
        """Status, agent, turn, pending approvals and usage."""
        return await self.agents.status(self.id)

    async def state(self) -> RunState:
        """The whole RunState."""
        return await self.agents.state(self.id)

    async def pending(self) -> list[PendingApproval]:
        """The tool calls waiting for a decision."""
        return await self.agents.pending(self.id)

    async def decide(
        self, call_id: str, decision: Literal["approve", "reject"], **options: Any
    ) -> Decision:
        """The `decide` update (see `AgentClient.decide` for the options)."""
        return await self.agents.decide(self.id, call_id, decision, **options)

    async def approve(self, call_id: str, **options: Any) -> None:
        """The `approve` signal (see `AgentClient.approve`)."""
        await self.agents.approve(self.id, call_id, **options)

    async def reject(self, call_id: str, **options: Any) -> None:
        """The `reject` signal (see `AgentClient.reject`)."""
        await self.agents.reject(self.id, call_id, **options)

    async def message(self, content: str) -> None:
        """The session's next user message."""
        await self.agents.message(self.id, content)

    async def end_session(self, *, reason: str | None = None) -> None:
        """End the session once its current exchange is answered."""
        await self.agents.end_session(self.id, reason=reason)

    async def cancel(self, *, reason: str = "cancelled by AgentClient") -> None:
        """Cancel the run (running tools hear of it at their next heartbeat)."""
        await self.agents.cancel(self.id, reason=reason)

    async def export(self, *, key: bytes | None = None) -> str:
        """The run's snapshot file text."""
        return await self.agents.export(self.id, key=key)

    async def result(self) -> AgentResult:
        """Wait for the run to end; raises `RunFailed` if it failed or was cancelled."""
        return await self.agents.result(self.id)
