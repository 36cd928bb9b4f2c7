"""The library's error root and the errors the workflow and its callers share.

Every error raised on purpose derives from `AgentError` (the client's
`AgentClientError`, the data plane's `DataPlaneError`, `DecisionRefused`), so an
application can catch them all at once; each carries a one-line `message`.
Pure: no `temporalio` import.
"""

from __future__ import annotations


class AgentError(Exception):
    """The root of every error this library raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        """One line that says what went wrong, fit for a terminal."""


class DecisionRefused(AgentError):
    """A decision that cannot apply to its call: unknown or already decided, approver
    not allowed, edited arguments not valid for the tool, run ended.

    The workflow raises it with the reason alone (its `decide` validator refuses
    the update with that text); the client raises it with the run and call too."""

    def __init__(
        self, reason: str, *, run_id: str | None = None, call_id: str | None = None
    ) -> None:
        where = (
            f"decision on call {call_id!r} of run {run_id!r} refused: "
            if run_id is not None and call_id is not None
            else ""
        )
        super().__init__(where + reason)
        self.reason = reason
        """Why, in the workflow's words."""
        self.run_id = run_id
        self.call_id = call_id
