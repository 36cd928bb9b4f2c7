"""RunState as workflow input: `AgentInput.resume_from` may be a snapshot file as exported.

A service in any language, or the `temporal` CLI, can start AgentWorkflow with
an exported snapshot file as `resume_from`, unchanged: its SHA-256 digest is
checked, an older version migrated, and the content validated strictly (no
coercion), as `workflows.snapshot.loads` does with the file. An HMAC-signed
file is not checked here (workers never hold the key); verify it on the client
path (agentctl, AgentClient), which starts the run without the block.
"""

from __future__ import annotations

from typing import Annotated, Any

from durable_agents.workflows.snapshot import SnapshotError, load_data
from durable_agents.workflows.state import RunState
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError


def state_of_document(value: Any) -> Any:
    """`value` read as a snapshot document if it is JSON data; a RunState passes as is."""
    if not isinstance(value, dict):
        return value  # a RunState already, or something RunState refuses
    try:
        return load_data(value)
    except SnapshotError as err:
        message = "invalid snapshot at {path}: {problem}" if err.path else "{problem}"
        raise PydanticCustomError("run_state", message, vars(err)) from None
    except TypeError:  # Python objects, not JSON data: RunState validates them
        return value


SnapshotInput = Annotated[RunState, BeforeValidator(state_of_document)]
"""The type of `AgentInput.resume_from`: a RunState, or a snapshot document
(with its integrity block, or of an older version); see the module docstring."""
