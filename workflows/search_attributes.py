"""Typed search-attribute keys of the contract, kept current by AgentWorkflow."""

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

AGENT_NAME = SearchAttributeKey.for_keyword("AgentName")
AGENT_STATUS = SearchAttributeKey.for_keyword("AgentStatus")
AGENT_PENDING_APPROVALS = SearchAttributeKey.for_int("AgentPendingApprovals")
AGENT_TURN = SearchAttributeKey.for_int("AgentTurn")
AGENT_TOTAL_TOKENS = SearchAttributeKey.for_int("AgentTotalTokens")
AGENT_TOTAL_COST = SearchAttributeKey.for_float("AgentTotalCost")

ALL = (
    AGENT_NAME,
    AGENT_STATUS,
    AGENT_PENDING_APPROVALS,
    AGENT_TURN,
    AGENT_TOTAL_TOKENS,
    AGENT_TOTAL_COST,
)
"""Every key the workflow writes; a server must have them all registered."""


def at_start(agent: str) -> TypedSearchAttributes:
    """What a fresh run of `agent` shows before its first step, set when it is started:
    search attributes given at the start are free, an upsert is a billed action (the
    run upserts only when they change: `workflows.visibility`)."""
    return TypedSearchAttributes(
        [
            SearchAttributePair(AGENT_NAME, agent),
            SearchAttributePair(AGENT_STATUS, "running"),
            SearchAttributePair(AGENT_PENDING_APPROVALS, 0),
            SearchAttributePair(AGENT_TURN, 0),
            SearchAttributePair(AGENT_TOTAL_TOKENS, 0),
        ]
    )
