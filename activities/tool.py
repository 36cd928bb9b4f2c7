"""The `@tool` decorator: a typed Python function becomes a tool.

The JSON Schema of the arguments comes from the type hints (via pydantic), the
description from the docstring (or `@tool(description=...)`), each argument's
description from the docstring's `Args:` section (`activities.docstrings`) unless its
annotation gives one. A parameter annotated `ToolContext`
receives the call's context (idempotency key, run id, user context) and is
not part of the schema.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

from durable_agents.activities.docstrings import documented
from durable_agents.activities.heartbeat import Progress
from durable_agents.activities.instructions import function_name
from durable_agents.activities.spec_fields import derive
from durable_agents.workflows.agent_spec import ApprovalPolicy, ToolSpec, WebhookSubscription
from durable_agents.workflows.execution_settings import RetrySpec, ToolSettings
from durable_agents.workflows.run_items import Usage
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PydanticUserError,
    TypeAdapter,
    create_model,
)
from temporalio.common import RetryPolicy

logger = logging.getLogger(__name__)

DEFAULT_TOOL_TIMEOUT = timedelta(seconds=60)
DEFAULT_TOOL_RETRY = RetryPolicy(maximum_attempts=3)
AT_MOST_ONCE_RETRY = RetryPolicy(maximum_attempts=1)
"""An at-most-once tool's one attempt (`Tool.at_most_once`)."""
DEFAULT_HEARTBEAT_TIMEOUT = timedelta(seconds=5)
"""A tool or model call silent this long is taken for dead and retried elsewhere."""
DEFAULT_QUEUE_TIMEOUT = timedelta(seconds=60)
"""How long a call to a tool on a task queue of its own waits for a worker to take it."""
LOCAL_TOOL_MAX_TIMEOUT = timedelta(seconds=60)
"""The longest attempt a local tool may take: it holds the run's workflow task."""
CANCEL_GRACE = timedelta(seconds=2)
"""How long a cancelled sync tool may take to notice `ToolContext.cancelled` before
it is reported as ignoring the cancel."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool may know about the call it serves, and how it reports progress."""

    idempotency_key: str
    """Workflow id + tool call id: the same on every retry and after continue-as-new.
    A tool with side effects must deduplicate on it against a durable store: an
    attempt whose result was lost (its worker died, the server was unreachable)
    runs again."""
    run_id: str
    call_id: str
    agent: str
    context: JsonValue = None
    """The run's JSON context (what it was started with, as its tools changed it since).
    The tool may change it in place (`ctx.context["seat"] = "12A"`) or replace it
    (`set_context`): once the call returns, the change is the run's (for a JSON object,
    the top-level keys set or removed; `workflows.context_updates`: at most 32,000 bytes
    of JSON; calls running beside this one do not see it). A call that raises changes
    nothing."""
    usage: Usage | None = None
    """The run's usage (its model calls so far) when the call was made."""
    progress: Progress = field(default_factory=Progress, repr=False, compare=False)
    cancel_requested: threading.Event = field(
        default_factory=threading.Event, repr=False, compare=False
    )
    _replaced: list[JsonValue] = field(default_factory=list, repr=False, compare=False)

    def set_context(self, value: JsonValue) -> None:
        """Make `value` (JSON) the run's context once this call returns (`context`)."""
        self._replaced[:] = [value]

    def context_after(self) -> JsonValue:
        """The context as the tool left it: what `set_context` gave, else `context`."""
        return self._replaced[0] if self._replaced else self.context

    def heartbeat(self, *details: Any) -> None:
        """Report progress: `details` (JSON values) ride on the tool's next heartbeat,
        shown in the Temporal UI; the activity heartbeats on its own either way."""
        self.progress.details = details

    @property
    def cancelled(self) -> bool:
        """The run was cancelled (or the attempt timed out) while this call ran: a
        sync tool should stop at its next safe point (an async tool is cancelled)."""
        return self.cancel_requested.is_set()


@dataclass(frozen=True)
class Tool:
    """A tool: the function, its argument model and its policies."""

    name: str
    description: str
    fn: Callable[..., Any]
    arguments: type[BaseModel]
    """Validates the model's arguments; its JSON Schema is what the model sees."""
    approval: ApprovalPolicy | None = None
    """None: calls run without a decision."""
    timeout: timedelta = DEFAULT_TOOL_TIMEOUT
    retry_policy: RetryPolicy = field(default_factory=lambda: DEFAULT_TOOL_RETRY)
    context_param: str | None = None
    """Name of the parameter that receives the ToolContext, if any."""
    heartbeat_timeout: timedelta | None = DEFAULT_HEARTBEAT_TIMEOUT
    """The tool's activity heartbeats; an attempt silent this long (its worker died)
    is retried at once. None: no heartbeat timeout (an async tool that blocks its
    event loop for long needs that, or a larger one)."""
    sensitive: tuple[str, ...] = ()
    """Parameters whose values people see only on request (`ToolSpec.sensitive`)."""
    webhooks: tuple[WebhookSubscription, ...] | None = None
    """Where this tool's approval events go instead of the agent's; None: the agent's."""
    handoff: str | None = None
    """The agent a call hands the run over to (`activities.handoff.handoff`): the
    workflow takes it, no activity runs `fn`. None: a tool."""
    runs_agent: str | None = None
    """The agent a call runs as a run of its own, a child workflow (`Agent.as_tool`):
    the workflow starts it, no activity runs `fn`. None: a tool."""
    on_failure: Literal["tool_error", "fail_run"] | None = None
    """(`runs_agent`) a child that does not complete: a tool error its caller's model
    sees (None, `tool_error`), or the caller fails too (`fail_run`)."""
    background: bool = False
    """(`runs_agent`) the call starts the child and returns at once with its id; its end
    reaches the caller as a message (`Agent.as_tool(wait=False)`)."""
    controls_background: Literal["check", "message", "stop"] | None = None
    """One of the tools that operate agents running in the background: the workflow
    answers it (`workflows.background`), no activity runs `fn`. None: a tool."""
    input_filter: Literal["remove_tools"] | None = None
    """(`handoff`) what the new agent is sent of the conversation before the handoff:
    all of it (None), or all but tool calls and results (`remove_tools`)."""
    on_handoff: str | None = None
    """(`handoff`) the name of the hook a call runs on the worker before the handoff is
    taken (`invoke_json` runs it); None: no hook."""
    filter_items: Callable[[list[Any]], Any] | None = field(default=None, repr=False, compare=False)
    """(`handoff`) the input filter in code (`handoff(agent, input_filter=FUNCTION)`):
    given the conversation's items, it returns those the new agent is sent."""
    task_queue: str | None = None
    """The task queue its calls go to (a GPU box, a worker inside a customer's network,
    served by `worker.py --tools-only MODULE --task-queue NAME`); None: the run's."""
    queue_timeout: timedelta = DEFAULT_QUEUE_TIMEOUT
    """(`task_queue`) how long a call waits for a worker of that queue to take it; then
    the model is told no worker serves it (the call is not retried)."""
    local: bool = False
    """Run as a local activity, in the worker that runs the run's workflow task: no
    activity task through the server (a turn is about half as long), no heartbeat (a
    cancel reaches it when its attempt ends), attempts of at most
    `LOCAL_TOOL_MAX_TIMEOUT`, retried with the workflow task. For fast tools that read
    rather than act; never one that needs approval (README: "Local tools")."""
    external: bool = False
    """An external tool: its calls are answered by a person or a service, never by
    running `fn` (`workflows.answers`); its return annotation is the answer's type."""
    answer_schema: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    """(`external`) the JSON Schema of the answer's type, every answer checked against it."""

    at_most_once: bool = False
    """Once a call's attempt has started, it is never started again: not by a retry, a
    worker restart, nor a resumed or forked snapshot of the run. One attempt; a raised
    error goes to the model as usual; an attempt whose outcome is lost (its worker died,
    it timed out) reaches the model as an interrupted call that may or may not have taken
    effect (`ToolResult.interrupted`). Never local (a local activity's result is recorded
    only when its workflow task completes: a crash runs it again)."""

    parameters_schema: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    """The JSON Schema the model sees, given as is (a tool defined by another framework:
    `durable_agents.openai_agents`); `arguments` then only checks that the arguments are
    a JSON object. None: `arguments`' own schema."""
    invoke_json: Callable[[str, ToolContext], Awaitable[Any]] | None = field(
        default=None, repr=False, compare=False
    )
    """Runs a call from its arguments' JSON text (the other framework validates them),
    instead of `fn` with validated arguments. None: `fn`."""
    target: Any = field(default=None, repr=False, compare=False)
    """(`handoff`, `runs_agent`) the `Agent` object the tool names, when it was given one:
    a worker serving an agent serves the agents it reaches (`AgentRegistry.add`)."""

    def __post_init__(self) -> None:
        if self.task_queue is not None:
            queue = self.task_queue
            if (
                not queue
                or queue != queue.strip()
                or len(queue.encode()) > 200
                or not queue.isprintable()
                or queue.startswith("/_sys/")
            ):
                raise ValueError(
                    f"tool {self.name}: task_queue must be 1 to 200 bytes of printable "
                    f"characters, no space at either end, not Temporal's /_sys/: {queue!r}"
                )
            if self.handoff is not None or self.runs_agent is not None:
                raise ValueError(f"tool {self.name}: a handoff or an agent call has no task_queue")
        if self.queue_timeout <= timedelta(0):
            raise ValueError(f"tool {self.name}: queue_timeout must be positive")
        if self.external:
            _check_external(self)
        if self.at_most_once:
            self._check_at_most_once()
        if not self.local:
            return
        if self.approval is not None:
            raise ValueError(
                f"tool {self.name}: a tool that needs approval cannot be local: an approved "
                "call runs as an activity of its own (seen in the UI as it runs, "
                "heartbeating, cancellable, never run again because a workflow task was "
                "retried)"
            )
        if self.timeout > LOCAL_TOOL_MAX_TIMEOUT:
            raise ValueError(
                f"tool {self.name}: a local tool's timeout is at most "
                f"{LOCAL_TOOL_MAX_TIMEOUT.total_seconds():g} s (it holds the run's workflow "
                f"task), not {self.timeout.total_seconds():g} s"
            )
        if self.handoff is not None or self.runs_agent is not None:
            raise ValueError(f"tool {self.name}: a handoff or an agent call is never local")
        if self.task_queue is not None:
            raise ValueError(
                f"tool {self.name}: a local tool runs in the run's own worker: it has no task_queue"
            )

    def _check_at_most_once(self) -> None:
        if self.local:
            raise ValueError(
                f"tool {self.name}: an at-most-once tool cannot be local: a local activity's "
                "result is recorded only when its workflow task completes, so a worker that "
                "dies mid-call runs it again (leave local out: it runs as an activity of its "
                "own, started once)"
            )
        if self.handoff is not None or self.runs_agent is not None:
            raise ValueError(f"tool {self.name}: a handoff or an agent call is not at_most_once")
        if self.retry_policy is DEFAULT_TOOL_RETRY:  # the dataclass's default: one attempt
            object.__setattr__(self, "retry_policy", AT_MOST_ONCE_RETRY)
        elif self.retry_policy.maximum_attempts != 1:
            raise ValueError(
                f"tool {self.name}: an at-most-once tool is tried once, not "
                f"{self.retry_policy.maximum_attempts or 'unlimited'} times: leave "
                "retry_policy out (or give maximum_attempts=1)"
            )

    def spec(self) -> ToolSpec:
        """The plain-data description frozen into a run."""
        return derive(
            ToolSpec,
            self,
            parameters=(
                self.parameters_schema
                if self.parameters_schema is not None
                else self.arguments.model_json_schema()
            ),
            needs_approval=self.approval is not None,
            approval=self.approval or ApprovalPolicy(),
            mcp_repeatable=False,  # a function of the worker's: its retry policy says
            input_filter_function=(
                function_name(self.filter_items) if self.filter_items is not None else None
            ),
            mcp_server=None,  # a function of the worker's, not an MCP server's tool
            mcp_tool=None,
            webhooks=list(self.webhooks) if self.webhooks is not None else None,
            child_takes_no_interrupts=self.runs_agent is not None
            and not self.background
            and getattr(self.target, "allow_interrupt", True) is False,
        )

    def execution_settings(self) -> ToolSettings:
        """How the worker runs its calls (never part of a run: `workflows.execution_settings`)."""
        return derive(ToolSettings, self, retry=retry_spec(self.retry_policy))

    async def invoke(self, arguments: BaseModel, ctx: ToolContext, raw: str = "{}") -> Any:
        """Call the function with validated arguments (sync functions run in a thread);
        a tool with `invoke_json` is given the arguments' JSON text `raw` instead."""
        if self.invoke_json is not None:
            return await self.invoke_json(raw, ctx)
        kwargs = {name: getattr(arguments, name) for name in type(arguments).model_fields}
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(**kwargs)
        running = asyncio.get_running_loop().run_in_executor(
            None, functools.partial(contextvars.copy_context().run, self.fn, **kwargs)
        )
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            # A thread cannot be stopped from outside: the tool is told, and given
            # a moment to stop; one that runs on is reported, not hidden.
            ctx.cancel_requested.set()
            done, _ = await asyncio.wait({running}, timeout=CANCEL_GRACE.total_seconds())
            if not done:
                logger.warning(
                    "tool %r (call %s) was cancelled but is still running in its thread: "
                    "check ToolContext.cancelled to stop it",
                    self.name,
                    ctx.call_id,
                )
                raise ToolIgnoredCancel(self.name) from None
            raise


class ToolIgnoredCancel(asyncio.CancelledError):
    """A cancelled sync tool that did not stop within CANCEL_GRACE."""

    def __init__(self, tool: str) -> None:
        super().__init__(f"tool {tool!r} ignored the cancel and runs on in its thread")
        self.tool = tool


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: bool | ApprovalPolicy | Callable[..., Any] = False,
    timeout: timedelta = DEFAULT_TOOL_TIMEOUT,
    retry_policy: RetryPolicy | None = None,
    heartbeat_timeout: timedelta | None = DEFAULT_HEARTBEAT_TIMEOUT,
    sensitive: Collection[str] = (),
    webhooks: Collection[WebhookSubscription] | None = None,
    local: bool = False,
    task_queue: str | None = None,
    queue_timeout: timedelta = DEFAULT_QUEUE_TIMEOUT,
    at_most_once: bool = False,
    external: bool = False,
) -> Any:
    """Turn a typed function into a Tool; usable as `@tool` or `@tool(...)`.

    `description`: what the model is told the tool does (default: the docstring's text,
    without its `Args:`/`Returns:` sections; each parameter's line in `Args:` (or
    Sphinx's `:param x:`, NumPy's `Parameters`) describes that argument, unless its
    annotation says `Field(description=...)`).
    `needs_approval` is True (every call waits for a decision), an ApprovalPolicy
    (conditions on the arguments, allowed approvers, a timeout, an evaluator), or a
    code rule: a function `(arguments: dict, context: ApprovalContext) -> bool`, sync
    or async, asked on the worker whether a call needs a decision (its verdict is
    recorded on the call; a rule that fails asks a person). `ApprovalPolicy(rule=fn)`
    gives a rule with the rest of a policy.
    `heartbeat_timeout`: see `Tool.heartbeat_timeout`. `sensitive`: parameter
    names whose values are masked wherever people see calls (the Temporal UI's
    details and summaries, `agentctl pending` and `state`) unless asked for;
    they stay in the run's (encrypted) payloads. `webhooks`: where this tool's
    approval events go (`WebhookSubscription`s) instead of the agent's. `local`: run
    as a local activity (see `Tool.local`). `task_queue`, `queue_timeout`: run on
    workers of another task queue (see `Tool.task_queue`). `at_most_once`: a started
    call is never started again; a lost outcome reaches the model as interrupted (see
    `Tool.at_most_once`; its retry policy is one attempt, and it is never local).
    workers of another task queue (see `Tool.task_queue`). `external`: calls are
    answered by a person or a service, never by running the function (its body never
    runs; its return annotation is the answer's type, checked on every answer); a call
    waits as for approval, and `needs_approval` may give the policy of that wait
    (approvers, timeout, signature), never conditions (`when`): every call waits.
    """
    if isinstance(sensitive, str):
        raise TypeError(f"sensitive is a collection of parameter names, not {sensitive!r}")

    if heartbeat_timeout is not None and heartbeat_timeout <= timedelta(0):
        raise ValueError(f"heartbeat_timeout must be positive, not {heartbeat_timeout}")

    if local and heartbeat_timeout not in (None, DEFAULT_HEARTBEAT_TIMEOUT):
        raise ValueError("a local tool has no heartbeat: leave heartbeat_timeout out")

    if description is not None and (not isinstance(description, str) or not description.strip()):
        raise TypeError(
            f"tool description: a text, not {description!r} (leave it out: the docstring)"
        )

    def wrap(f: Callable[..., Any]) -> Tool:
        doc = documented(f)
        arguments, context_param = _arguments_model(f, doc.parameters)
        unknown = sorted(set(sensitive) - set(arguments.model_fields))
        if unknown:
            raise TypeError(
                f"tool {f.__name__}: sensitive names no parameter: {', '.join(unknown)}"
            )
        policy = retry_policy or (AT_MOST_ONCE_RETRY if at_most_once else DEFAULT_TOOL_RETRY)
        retry_spec(policy)  # refuse an unbounded policy at definition time
        approval = approval_policy(needs_approval)
        if external:  # every call waits; an answer is given once (no `always`)
            approval = (approval or ApprovalPolicy()).model_copy(update={"allow_always": False})
        return Tool(
            name=name or f.__name__,
            description=description if description is not None else doc.description,
            fn=f,
            arguments=arguments,
            approval=approval,
            timeout=timeout,
            retry_policy=policy,
            context_param=context_param,
            heartbeat_timeout=None if local else heartbeat_timeout,  # local: none
            sensitive=tuple(sensitive),
            webhooks=tuple(webhooks) if webhooks is not None else None,
            local=local,
            task_queue=task_queue,
            queue_timeout=queue_timeout,
            at_most_once=at_most_once,
            external=external,
            answer_schema=_answer_schema(f) if external else None,
        )

    return wrap(fn) if fn is not None else wrap


def _answer_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The JSON Schema of an external tool's answer: its function's return annotation."""
    hints = get_type_hints(fn, include_extras=True)
    if "return" not in hints or hints["return"] is type(None):
        raise TypeError(
            f"external tool {fn.__name__}: its return annotation is the answer's type "
            "(a pydantic model, str, int, list[...]): add one"
        )
    try:
        return TypeAdapter(hints["return"]).json_schema()
    except PydanticUserError as err:
        raise TypeError(
            f"external tool {fn.__name__}: its return annotation has no JSON Schema: {err}"
        ) from None


def _check_external(tool: Tool) -> None:
    """Refuse what an external tool cannot be: no code of it runs anywhere."""
    if tool.approval is None or tool.approval.when:
        raise ValueError(
            f"tool {tool.name}: an external tool waits for an answer on every call: its "
            "policy takes no conditions (`when`)"
        )
    clashes = {
        "local": tool.local,
        "task_queue": tool.task_queue is not None,
        "handoff": tool.handoff is not None,
        "runs_agent": tool.runs_agent is not None,
        "at_most_once": tool.at_most_once,
        "code rule": tool.approval.rule is not None,  # every call waits: nothing to rule
        "evaluator": tool.approval.evaluator is not None,  # an answer is a person's
    }
    given = [name for name, on in clashes.items() if on]
    if given:
        raise ValueError(
            f"tool {tool.name}: an external tool runs no code, so it takes no {', '.join(given)}"
        )


def approval_policy(
    needs_approval: bool | ApprovalPolicy | Callable[..., Any],
) -> ApprovalPolicy | None:
    """The policy `needs_approval` stands for: None (no approval), every call, the
    policy given, or a code rule's policy."""
    if needs_approval is True:
        return ApprovalPolicy()
    if needs_approval is False or needs_approval is None:
        return None
    if isinstance(needs_approval, ApprovalPolicy):
        return needs_approval
    if callable(needs_approval):
        return ApprovalPolicy(rule=needs_approval)
    raise TypeError(
        "needs_approval is a bool, an ApprovalPolicy or a function (arguments, context) -> "
        f"bool, not {type(needs_approval).__name__}"
    )


def _arguments_model(
    fn: Callable[..., Any], said: dict[str, str] | None = None
) -> tuple[type[BaseModel], str | None]:
    """The model of `fn`'s arguments; `said`: the docstring's description of each,
    given to a field whose annotation and default give none."""
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    context_param = None
    parameters = inspect.signature(fn).parameters
    unknown = sorted(set(said or {}) - set(parameters))
    if unknown:
        raise TypeError(
            f"tool {fn.__name__}: its docstring describes {', '.join(unknown)}, which "
            f"{'is no parameter' if len(unknown) == 1 else 'are no parameters'}"
        )
    for param in parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {fn.__name__}: *args and **kwargs are not supported")
        if param.name not in hints:
            raise TypeError(f"tool {fn.__name__}: parameter '{param.name}' needs a type hint")
        if hints[param.name] is ToolContext:
            context_param = param.name
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        hint = hints[param.name]
        if said and param.name in said:
            hint = _described(hint, said[param.name])
        fields[param.name] = (hint, default)
    model = create_model(
        f"{fn.__name__}_arguments",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    return model, context_param


def _described(hint: Any, description: str) -> Any:
    """`hint` with `description` placed before its own metadata, so a description the
    annotation or the default gives (pydantic takes the last) keeps priority."""
    if get_origin(hint) is Annotated:
        inner, *metadata = get_args(hint)
        return Annotated[(inner, Field(description=description), *metadata)]  # type: ignore[valid-type]
    return Annotated[hint, Field(description=description)]


def retry_spec(policy: RetryPolicy) -> RetrySpec:
    """Temporal's RetryPolicy as plain data; an unbounded policy is refused."""
    if not policy.maximum_attempts:
        raise ValueError("a retry policy needs a maximum_attempts bound")
    interval = policy.initial_interval.total_seconds()
    return RetrySpec(
        initial_interval_seconds=interval,
        backoff_coefficient=policy.backoff_coefficient,
        maximum_interval_seconds=(
            policy.maximum_interval.total_seconds() if policy.maximum_interval else interval * 100
        ),
        maximum_attempts=policy.maximum_attempts,
        non_retryable_error_types=list(policy.non_retryable_error_types or []),
    )
