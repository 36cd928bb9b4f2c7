"""agentctl's operator commands: `list`, `watch`, `cancel`, `setup` (see `client.cli`)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import TextIO

from durable_agents.client import cost, render, render_events, store_schedule
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.errors import AgentClientError, RunFailed
from durable_agents.client.operations import LIST_LIMIT, WATCH_INTERVAL, RunSummary, WatchEvent
from durable_agents.client.tree import run_tree
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import StoreGCInput
from durable_agents.workflows.state import RunStatus
from pydantic import TypeAdapter
from temporalio.service import RPCError

from durable_agents.dataplane.payload_store import PayloadStoreError, default_directory
from durable_agents.dataplane.store_gc import DEFAULT_OLDER_THAN, collect_garbage

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


async def list_runs(args: argparse.Namespace, agents: AgentClient) -> str:
    runs = await agents.list_runs(
        status=args.status, agent=args.agent, query=args.query, limit=args.limit
    )
    if args.json:
        return TypeAdapter(list[RunSummary]).dump_json(runs, indent=2).decode()
    return render.runs(runs)


async def watch(args: argparse.Namespace, agents: AgentClient, out: TextIO | None = None) -> str:
    """Print the run's status as it changes; return what it needs once it waits or ends.
    With `--follow`: print the run's events as they happen, until it ends."""
    out = out or sys.stdout
    if args.follow or args.after is not None:
        return await _follow_events(args, agents, out)
    live = out.isatty() and not args.json
    try:
        async with asyncio.timeout(args.timeout):
            last = await _follow(args, agents, out, live=live)
    except TimeoutError:
        if live:
            out.write("\n")
        raise AgentClientError(
            f"run {args.run_id!r} still running after {args.timeout:g}s (--timeout)"
        ) from None
    if args.json:  # sensitive arguments masked, as everywhere people look
        return last.model_copy(
            update={"pending": [render.masked_item(p) for p in last.pending]}
        ).model_dump_json()
    if live:  # end the redrawn line with the final status
        out.write(f"\r\033[K{render.watch_line(last)}\n")
    return render.watch_outcome(last)


async def _follow_events(args: argparse.Namespace, agents: AgentClient, out: TextIO) -> str:
    """The run's events, printed as they come (`--json`: one pinned event object a
    line); without `--follow`, those the run keeps now."""
    last: dict | None = None
    try:
        async with asyncio.timeout(args.timeout):
            async for event in agents.events(
                args.run_id, after=args.after or 0, follow=args.follow
            ):
                shown = json.dumps(event) if args.json else None  # \u-escaped: terminal-safe
                out.write((shown or render_events.line(event)) + "\n")
                out.flush()
                last = event
    except TimeoutError:
        raise AgentClientError(
            f"run {args.run_id!r} still running after {args.timeout:g}s (--timeout)"
        ) from None
    finished = last is not None and last["type"] == "run_finished"
    if args.follow and not finished and not (await agents.status(args.run_id)).status.is_final:
        raise AgentClientError(
            f"run {args.run_id!r} ended without finishing (terminated, timed out, or it never "
            f"started): agentctl status {args.run_id}"
        )
    return ""


async def _follow(
    args: argparse.Namespace, agents: AgentClient, out: TextIO, *, live: bool
) -> WatchEvent:
    frame = 0
    async for event in agents.watch(
        args.run_id, interval=timedelta(seconds=args.interval), every_poll=live
    ):
        if event.done:
            return event
        if args.json:
            out.write(render.ascii_json(event.model_dump_json()) + "\n")
        elif live:  # one line, redrawn each poll: a spinner shows the watch is alive
            out.write(f"\r\033[K{SPINNER[frame % len(SPINNER)]} {render.watch_line(event)}")
            frame += 1
        else:
            out.write(render.watch_line(event) + "\n")
        out.flush()
    raise AssertionError("watch ended without a final event")  # pragma: no cover


async def cost_of(args: argparse.Namespace, agents: AgentClient) -> str:
    """`agentctl cost RUN_ID [--json]`."""
    with agents.translating(args.run_id):
        found = await cost.run_cost(agents.client, args.run_id)
    return found.model_dump_json(indent=2) if args.json else cost.render(found)


async def tree(args: argparse.Namespace, agents: AgentClient) -> str:
    found = await run_tree(agents, args.run_id)
    return json.dumps(found.as_json(), indent=2) if args.json else render.tree(found)


async def cancel(args: argparse.Namespace, agents: AgentClient) -> str:
    await agents.cancel(args.run_id, reason=args.reason)
    if not args.wait:
        if args.json:
            return json.dumps({"run_id": args.run_id, "cancel_requested": True})
        return f"cancellation requested for run {args.run_id}"
    try:
        await agents.result(args.run_id)  # returns only if it completed before the request
    except RunFailed:
        pass  # cancelled (or failed) as expected: its final status says which
    view = await agents.status(args.run_id)
    if view.status is not RunStatus.CANCELLED:  # it ended otherwise first: not a success
        raise AgentClientError(
            f"run {render.safe(args.run_id)} ended {view.status.value} before it could be cancelled"
        )
    if args.json:
        return view.model_dump_json(indent=2)
    return render.status(args.run_id, view)


async def setup(args: argparse.Namespace, agents: AgentClient) -> str:
    report = await agents.setup_search_attributes(namespace=args.namespace)
    if args.json:
        return report.model_dump_json(indent=2)
    lines = [f"namespace {report.namespace}: search attributes ready"]
    lines += [f"  created {name}" for name in report.created]
    lines += [f"  already there {name}" for name in report.existing]
    return "\n".join(lines)


async def store(args: argparse.Namespace, agents: AgentClient) -> str:
    """`agentctl store gc`: payload-store retention (`dataplane.store_gc`); with
    `--schedule` / `--unschedule`, on a Temporal Schedule run by the workers."""
    if args.unschedule:
        if args.dry_run or args.force or args.older_than != DEFAULT_OLDER_THAN:
            raise AgentClientError("--unschedule takes no other option")
        gone = await store_schedule.unschedule(agents.client)
        return f"schedule {contract.STORE_GC_SCHEDULE} " + ("deleted" if gone else "was not there")
    if args.schedule is not None:
        if args.force:
            raise AgentClientError("a scheduled collection is never forced: leave out --force")
        if args.older_than < timedelta(hours=1):
            raise AgentClientError(
                f"a scheduled collection keeps at least 1h of blobs, not {_words(args.older_than)}"
            )
        request = StoreGCInput(
            older_than_seconds=args.older_than.total_seconds(), dry_run=args.dry_run
        )
        try:
            name = await store_schedule.schedule(
                agents.client, agents.task_queue, every=args.schedule, request=request
            )
        except ValueError as err:
            raise AgentClientError(str(err)) from None
        except RPCError as err:
            raise AgentClientError(f"cannot create the schedule: {err.message}") from err
        return (
            f"schedule {name}: a collection every {_words(args.schedule)} by the workers of "
            f"task queue {agents.task_queue!r}, keeping what was written or re-used within "
            f"{_words(args.older_than)}{' (dry run)' if args.dry_run else ''}; reports are "
            f"the results of the {contract.WORKFLOW_STORE_GC} workflows "
            f"(temporal schedule describe --schedule-id {name})"
        )
    where = store_location(os.environ)
    options = {"older_than": args.older_than, "dry_run": args.dry_run, "force": args.force}
    try:
        if isinstance(where, str):  # an S3 bucket
            from durable_agents.dataplane.s3_gc import collect_s3_garbage

            report = await collect_s3_garbage(agents.client, where, **options)
        else:
            report = await collect_garbage(agents.client, where, **options)
    except PayloadStoreError as err:
        raise AgentClientError(err.message) from err
    except RPCError as err:
        raise AgentClientError(f"cannot read the namespace's runs: {err.message}") from err
    except _store_errors() as err:
        raise AgentClientError(f"cannot use the payload store at {where}: {err}") from err
    except OSError as err:
        raise AgentClientError(f"cannot use the payload store at {where}: {err}") from err
    if args.json:
        return json.dumps(dataclasses.asdict(report), indent=2)
    verb = "would remove" if report.dry_run else "removed"
    lines = [
        f"payload store {report.directory}: {report.runs_scanned} runs read, "
        f"{report.referenced_manifests} stored payloads referenced",
        f"  {verb} {report.removed_blobs} blobs ({report.removed_bytes:,} bytes)",
        f"  kept {report.kept_blobs} blobs in use ({report.kept_bytes:,} bytes) and "
        f"{report.young_blobs} written or re-used within {_words(args.older_than)} "
        f"({report.young_bytes:,} bytes)",
    ]
    lost = report.missing_manifests + report.missing_chunks
    if lost:
        lines.append(
            f"  {len(lost)} parts of referenced payloads are missing already: "
            + ", ".join(d[:12] for d in lost[:5])
        )
    if report.unreadable_manifests:
        lines.append(f"  {len(report.unreadable_manifests)} referenced blobs are no manifest")
    if report.other_files:
        lines.append(f"  {report.other_files} other files left alone")
    lines += [f"  could not remove {error}" for error in report.errors]
    return "\n".join(lines)


def store_location(env: Mapping[str, str]) -> Path | str:
    """The store `AGENT_PAYLOAD_STORE` names: a directory (or the default one), or an
    S3 bucket's name."""
    where = env.get("AGENT_PAYLOAD_STORE", "").strip()
    if where == "off":
        raise AgentClientError("AGENT_PAYLOAD_STORE=off: there is no payload store to collect")
    if where.startswith("s3://"):
        bucket = where.removeprefix("s3://").strip("/")
        if not bucket:
            raise AgentClientError("AGENT_PAYLOAD_STORE=s3:// needs a bucket name")
        return bucket
    return Path(where) if where else default_directory(env)


def _words(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def duration(text: str) -> timedelta:
    """`30d`, `12h`, `90m`, `45s` or plain seconds, not negative."""
    units = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}
    number, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "s")
    try:
        value = float(number)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid duration: {text!r} (e.g. 30d, 12h, 90m)"
        ) from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"invalid duration: {text!r}")
    try:
        return timedelta(seconds=value * units[unit])
    except OverflowError:
        raise argparse.ArgumentTypeError(f"invalid duration: {text!r} (too long)") from None


async def erase(args: argparse.Namespace, agents: AgentClient) -> str:
    """`agentctl erase RUN_ID`: a run's executions and the blobs only it used, removed."""
    from durable_agents.dataplane.erase import erase as erase_run

    if not args.yes and not args.dry_run:
        raise AgentClientError(
            f"erasing run {args.run_id!r} cannot be undone: add --yes (or --dry-run to see "
            "what it would remove)"
        )
    off = os.environ.get("AGENT_PAYLOAD_STORE", "").strip() == "off"
    store = None if off else store_location(os.environ)
    try:
        report = await erase_run(
            agents.client,
            args.run_id,
            store,
            dry_run=args.dry_run,
            with_copies=args.all_of_session,
        )
    except PayloadStoreError as err:
        raise AgentClientError(err.message) from err
    except (RPCError, *_store_errors()) as err:
        raise AgentClientError(f"cannot erase run {args.run_id!r}: {err}") from err
    if report.errors:  # partly done: say so, and fail (running it again finishes it)
        raise AgentClientError(
            f"run {args.run_id!r} erased only in part ({len(report.errors)} failures, first: "
            f"{report.errors[0]}); run agentctl erase again"
        )
    if args.json:
        return json.dumps(dataclasses.asdict(report), indent=2)
    verb = "would remove" if args.dry_run else "removed"
    copies = report.runs[1:]
    lines = [
        f"run {args.run_id}"
        + (
            f" and its {len(copies)} resumed or forked copies ({', '.join(copies)})"
            if copies
            else ""
        )
        + f": {verb} {report.removed_blobs} payload-store blob(s), "
        f"{report.removed_bytes:,} bytes; "
        + ("would ask" if args.dry_run else "asked")
        + f" Temporal to delete {len(report.executions)} execution(s) (in the background)",
        f"kept {report.shared_blobs} blob(s) other runs use too, {report.newer_blobs} written "
        "or re-used after the run ended or within the last hour",
    ]
    if store is None:
        lines.append("no payload store (AGENT_PAYLOAD_STORE=off): only the executions")
    if report.missing_blobs:
        lines.append(f"{report.missing_blobs} blob(s) it referred to were gone already")
    return "\n".join(lines)


def _store_errors() -> tuple[type[Exception], ...]:
    """The S3 client's own errors (no credentials, access denied), when it is installed."""
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        return ()
    return (BotoCoreError, ClientError)


GATEWAY_PORT = 8088


async def serve(args: argparse.Namespace, agents: AgentClient) -> str:
    """Serve the HTTP gateway (`client.gateway`) until interrupted."""
    from durable_agents.client import gateway, gateway_auth  # Starlette, uvicorn: only here
    from durable_agents.client.codec_server import is_loopback_host

    if args.allow_unauthenticated:
        if not is_loopback_host(args.host):
            raise AgentClientError(
                f"--allow-unauthenticated is accepted only on a loopback address, not {args.host}"
            )
        callers = None
    else:
        try:
            callers = gateway_auth.load_callers()
        except gateway_auth.GatewayConfigError as err:
            raise AgentClientError(str(err)) from None
        if not len(callers):
            raise AgentClientError(
                f"no callers: set {gateway_auth.TOKENS_ENV}=FILE (a JSON list of "
                '{"name", "token_env", "scopes"}), or --allow-unauthenticated on a loopback '
                "address"
            )
    import uvicorn
    from durable_agents.client import gateway_serving, inbox_sessions, proxy_identity, ui_links

    try:
        sessions = inbox_sessions.configured()
        tls = gateway_serving.tls_files(args.tls_cert, args.tls_key)
        proxy = None
        if args.proxy_identity_header is not None or args.trusted_proxy:
            proxy = proxy_identity.ProxyIdentity.parse(
                args.proxy_identity_header or "", args.trusted_proxy or []
            )
    except (
        inbox_sessions.SessionConfigError,
        gateway_serving.ServingConfigError,
        proxy_identity.ProxyConfigError,
    ) as err:
        raise AgentClientError(str(err)) from None
    audit = logging.getLogger(gateway.audit.name)
    if not audit.handlers:
        audit.addHandler(logging.StreamHandler(sys.stderr))
        audit.setLevel(logging.INFO)
    target = agents.client.service_client.config.target_host
    ui = ui_links.ui_address(args.ui, address=target)
    app = gateway.gateway_app(agents, callers, sessions=sessions, ui=ui, proxy=proxy)
    config = gateway_serving.config(
        app, host=args.host, port=args.port, tls=tls, behind_trusted_proxy=proxy is not None
    )
    who = "no authentication" if callers is None else f"{len(callers)} callers"
    where = f"{'https' if tls else 'http'}://{args.host}:{args.port}"
    kept = (
        f"signed with ${inbox_sessions.KEY_ENV}"
        if sessions.shared
        else f"end with this process (set ${inbox_sessions.KEY_ENV} to keep them)"
    )
    line = f"agentctl serve: {where} ({who}); approval inbox: {where}/inbox (sessions {kept})"
    print(line, file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve()
    return ""


def add_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    """Register the operator commands with agentctl's `command(name, fn, help)`."""
    statuses = [s.value for s in RunStatus]
    found = command("list", list_runs, "list agent runs (from the search attributes)")
    found.add_argument("--status", choices=statuses, metavar="STATUS", help=", ".join(statuses))
    found.add_argument("--agent", metavar="AGENT", help="only runs of this agent")
    found.add_argument(
        "--query", metavar="QUERY", help="a visibility query, e.g. 'AgentTurn > 2' (ANDed in)"
    )
    found.add_argument(
        "--limit", type=_positive_int, default=LIST_LIMIT, metavar="N", help="at most N runs"
    )
    priced = command(
        "cost", cost_of, "a run's billable Temporal actions by kind, and its history bytes"
    )
    priced.add_argument("run_id", metavar="RUN_ID")
    shown = command("tree", tree, "a run and its sub-runs (agents it called as tools), and theirs")
    shown.add_argument("run_id", metavar="RUN_ID")
    follow = command(
        "watch", watch, "follow a run live until it ends or needs a decision or a message"
    )
    follow.add_argument("run_id", metavar="RUN_ID")
    follow.add_argument(
        "--interval",
        type=_positive_float,
        default=WATCH_INTERVAL.total_seconds(),
        metavar="SECONDS",
        help=f"poll interval (default {WATCH_INTERVAL.total_seconds():g})",
    )
    follow.add_argument(
        "--timeout", type=_positive_float, metavar="SECONDS", help="give up (exit 1) after this"
    )
    follow.add_argument(
        "--follow",
        action="store_true",
        help="print the run's events (tool calls, model replies, approval requests) as they "
        "happen, until it ends; --json: one event object a line",
    )
    follow.add_argument(
        "--after",
        type=_non_negative_int,
        metavar="SEQ",
        help="only events after this seq (with --follow; alone: the events kept now, then exit)",
    )
    gate = command(
        "serve",
        serve,
        "serve the HTTP gateway: runs, approvals and live events over HTTP, and the "
        "approval inbox (a web page, /inbox)",
    )
    gate.add_argument("--host", default="127.0.0.1", help="address to listen on")
    gate.add_argument(
        "--port", type=_positive_int, default=GATEWAY_PORT, help=f"default {GATEWAY_PORT}"
    )
    gate.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="no bearer tokens (accepted only on a loopback address)",
    )
    gate.add_argument("--tls-cert", metavar="FILE", help="serve https with this PEM certificate")
    gate.add_argument("--tls-key", metavar="FILE", help="its PEM private key (with --tls-cert)")
    gate.add_argument(
        "--proxy-identity-header",
        metavar="HEADER",
        help="sign in to the inbox as the caller this header names, when the request comes "
        "from a --trusted-proxy (e.g. X-Forwarded-User); never by default",
    )
    gate.add_argument(
        "--trusted-proxy",
        action="append",
        metavar="ADDRESS",
        help="an address or CIDR range of the proxy the identity header is believed from "
        "(repeatable); from elsewhere it is ignored and logged",
    )
    gate.add_argument(
        "--ui",
        metavar="URL",
        help="the Temporal UI's address, for the inbox's links to each run (default: "
        "$AGENT_UI_URL; http://localhost:8233 when --address is the dev server's default, "
        "localhost:7233; otherwise no links)",
    )
    forget = command(
        "erase",
        erase,
        "erase an ended run: its executions and the payload-store blobs only it used",
    )
    forget.add_argument("run_id", metavar="RUN_ID")
    forget.add_argument("--yes", action="store_true", help="it cannot be undone: confirm")
    forget.add_argument("--dry-run", action="store_true", help="report, remove nothing")
    forget.add_argument(
        "--all-of-session",
        action="store_true",
        help="the runs resumed or forked from it too (they hold the same conversation)",
    )
    stop = command("cancel", cancel, "cancel a run: it ends `cancelled`, no pending tool runs")
    stop.add_argument("run_id", metavar="RUN_ID")
    stop.add_argument("--reason", default="cancelled with agentctl", metavar="R")
    stop.add_argument("--wait", action="store_true", help="wait until the run has ended")
    command("setup", setup, "register the contract's search attributes on the namespace")
    kept = command("store", store, "payload-store maintenance: `store gc` removes unused blobs")
    kept.add_argument("action", choices=["gc"], metavar="gc")
    kept.add_argument(
        "--older-than",
        type=duration,
        default=DEFAULT_OLDER_THAN,
        metavar="DURATION",
        help="remove only blobs not written or re-used for this long (default 1d; 30d, 12h, "
        "90m, 45s)",
    )
    kept.add_argument(
        "--dry-run", action="store_true", help="say what would be removed; remove nothing"
    )
    kept.add_argument(
        "--force",
        action="store_true",
        help="collect with a grace under 1h, or in a namespace where no run uses the store",
    )
    when = kept.add_mutually_exclusive_group()
    when.add_argument(
        "--schedule",
        type=duration,
        metavar="EVERY",
        help="instead, have the workers collect on a Temporal Schedule every EVERY (e.g. 1d; "
        "at least 10m); run again to change it",
    )
    when.add_argument("--unschedule", action="store_true", help="delete that schedule")


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    return parse


_positive_int = int_at_least(1)
_non_negative_int = int_at_least(0)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value
