"""RunState as workflow input: `AgentInput.resume_from` may be a snapshot file as exported.

A service in any language, or the `temporal` CLI, can start AgentWorkflow with
an exported snapshot file as `resume_from`, unchanged: its SHA-256 digest is
checked, an older version migrated, and the content validated strictly (no
coercion), as `workflows.snapshot.loads` does with the file. An HMAC-signed
file is not checked here (workers never hold the key); verify it on the client
path (agentctl, AgentClient), which starts the run without the block.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from durable_agents.workflows.snapshot import SnapshotError, lenient_document, load_data
from durable_agents.workflows.state import RunState
from pydantic import BaseModel, BeforeValidator, ValidationError
from pydantic_core import PydanticCustomError, to_json

_M = TypeVar("_M", bound=BaseModel)


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


def lenient_input(document: object, model: type[_M]) -> _M | str | None:
    """A start input whose `resume_from` did not load, read again as other tools write
    snapshots (`snapshot.lenient_document`: `null` for empty lists, a `get_state`
    answer's `page`): the input, why it still does not load (one line), or None when
    it has no `resume_from` object (nothing to read differently)."""
    if not isinstance(document, dict) or not isinstance(document.get("resume_from"), dict):
        return None
    try:
        resume = lenient_document(document["resume_from"])
    except SnapshotError as err:
        where = f"resume_from: invalid snapshot at {err.path}: " if err.path else "resume_from: "
        return where + err.problem
    except Exception as err:  # never raises: the run fails as invalid input instead
        return f"resume_from: cannot be read ({type(err).__name__})"
    try:
        return model.model_validate_json(to_json({**document, "resume_from": resume}))
    except ValidationError as err:
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in err.errors()
        )
    except Exception as err:  # e.g. nested too deep to write as JSON
        return f"cannot be read ({type(err).__name__})"
