"""The activity gate as Temporal interceptors (`durable_agents.gate` says why).

On the workflow side, every activity our workers' workflow code schedules carries a
tag in its `durable-agents-gate` header over what it asks; every child workflow too.
On the activity side, each acting activity of ours (model, tool, guardrail, agent
definition, webhook delivery, payload-store collection, and the MCP activities of
`temporalio-mcp`) refuses, non-retryably, an execution without a valid tag: a
standalone activity, or one scheduled by a workflow of another worker. Its result
goes back as `{"gated_result": ..., "gate": TAG}`, and the workflow takes it only with
a valid tag: a completion sent from outside (`temporal activity complete`) fails the
workflow task, saying so, instead of reaching the run (an operator resets the run to
before it). A webhook delivery workflow runs only as a child of the run it reports on,
started by our workflow code.

Results are checked on replay too: a workflow task that a worker without the keys
completed (it polled our task queue) may have taken a forged result, and our worker
must not act on it when it replays that history. A history replays without the keys
only in a replayer made for it (`GateInterceptor(None)`: the recorded histories of
the tests), which checks nothing.

A call is bound to the run's original run id and the workflow's random seed, not to
its run id, so that the run `temporal workflow reset` makes takes the results its
history holds and runs again what was pending at its reset point (`_bound_execution`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NoReturn

from pydantic_core import to_json
from temporalio import activity, workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ContinueAsNewInput,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    HandleSignalInput,
    Interceptor,
    SignalExternalWorkflowInput,
    StartActivityInput,
    StartChildWorkflowInput,
    StartLocalActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from durable_agents import gate, gate_continue, gate_failures, stream_gate
from durable_agents.activities import revoked_keys
from durable_agents.gate import GateKeys
from durable_agents.signing import Trust
from durable_agents.workflows import contract
from durable_agents.workflows.tree_payloads import SubRunFinished, SubRunReport

GATED = frozenset(
    {
        contract.ACTIVITY_DESCRIBE_AGENT,
        contract.ACTIVITY_CALL_MODEL,
        contract.ACTIVITY_RUN_TOOL,
        contract.ACTIVITY_RUN_GUARDRAIL,
        contract.ACTIVITY_EVALUATE_CALL,
        contract.ACTIVITY_DELIVER_WEBHOOK,
        contract.ACTIVITY_COLLECT_STORE_GARBAGE,
    }
)
AT_FIELD = "at"
"""The header tag's field holding when its workflow task began (whole seconds)."""
RUN_FIELD = "run"
"""The header tag's field naming the execution its call is bound to: the run's original
run id (`_bound_execution`)."""
EXEC_FIELD = "exec"
"""The header tag's field of a signal from a run below (`_FROM_BELOW`) naming the
sender's execution: its first execution run id (kept across its continue-as-new), which
its caller learned from the child's handle when it started it."""
SEED_FIELD = "seed"
"""The header tag's field holding the workflow's random seed when it asked
(`_bound_execution`)."""
MCP_PREFIX = "temporalio.mcp."
"""`temporalio-mcp`'s activities: `temporalio.mcp.<server>.<operation>`."""
ANSWERS_ANYONE = frozenset({contract.ACTIVITY_DESCRIBE_AGENT, contract.ACTIVITY_DELIVER_WEBHOOK})
"""Gated activities a client may also run as a standalone activity (`agentctl tools`,
`agentctl webhooks test`): an agent's definition and MCP tool lists, which every run's
history shows anyone who may read the namespace, and a webhook delivery that sends
only the worker's own test event (`WebhookActivities.deliver_webhook`)."""
CHECKED_CHILDREN = frozenset({contract.WORKFLOW_WEBHOOK_DELIVERY})
"""Workflows that run only as a child started by our workflow code."""
_JSON = {"encoding": b"json/plain"}
SCHEDULE_WINDOW = 125
"""Seconds within which the server must have scheduled an activity (or started a
delivery) after the workflow task that asked for it began: the server's longest
workflow task timeout (120 s) and a margin. A poller of our workflow task queue that
copies an earlier command's header into a task of its own (the same run, so the tag's
run and arguments match) is refused once this has passed; while it has not, only a
copy of a command whose activity has already finished can be scheduled (the server
refuses an activity id still pending), and a delivery never runs twice (its id may not
be reused)."""


def gated(activity_type: str) -> bool:
    """An activity of ours that acts: it runs only for a run of ours."""
    return activity_type in GATED or activity_type.startswith(MCP_PREFIX)


def answers_anyone(activity_type: str) -> bool:
    """A gated activity that may also run standalone (see ANSWERS_ANYONE)."""
    listing = activity_type.startswith(MCP_PREFIX) and activity_type.endswith(".list-tools")
    return activity_type in ANSWERS_ANYONE or listing


class GateRefused(RuntimeError):
    """A result not made by our activity: the workflow task fails, nothing is taken."""


class GateInterceptor(Interceptor):
    """The gate on a worker (both sides) and on a replayer (`keys=None`, for tests:
    results are unwrapped unchecked, nothing is tagged, gated activities refused, and no
    workflow id with a gate key's part is made: a run that started children or webhook
    deliveries replays only with the keys). With keys, workflow code makes those ids'
    parts through the extern function `contract.EXTERN_SECRET_ID`. `trust`: what signed
    approvals of MCP calls are checked against (`activities.revoked_keys`)."""

    def __init__(self, keys: GateKeys | None, *, trust: Trust | None = None) -> None:
        self.keys, self.trust, bound_keys = keys, trust, keys

        class _Bound(_WorkflowInbound):
            keys = bound_keys

        self._workflow_class = _Bound

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityInbound(next, self.keys, self.trust)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        keys = self.keys
        if keys is not None:  # ids only the keys make (`workflows.secret_ids`); none without

            def secret_id(key_id: str, fields: Sequence[str]) -> str:
                return gate.id_part(keys, key_id, fields)

            input.unsafe_extern_functions[contract.EXTERN_SECRET_ID] = secret_id
        return self._workflow_class


def _bound_execution() -> tuple[str, str]:
    """The execution a command made now is bound to, and a result taken for it.

    The run's original run id: the run id on its `WorkflowExecutionStarted` event, which
    `temporal workflow reset` copies into the run it makes (so that run takes the results
    its history holds from before the reset point, and runs again the activities that
    were pending there), while a continued-as-new run, or a new run under the same
    workflow id, has its own. And the workflow's random seed at the time: Temporal gives
    a run made by a reset a new seed from its reset point on (made from its new run id,
    the same on every replay), so a command it makes after that point is told apart from
    one that a run it was reset from made after the same point, with the same arguments
    in the same second."""
    return workflow.info().original_execution_run_id, str(workflow.random_seed())


def _task_began() -> int:
    """The whole second (server time) at which the current workflow task began."""
    return int(workflow.now().timestamp())


def _header(tag: dict[str, Any]) -> Payload:
    return Payload(metadata=_JSON, data=json.dumps(tag).encode())


def _header_tag(headers: Any) -> object:
    payload = headers.get(gate.HEADER) if headers else None
    if payload is None:
        return None
    try:
        return json.loads(payload.data)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return None


def _call_fields(
    namespace: str, workflow_id: str, bound: tuple[str, str], kind: str, digest: str, at: int
) -> list[str]:
    run, seed = bound
    return ["activity", namespace, workflow_id, run, f"seed={seed}", kind, digest, f"at={at}"]


def _bound_in(tag: object) -> tuple[str, str] | None:
    """The execution `tag` says its call is bound to (`_bound_execution`)."""
    if not isinstance(tag, dict):
        return None
    run, seed = tag.get(RUN_FIELD), tag.get(SEED_FIELD)
    return (run, seed) if isinstance(run, str) and isinstance(seed, str) else None


def _issued_at(tag: object) -> int | None:
    """The whole second (server time) of the workflow task that made `tag`."""
    at = tag.get(AT_FIELD) if isinstance(tag, dict) else None
    return at if isinstance(at, int) and not isinstance(at, bool) else None


def _late(at: int, scheduled: datetime) -> str | None:
    """Why a command made at `at` cannot have been scheduled or started at `scheduled`."""
    offset = scheduled.timestamp() - at
    if 0 <= offset < SCHEDULE_WINDOW + 1:
        return None
    return (
        f"it was scheduled {offset:.0f} s after the workflow task that asked for it began "
        f"(at most {SCHEDULE_WINDOW} s): a copy of an earlier command"
    )


def _result_fields(call: list[str], result_digest: str) -> list[str]:
    return ["result", *call[1:], result_digest]


class _ActivityInbound(ActivityInboundInterceptor):
    def __init__(
        self, next: ActivityInboundInterceptor, keys: GateKeys | None, trust: Trust | None
    ) -> None:
        super().__init__(next)
        self.keys = keys
        self.trust = trust

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        if not gated(info.activity_type):
            return await self.next.execute_activity(input)
        if not info.workflow_id and answers_anyone(info.activity_type):
            return await self.next.execute_activity(input)  # a client's question
        call, run = self._admitted(info, input)
        assert self.keys is not None  # _admitted refuses without keys
        streaming = stream_gate.KEYS.set(self.keys)  # its streamed text is tagged
        bound = stream_gate.BOUND_RUN.set(run)  # for the run's original run id
        try:
            if info.activity_type.endswith(".call-tool"):  # an MCP tool: a revoked key?
                revoked_keys.check_mcp_call(self.trust, input.args)
            result = await self.next.execute_activity(input)
        except Exception as err:  # not a cancel: that is BaseException's
            raise gate_failures.tagged(self.keys, call, err) from err
        finally:
            stream_gate.BOUND_RUN.reset(bound)
            stream_gate.KEYS.reset(streaming)
        sent = json.loads(to_json(result))  # what the payload converter would send
        mac = gate.tag(self.keys, _result_fields(call, gate.digest([sent])))
        return {gate.RESULT_FIELD: sent, gate.TAG_FIELD: mac}

    def _admitted(self, info: activity.Info, input: ExecuteActivityInput) -> tuple[list[str], str]:
        """The tagged fields of this execution and the original run id it is bound to;
        refused unless a run of ours asked."""
        if not info.workflow_id or not info.workflow_run_id:
            _refuse(
                info.activity_type, "it was not scheduled by a workflow (a standalone activity)"
            )
        if self.keys is None:
            _refuse(info.activity_type, "this worker has no gate keys")
        given = _header_tag(input.headers)
        at, bound = _issued_at(given), _bound_in(given)
        if at is None or bound is None:
            _refuse(info.activity_type, "no gate tag")
        # Bound to the execution the header names, not to `workflow_run_id`: an activity
        # pending at a reset point runs again in the run the reset made, with the header
        # the run it was reset from gave it; the tag proves our workflow code asked for it
        # under this workflow id, and the schedule window below bounds copies.
        call = _call_fields(
            info.workflow_namespace or info.namespace,
            info.workflow_id,
            bound,
            info.activity_type,
            gate.digest(input.args),
            at,
        )
        problem = gate.check(self.keys, given, call)
        if problem is None and not info.is_local:  # a local activity never leaves the worker
            problem = _late(at, info.scheduled_time)
        if problem is not None:
            _refuse(info.activity_type, problem)
        return call, bound[0]


def _refuse(activity_type: str, why: str) -> NoReturn:
    raise ApplicationError(
        f"{activity_type} refused: it runs only when a run of this deployment's workers "
        f"scheduled it ({why})",
        type=gate.REFUSED,
        non_retryable=True,
    )


class _WorkflowInbound(WorkflowInboundInterceptor):
    keys: GateKeys | None = None

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_WorkflowOutbound(outbound, self.keys))

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        gate_continue.refuse_unless_ours(self.keys, input.args, input.headers)
        info = workflow.info()
        if info.workflow_type in CHECKED_CHILDREN and self.keys is not None:
            problem = _not_its_runs(self.keys, info, input)
            if problem is not None:
                raise ApplicationError(
                    f"{info.workflow_type} refused: it runs only as a child started by the "
                    f"run it reports on ({problem})",
                    type=gate.REFUSED,
                    non_retryable=True,
                )
        return await self.next.execute_workflow(input)

    async def handle_signal(self, input: HandleSignalInput) -> None:
        """A publish signal reaches the run with the gate's verdict on its batch as its
        last argument (`durable_agents.stream_gate`); so does a background child's end
        (`sub_run_finished`), on its header's tag."""
        if input.signal in _FROM_BELOW and len(input.args) == 2:
            name, sent = input.args
            said = _below_verdict(self.keys, input.signal, sent, input.headers)
            input = HandleSignalInput(
                signal=input.signal, args=[name, [*sent, said]], headers=input.headers
            )
        if input.signal == contract.STREAM_PUBLISH_SIGNAL and len(input.args) == 2:
            name, sent = input.args  # the dynamic handler's: the name, the raw arguments
            info = workflow.info()
            said = stream_gate.verdict(
                self.keys,
                sent,
                namespace=info.namespace,
                workflow_id=info.workflow_id,
                run_id=info.original_execution_run_id,  # as its model call's (kept by a reset)
            )
            input = HandleSignalInput(
                signal=input.signal, args=[name, [*sent, said]], headers=input.headers
            )
        await self.next.handle_signal(input)


def _child_fields(
    namespace: str,
    parent_id: str,
    parent_run: str,
    child_id: str,
    child_type: str,
    args: Any,
    at: int,
) -> list[str]:
    digest = gate.digest(args)
    return ["child", namespace, parent_id, parent_run, child_id, child_type, digest, f"at={at}"]


def _not_its_runs(keys: GateKeys, info: workflow.Info, input: ExecuteWorkflowInput) -> str | None:
    parent = info.parent
    if parent is None:
        return "it was started directly, not by a run"
    job = input.args[0] if input.args else None
    if getattr(job, "run_id", None) != parent.workflow_id:
        return "its parent is not the run it names"
    given = _header_tag(input.headers)
    at = _issued_at(given)
    if at is None:
        return "no gate tag"
    fields = _child_fields(
        info.namespace,
        parent.workflow_id,
        parent.run_id,
        info.workflow_id,
        info.workflow_type,
        input.args,
        at,
    )
    return gate.check(keys, given, fields) or _late(at, info.workflow_start_time)


_FROM_BELOW: dict[str, type[SubRunFinished] | type[SubRunReport]] = {
    contract.SIGNAL_SUB_RUN_FINISHED: SubRunFinished,
    contract.SIGNAL_SUB_RUN_REPORT: SubRunReport,
}
"""Signals a run sends the run above it, tagged: its end (taken only tagged) and its
reports (whose progress, what the caller's model may read, is taken only tagged)."""


def _below_fields(
    signal: str, namespace: str, sender: str, execution: str, receiver: str, args: Sequence[Any]
) -> list[str]:
    return [signal, namespace, sender, f"exec={execution}", receiver, gate.digest(args)]


def _below_verdict(
    keys: GateKeys | None, signal: str, sent: Sequence[RawValue], headers: Mapping[str, Payload]
) -> RawValue:
    """The gate's verdict on a signal from a run below (`_FROM_BELOW`): sent by the
    workflow code of our workers from the run it names (its tag binds that run, this one
    and the payload) and, as `execution`, the sender's execution its tag names (its
    caller compares it with the one it started)."""
    given = _header_tag(headers)
    named = given.get(EXEC_FIELD) if isinstance(given, dict) else None
    execution = named if isinstance(named, str) else ""
    if keys is None:  # a replayer: what the header names, unchecked
        return _verdict(
            {contract.STREAM_VERDICT: "unchecked", contract.SENDER_EXECUTION: execution}
        )
    if len(sent) != 1:
        return _verdict({contract.STREAM_VERDICT: "refused", "why": "not one payload"})
    try:
        body = _FROM_BELOW[signal].model_validate_json(sent[0].payload.data)
    except ValueError:
        why = f"not a {signal} payload"
        return _verdict({contract.STREAM_VERDICT: "refused", "why": why})
    info = workflow.info()
    fields = _below_fields(signal, info.namespace, body.run_id, execution, info.workflow_id, [body])
    problem = gate.check(keys, given, fields)
    if problem is None:
        return _verdict({contract.STREAM_VERDICT: "taken", contract.SENDER_EXECUTION: execution})
    why = f"not sent by a run of this deployment's workers ({problem})"
    return _verdict({contract.STREAM_VERDICT: "refused", "why": why})


def _verdict(body: dict[str, str]) -> RawValue:
    return RawValue(Payload(metadata=_JSON, data=json.dumps(body).encode()))


class _WorkflowOutbound(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, keys: GateKeys | None) -> None:
        super().__init__(next)
        self.keys = keys

    async def signal_external_workflow(self, input: SignalExternalWorkflowInput) -> None:
        """A run's end and reports to the run above it carry the workers' tag, over its
        execution (its first execution run id) too."""
        if input.signal in _FROM_BELOW and self.keys is not None:
            info, at = workflow.info(), _task_began()
            execution = info.first_execution_run_id
            fields = _below_fields(
                input.signal,
                info.namespace,
                info.workflow_id,
                execution,
                input.workflow_id,
                input.args,
            )
            tag = {**self._tag(fields, at), EXEC_FIELD: execution}
            input.headers = {**input.headers, gate.HEADER: _header(tag)}
        return await self.next.signal_external_workflow(input)

    def continue_as_new(self, input: ContinueAsNewInput) -> NoReturn:
        if self.keys is not None and workflow.info().workflow_type in gate_continue.CHECKED:
            tag = gate_continue.header(self.keys, input.args)  # its state: ours only
            input.headers = {**input.headers, gate.HEADER: tag}
        self.next.continue_as_new(input)

    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        if not gated(input.activity):
            return self.next.start_activity(input)
        take, check_failure = self._tagged(input)
        return _Checked(self.next.start_activity(input), take, check_failure)

    def start_local_activity(self, input: StartLocalActivityInput) -> workflow.ActivityHandle[Any]:
        if not gated(input.activity):
            return self.next.start_local_activity(input)
        take, check_failure = self._tagged(input)
        return _Checked(self.next.start_local_activity(input), take, check_failure)

    async def start_child_workflow(self, input: StartChildWorkflowInput) -> Any:
        if self.keys is not None:
            info, at = workflow.info(), _task_began()
            fields = _child_fields(
                info.namespace,
                info.workflow_id,
                info.run_id,
                input.id,
                input.workflow,
                input.args,
                at,
            )
            input.headers = {**input.headers, gate.HEADER: _header(self._tag(fields, at))}
        return await self.next.start_child_workflow(input)

    def _tag(self, fields: list[str], at: int) -> dict[str, Any]:
        assert self.keys is not None
        return {**gate.tag(self.keys, fields), AT_FIELD: at}

    def _tagged(
        self, input: StartActivityInput | StartLocalActivityInput
    ) -> tuple[Callable[[Any], Any], Callable[[ActivityError], None]]:
        """Tags `input` (its header), has its result come raw, and returns how the
        result is taken and how a failure is checked."""
        info, at, bound = workflow.info(), _task_began(), _bound_execution()
        args = gate.digest(input.args)
        call = _call_fields(info.namespace, info.workflow_id, bound, input.activity, args, at)
        if self.keys is not None:
            tag = {**self._tag(call, at), RUN_FIELD: bound[0], SEED_FIELD: bound[1]}
            input.headers = {**input.headers, gate.HEADER: _header(tag)}
        ret_type, input.ret_type = input.ret_type, None
        keys = self.keys

        def take(value: Any) -> Any:
            if not (isinstance(value, dict) and gate.RESULT_FIELD in value):
                raise GateRefused(
                    f"the result of {input.activity} was not sent by an activity of this "
                    "deployment's workers (completed from outside?): not taken"
                )
            result = value[gate.RESULT_FIELD]
            if keys is not None:  # on replay too: a task someone else completed took nothing
                fields = _result_fields(call, gate.digest([result]))
                problem = gate.check(keys, value.get(gate.TAG_FIELD), fields)
                if problem is not None:
                    raise GateRefused(
                        f"the result of {input.activity} was not made by an activity of this "
                        f"deployment's workers ({problem}): not taken"
                    )
            if ret_type is None:
                return result
            payload = Payload(metadata=_JSON, data=json.dumps(result).encode())
            return workflow.payload_converter().from_payload(payload, ret_type)

        def check_failure(err: ActivityError) -> None:
            """An application failure is taken (without the tag: what the run's code
            reads is what the activity raised) only when it carries a valid tag; any
            other is replaced with a refusal. Timeouts and cancels come from the server."""
            cause = err.cause
            if keys is None or not isinstance(cause, ApplicationError):
                return
            details = list(cause.details)
            given = details[-1] if details and isinstance(details[-1], dict) else {}
            tag = given.get(gate.FAILURE_TAG_FIELD) if len(given) == 1 else None
            said = (cause.message, cause.type or "", cause.non_retryable)
            fields = gate_failures.fields(call, *said)
            taken: ApplicationError
            if tag is not None and gate.check(keys, tag, fields) is None:
                taken = ApplicationError(
                    cause.message,
                    *details[:-1],
                    type=cause.type,
                    non_retryable=cause.non_retryable,
                    next_retry_delay=cause.next_retry_delay,
                    category=cause.category,
                )
                taken.__cause__ = cause.__cause__
            else:
                taken = ApplicationError(
                    f"{input.activity} failed, but its failure was not sent by an activity "
                    "of this deployment's workers: what it said is not taken",
                    type=gate.REFUSED,
                    non_retryable=True,
                )
            err.__cause__ = taken

        return take, check_failure


class _Checked(workflow.ActivityHandle[Any]):
    """An activity's handle whose result is taken through the gate; cancelling it
    cancels the activity as the SDK's handle does."""

    def __init__(
        self,
        inner: workflow.ActivityHandle[Any],
        take: Callable[[Any], Any],
        check_failure: Callable[[ActivityError], None],
    ) -> None:
        self._inner = inner
        super().__init__(self._taken(inner, take, check_failure))

    @staticmethod
    async def _taken(
        inner: workflow.ActivityHandle[Any],
        take: Callable[[Any], Any],
        check_failure: Callable[[ActivityError], None],
    ) -> Any:
        try:
            value = await inner
        except ActivityError as err:
            check_failure(err)
            raise
        return take(value)

    def cancel(self, msg: Any | None = None) -> bool:
        if not self._inner.done():
            return self._inner.cancel(msg)
        return super().cancel(msg)
