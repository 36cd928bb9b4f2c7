"""The part of a workflow id a run starts (an agent call's child run, a webhook delivery)
that nobody can compute without the workers' gate keys, so nobody can hold the id before
the run starts a workflow there.

`~KEY.PART`: PART is the first 16 hex digits of an HMAC-SHA256, with the gate key named
KEY, over the namespace, the run's workflow id and the id's plain form (`<run>/<call id>`,
`evt_<execution>_<seq>_<endpoint>`). The workflow-side gate makes it (the worker's
`GateInterceptor` gives workflow code a Temporal extern function: no key, and no value
derived from one, ever reaches history before the start that uses it). KEY is the run's
`AgentSpec.gate_key`, taken from `describe_agent`'s result (a run continued as new takes
the key its settings-only `describe_agent` names: a rotated key reaches a long session at
its next continue-as-new), so a replay makes the same id after the workers' tagging key
was rotated; a worker that no longer holds it (or a
replayer without keys) fails the workflow task rather than make another id.
`workflow.uuid4()` would not do: Temporal seeds it from the run id anyone may read.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import activity_calls, contract
    from durable_agents.workflows.state import RunState


def suffix(state: RunState, kind: str, plain: str) -> str:
    """`~KEY.PART` for the id whose plain form is `plain` (`kind`: what it names, in the
    HMAC), or "" for a run described by no keyed worker (its ids are the plain ones)."""
    key = state.agent.gate_key
    if key is None:
        return ""
    newer = activity_calls.executions().gate_key
    if newer is not None and newer != key:  # rotated: a continued run takes the new key
        state.agent.gate_key = key = newer
    make = workflow.extern_functions().get(contract.EXTERN_SECRET_ID)
    if make is None:  # failing the task: a worker with the keys makes the id
        raise RuntimeError(
            f"this worker holds no gate keys: it cannot make run {state.run_id[:200]!r}'s "
            f"workflow ids (gate key {key!r})"
        )
    info = workflow.info()
    try:
        part = make(key, [kind, info.namespace, info.workflow_id, plain])
    except ValueError as err:  # the key was dropped while this run is open
        raise RuntimeError(str(err)) from None
    return f"~{key}.{part}"
