"""The worker's metrics and traces.

Our counters are recorded inside activities through Temporal's own metric meter
(`activity.metric_meter()`), so they come out of the same Prometheus endpoint as
Temporal's runtime metrics, labelled with namespace, task queue and activity
type. Workflow-side metrics (turns, approval waits, runs by final status) are
recorded by the workflow through `workflow.metric_meter()`.

Traces go through Temporal's OpenTelemetry plugin (`temporalio.contrib.opentelemetry`),
which needs the optional `otel` extra: `pip install 'durable-agents[otel]'`.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from durable_agents.workflows.run_items import Usage
from temporalio import activity
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import SpanProcessor
    from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider
    from temporalio.plugin import SimplePlugin

try:  # optional: only to label the current span when tracing is on
    from opentelemetry import trace as _otel_trace
except ImportError:  # pragma: no cover - the otel extra is not installed
    _otel_trace = None

MODEL_CALLS = "agent_model_calls"
"""Requests to the model API, every attempt, by `model` and `outcome`: `ok`, the error
type (`ModelUnavailable`, `ModelRequestError`, `ModelReplyError`), a cancellation
reason (see `failure_reason`) or the class name of an unexpected exception."""
MODEL_TOKENS = "agent_model_tokens"
"""Tokens the model API reported, by `model` and `token_type` (`input`, `output`)."""
TOOL_CALLS = "agent_tool_calls"
"""Tool executions, every attempt, by `tool`."""
TOOL_FAILURES = "agent_tool_failures"
"""Tool executions that failed, by `tool` and `reason`: `raised` (the tool raised; its
retry policy applies), `unserialisable_result`, a cancellation reason (see
`failure_reason`), or `invalid_arguments` / `unknown_tool` when this worker's tool
differs from the one the run froze at start. A call the model got wrong is answered by
the workflow and never reaches the activity: it is not counted here."""
CANCELLED = "cancelled"
"""Failure reason: the activity was cancelled (run cancelled, activity paused or reset)."""
TIMED_OUT = "timed_out"
"""Failure reason: the attempt ran past its timeout (`run_tool` enforces a tool's
start-to-close timeout itself; a heartbeat timeout comes as a cancellation)."""
IGNORED_CANCEL = "ignored_cancel"
"""Failure reason: a cancelled sync tool went on running in its thread."""
WORKER_SHUTDOWN = "worker_shutdown"
"""Failure reason: the worker shut down before the attempt finished (after its drain)."""
UNKNOWN_TOOL = "(unknown)"
"""The `tool` label of calls naming no tool of the agent: the model picks such names,
and labels must stay few."""

DEFAULT_METRICS_HOST = "127.0.0.1"
"""Where `--metrics-port PORT` listens: this machine only. A scraper in another pod
needs `--metrics-port 0.0.0.0:PORT` (say so; metrics name agents and tools)."""
OTEL_SERVICE_NAME = "durable-agents-worker"
"""`service.name` of the worker's spans unless `OTEL_SERVICE_NAME` says otherwise."""


def count_model_call(model: str, *, outcome: str = "ok", usage: Usage | None = None) -> None:
    """Record one model request (inside `call_model`)."""
    if not activity.in_activity():
        return
    meter = activity.metric_meter()
    meter.create_counter(MODEL_CALLS, "Model API requests").add(
        1, {"model": model, "outcome": outcome}
    )
    if usage is not None:
        tokens = meter.create_counter(MODEL_TOKENS, "Model tokens", "tokens")
        tokens.add(usage.input_tokens, {"model": model, "token_type": "input"})
        tokens.add(usage.output_tokens, {"model": model, "token_type": "output"})
        # Of those: the prompt cache's share of the input, reasoning's of the output.
        tokens.add(usage.cached_input_tokens, {"model": model, "token_type": "cached_input"})
        tokens.add(usage.reasoning_tokens, {"model": model, "token_type": "reasoning"})
        _label_span(
            {
                "agent.model": model,
                "agent.input_tokens": usage.input_tokens,
                "agent.output_tokens": usage.output_tokens,
            }
        )
    else:
        _label_span({"agent.model": model, "agent.outcome": outcome})


def count_tool_call(tool: str | None) -> None:
    """Record one tool execution (inside `run_tool`); None: the agent has no such tool."""
    if not activity.in_activity():
        return
    name = tool or UNKNOWN_TOOL
    activity.metric_meter().create_counter(TOOL_CALLS, "Tool executions").add(1, {"tool": name})
    _label_span({"agent.tool": name})


def count_tool_failure(tool: str | None, reason: str) -> None:
    """Record a failed tool execution (see TOOL_FAILURES for the reasons)."""
    if not activity.in_activity():
        return
    activity.metric_meter().create_counter(TOOL_FAILURES, "Failed tool executions").add(
        1, {"tool": tool or UNKNOWN_TOOL, "reason": reason}
    )


def failure_reason(err: BaseException, *, default: str) -> str:
    """Why an activity attempt failed, as a metric label: a cancellation's cause
    (`timed_out`, `worker_shutdown`, `cancelled`), else `default`."""
    if not isinstance(err, asyncio.CancelledError):
        return default
    if getattr(err, "tool", None) is not None:  # activities.tool.ToolIgnoredCancel
        return IGNORED_CANCEL
    details = activity.cancellation_details() if activity.in_activity() else None
    if details is not None and details.timed_out:
        return TIMED_OUT
    if details is not None and details.worker_shutdown:
        return WORKER_SHUTDOWN
    return CANCELLED


def _label_span(attributes: dict[str, str | int]) -> None:
    if _otel_trace is not None:
        _otel_trace.get_current_span().set_attributes(attributes)


# --- worker set-up ------------------------------------------------------------------


class TelemetrySetupError(Exception):
    """Metrics or tracing cannot be set up as asked; the message says what to fix."""


def metrics_address(value: str) -> str:
    """`HOST:PORT` for `PORT` or `HOST:PORT`; a bad value is a TelemetrySetupError."""
    host, _, port = value.strip().rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise TelemetrySetupError(f"metrics port must be PORT or HOST:PORT, not {value!r}")
    return f"{host or DEFAULT_METRICS_HOST}:{int(port)}"


def prometheus_runtime(value: str) -> Runtime:
    """A Temporal runtime serving Prometheus metrics at `http://HOST:PORT/metrics`.

    The worker's client (and so the worker) must use it: Temporal's metrics and
    ours come from the runtime of the client the worker was built with."""
    address = metrics_address(value)
    try:
        return Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=address)))
    except Exception as err:  # the core runtime reports a busy port as a RuntimeError
        raise TelemetrySetupError(f"cannot serve metrics on {address}: {err}") from err


@dataclass(frozen=True)
class Tracing:
    """OpenTelemetry tracing for a worker: pass `plugin` to the worker, call
    `provider.shutdown()` when it stops (flushes the last spans)."""

    plugin: SimplePlugin
    provider: ReplaySafeTracerProvider


def tracing(*, span_processor: SpanProcessor | None = None) -> Tracing:
    """Temporal's OpenTelemetry plugin, with a replay-safe tracer provider set as the
    global one (the plugin traces through it).

    One trace per run: `RunWorkflow:AgentWorkflow`, with `RunActivity:call_model`
    (attributes `agent.model`, tokens) and `RunActivity:run_tool` (`agent.tool`)
    spans under it. Spans go to `span_processor`, by default batched to OTLP over
    HTTP (`OTEL_EXPORTER_OTLP_ENDPOINT`, default `http://localhost:4318`).
    """
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from temporalio.contrib.opentelemetry import OpenTelemetryPlugin, create_tracer_provider
    except ImportError as err:
        raise TelemetrySetupError(
            f"tracing needs OpenTelemetry ({err.name} is missing): "
            "pip install 'durable-agents[otel]'"
        ) from err
    if span_processor is None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as err:
            raise TelemetrySetupError(
                "tracing needs the OTLP exporter: pip install 'durable-agents[otel]'"
            ) from err
        span_processor = BatchSpanProcessor(OTLPSpanExporter())
    service = os.environ.get("OTEL_SERVICE_NAME", OTEL_SERVICE_NAME)
    provider = create_tracer_provider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(span_processor)
    trace.set_tracer_provider(provider)
    return Tracing(plugin=OpenTelemetryPlugin(add_temporal_spans=True), provider=provider)
