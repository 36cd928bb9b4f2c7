"""Errors of the client side: one base class, each error builds its own one-line message."""

from __future__ import annotations

from durable_agents.workflows.errors import AgentError, DecisionRefused
from temporalio.exceptions import (
    ApplicationError,
    CancelledError,
    FailureError,
    TerminatedError,
)
from temporalio.exceptions import (
    TimeoutError as TemporalTimeoutError,
)
from temporalio.service import RPCError, RPCStatusCode

__all__ = ["AgentClientError", "AgentError", "DecisionRefused"]  # and the classes below


class AgentClientError(AgentError):
    """Base class of the errors of `client` (connect, AgentClient, agentctl); a refused
    decision is a `DecisionRefused` (shared with the workflow, also an `AgentError`)."""


class ConnectError(AgentClientError):
    """The Temporal server could not be reached (or the configuration could not be loaded)."""

    def __init__(self, address: str, namespace: str, reason: str) -> None:
        super().__init__(
            f"cannot connect to Temporal at {address} (namespace {namespace!r}): {reason}"
        )
        self.address = address
        self.namespace = namespace
        self.reason = reason


class RunNotFound(AgentClientError):
    """No workflow with this id exists in the namespace."""

    def __init__(self, run_id: str, namespace: str) -> None:
        super().__init__(f"no run with id {run_id!r} in namespace {namespace!r}")
        self.run_id = run_id
        self.namespace = namespace


class RunEnded(AgentClientError):
    """The run has ended: it takes no more signals or updates."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id!r} has already ended")
        self.run_id = run_id


class TemporalUnavailable(AgentClientError):
    """The Temporal server, or the run's workers, did not answer as they should."""


class RunExists(AgentClientError):
    """A run with this id exists already (running, or closed and its id not reusable)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"a run with id {run_id!r} already exists")
        self.run_id = run_id


class InvalidSnapshot(AgentClientError):
    """A snapshot that cannot be used: not valid, not verifiable, or not forkable as asked."""

    def __init__(
        self, message: str, *, path: str | None = None, problem: str | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        """JSON path of the offending value (`$.items[3].decision`), or None for the whole file."""
        self.problem = problem or message
        """What is wrong, without the path."""


class InvalidImport(AgentClientError):
    """A run state of another framework that cannot become a run here; `problems` are
    its `where: what` lines (`client.openai_agents_import.ImportRefused`)."""

    def __init__(self, message: str, problems: list[str]) -> None:
        super().__init__(message)
        self.problems = problems


class NotExportable(AgentClientError):
    """The run cannot be written in the format asked for; the message says why."""


class AgentNotServed(AgentClientError):
    """A run was not started: no worker of the task queue serves its agent, or not every
    one does (`durable_agents.served_agents`)."""


class PauseRefused(AgentClientError):
    """A pause or resume the run cannot take (ended, paused already or not, starting)."""


class MessageRefused(AgentClientError):
    """A message the run refused (too long, too many queued, ended, or sent with
    `while_busy="reject"` while the run works); the message says why."""


class InterruptRefused(AgentClientError):
    """An interrupt the run cannot take (ended, waiting for input, starting)."""


class RunFailed(AgentClientError):
    """The run ended without a result (failed, cancelled, terminated or timed out)."""

    def __init__(self, run_id: str, reason: str, *, error_type: str | None = None) -> None:
        suffix = f" [{error_type}]" if error_type else ""
        super().__init__(f"run {run_id!r} {reason}{suffix}")
        self.run_id = run_id
        self.reason = reason
        self.error_type = error_type


# --- from the SDK's errors -------------------------------------------------------


def from_rpc_error(run_id: str, namespace: str, err: RPCError) -> AgentClientError:
    """The client error for a failed call to the server about `run_id`."""
    if run_ended(err):
        return RunEnded(run_id)
    if err.status == RPCStatusCode.NOT_FOUND:
        return RunNotFound(run_id, namespace)
    if err.status in (RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED):
        return TemporalUnavailable(
            f"run {run_id!r} did not answer in time ({err.message}); "
            "is a worker running on its task queue?"
        )
    return TemporalUnavailable(f"run {run_id!r}: {err.status.name}: {err.message}")


def run_ended(err: RPCError) -> bool:
    """The server's answer to a signal or update sent to a closed workflow."""
    return err.status == RPCStatusCode.NOT_FOUND and "already completed" in err.message


def run_failed(run_id: str, cause: BaseException) -> RunFailed:
    """The client error for a run that ended without a result (`cause` of the failure)."""
    if isinstance(cause, CancelledError):
        return RunFailed(run_id, "was cancelled")
    if isinstance(cause, TerminatedError):
        return RunFailed(run_id, f"was terminated: {failure_message(cause)}")
    if isinstance(cause, TemporalTimeoutError):
        return RunFailed(run_id, "timed out")
    app = application_error(cause)
    return RunFailed(
        run_id, f"failed: {failure_message(cause)}", error_type=app.type if app else None
    )


def application_error(err: BaseException | None) -> ApplicationError | None:
    """The outermost ApplicationError in the cause chain (the workflow's own message)."""
    while err is not None:
        if isinstance(err, ApplicationError):
            return err
        err = err.__cause__
    return None


def failure_message(err: BaseException) -> str:
    """The most telling message of a failure chain, on one line."""
    found = application_error(err)
    target = found if found is not None else err
    text = target.message if isinstance(target, FailureError) else str(target)
    return " ".join(text.split()) or type(target).__name__
