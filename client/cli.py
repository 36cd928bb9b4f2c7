"""agentctl: start, list, watch and cancel agent runs, approve or reject their tool calls,
export, validate, seal, resume and fork snapshots.

Every command prints a short human summary, or with `--json` the payload's
JSON. Expected errors print one `agentctl: error: ...` line and exit 1.
`validate`, `seal`, `schema` and `keygen` work offline; the others connect to Temporal.
Snapshots are signed with `$AGENT_SNAPSHOT_KEY` if it is set (see `client.snapshots`).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import getpass
import json
import math
import os
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from durable_agents.client import (
    cli_answers,
    cli_ops,
    cli_snapshots,
    refusals,
    render,
    snapshots,
    start_checks,
    ui_links,
    waiting_hints,
)
from durable_agents.client.agent_client import CONFIRM_SECONDS, AgentClient
from durable_agents.client.cli_snapshots import StartedRun, read_file
from durable_agents.client.confirmed_signal import send_decision
from durable_agents.client.errors import AgentClientError
from durable_agents.workflows import contract, decisions
from durable_agents.workflows.argument_view import masked as masked_value
from durable_agents.workflows.argument_view import safe_lines
from durable_agents.workflows.errors import AgentError
from durable_agents.workflows.payloads import PendingApproval
from durable_agents.workflows.run_items import Decision
from pydantic import JsonValue, TypeAdapter
from temporalio.runtime import Runtime, TelemetryConfig

from durable_agents import signing

PROG = "agentctl"
APPROVER_ENV = "AGENTCTL_APPROVER"


Command = Callable[[argparse.Namespace, AgentClient], Awaitable[str]]
OfflineCommand = Callable[[argparse.Namespace], str]


def main(argv: list[str] | None = None) -> int:
    """Run agentctl; returns the exit code (0 ok, 1 error, 2 usage error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command == "pending" and (args.run_id is None) == (not args.all):
            parser.error("pending: give either RUN_ID or --all")
        given = {"start": ("input", "INPUT"), "message": ("content", "TEXT")}.get(args.command)
        if given is not None and (getattr(args, given[0]) is None) == (args.items is None):
            parser.error(f"{args.command}: give {given[1]} or --items FILE (one of them)")
    except SystemExit as exit_:  # usage errors and --help keep argparse's own codes
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        offline: OfflineCommand | None = getattr(args, "offline_fn", None)
        output = offline(args) if offline is not None else asyncio.run(_run(args))
    except AgentError as err:  # its text can be anyone's (an approver's name, a reason)
        print(f"{PROG}: error: {safe_lines(err.message)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    finally:
        # Free the command's Temporal runtime now (tracebacks hold it in cycles):
        # the SDK's default runtime lives until interpreter shutdown, where its Rust
        # threads can crash the exiting process (SIGSEGV/SIGABRT, sdk-python#300).
        gc.collect()
    if output:
        try:
            print(render.ascii_json(output) if getattr(args, "json", False) else output)
            sys.stdout.flush()
        except BrokenPipeError:  # `agentctl ... | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # quiet at exit
            return 141  # as a program killed by SIGPIPE (128 + 13): the shell's convention
    return 0


async def _run(args: argparse.Namespace) -> str:
    command: Command = args.command_fn
    if getattr(args, "context", None) is not None:
        args.context = parse_context(args.context)  # before connecting: fail fast, offline
    if getattr(args, "arguments", None) is not None:
        args.arguments = parse_arguments(args.arguments)
    if getattr(args, "file", None) is not None:  # resume, fork: checked before connecting
        text = read_file(args.file)
        args.snapshot = snapshots.loads(text)
        if getattr(args, "at_turn", None) is not None:
            args.snapshot = snapshots.fork(
                args.snapshot, at_turn=args.at_turn, new_input=args.input
            )
        else:  # the file as it is: a signed one is checked by the worker
            args.snapshot = text
    agents = await AgentClient.connect(
        profile=args.profile,
        address=args.address,
        namespace=args.namespace,
        task_queue=args.task_queue,
        runtime=Runtime(telemetry=TelemetryConfig()),  # our own: freed before exit (see main)
    )
    return await command(args, agents)


# --- commands ---------------------------------------------------------------------


async def _start(args: argparse.Namespace, agents: AgentClient) -> str:
    run_id = (
        await agents.start(
            args.agent,
            given_input(args.input, args.items, "INPUT"),
            context=args.context,
            max_turns=args.max_turns,
            run_id=args.id,
            session=args.session,
            signing_key=signing.read_key(Path(args.key)) if args.key else None,
            model_settings=parse_settings(args.setting) if args.setting else None,
            token_budget=args.token_budget,
            cost_budget=args.cost_budget,
            stream=args.stream,
        )
    ).id
    started = StartedRun(run_id=run_id)
    warning = await start_checks.unpolled_warning(agents.client, run_id)
    if warning is not None:  # stderr: stdout stays the id (or the JSON) scripts read
        print(f"{PROG}: warning: {warning}", file=sys.stderr, flush=True)
    if args.wait:
        started.result = await agents.result(run_id)
    if args.json:
        return started.model_dump_json(indent=2)
    if started.result is None:
        return run_id
    return f"{run_id}\n{render.result(started.result)}"


async def _message(args: argparse.Namespace, agents: AgentClient) -> str:
    content = given_input(args.content, args.items, "TEXT")
    if args.while_busy is None:
        taken = await agents.message(args.run_id, content, confirm=True)
        return _sent(args, "message", "message sent", confirmed=taken)
    await agents.message(args.run_id, content, while_busy=args.while_busy)
    if args.json:
        return json.dumps({"run_id": args.run_id, "update": "send_message", "taken": True})
    return f"message taken by run {args.run_id} (while busy: {args.while_busy})"


async def _interrupt(args: argparse.Namespace, agents: AgentClient) -> str:
    by = args.by or default_approver()
    done = await agents.interrupt(args.run_id, by=by, reason=args.reason)
    if args.json:
        return done.model_dump_json(indent=2)
    lines = [render.status(args.run_id, done.status)]
    if done.interruption is None:  # it continued as new first: applied in its next run
        lines.append("interrupting: the run applies it in its next workflow run")
    else:
        lines.append(render.interruption(done.interruption))
    return "\n".join(lines)


async def _end(args: argparse.Namespace, agents: AgentClient) -> str:
    taken = await agents.end_session(args.run_id, reason=args.reason, confirm=True)
    return _sent(args, "end_session", "end of session requested", confirmed=taken)


async def _pause(args: argparse.Namespace, agents: AgentClient) -> str:
    by = args.by or default_approver()
    view = await agents.pause(args.run_id, by=by, reason=args.reason)
    return view.model_dump_json(indent=2) if args.json else render.status(args.run_id, view)


async def _unpause(args: argparse.Namespace, agents: AgentClient) -> str:
    view = await agents.unpause(args.run_id, by=args.by or default_approver())
    return view.model_dump_json(indent=2) if args.json else render.status(args.run_id, view)


async def _refresh_tools(args: argparse.Namespace, agents: AgentClient) -> str:
    state = await agents.refresh_tools(args.run_id, by=args.by or default_approver())
    if args.json:  # the request still open, and the newest listing
        latest = state.tool_listings[-1] if state.tool_listings else None
        return json.dumps(
            {
                "run_id": args.run_id,
                "tools_refresh": state.tools_refresh
                and state.tools_refresh.model_dump(mode="json"),
                "latest_listing": latest and latest.model_dump(mode="json"),
            },
            indent=2,
        )
    if state.tools_refresh is not None:
        return f"run {args.run_id} lists its MCP tools again before its next model call"
    if state.tool_listings:  # done already (a model call was due)
        return render.listing(state.tool_listings[-1])
    return f"run {args.run_id} took the request"


def _sent(args: argparse.Namespace, signal: str, text: str, *, confirmed: bool = True) -> str:
    if args.json:
        return json.dumps({"run_id": args.run_id, "signal": signal, "confirmed": confirmed})
    if not confirmed:
        return (
            f"{text} to run {args.run_id} (not confirmed: the run answered no query in "
            f"{CONFIRM_SECONDS:g} s; is a worker running? it takes it when one is)"
        )
    return f"{text} to run {args.run_id}"


async def _status(args: argparse.Namespace, agents: AgentClient) -> str:
    view = await agents.status(args.run_id)
    retrying = [] if view.status.is_final else await agents.retrying(args.run_id)
    refused = await refusals.last_refusal(agents, args.run_id)
    if args.json:  # the get_status answer, the calls being retried, the last refusal
        retries = [r.model_dump(mode="json") for r in retrying]
        last = refused and refused.model_dump(mode="json")
        shown = {**view.model_dump(mode="json"), "retrying": retries, "last_refused_signal": last}
        return json.dumps(shown, indent=2)
    lines = [render.status(args.run_id, view, definition=True), *map(render.retry_line, retrying)]
    lines += [render.webhook_line(d) for d in view.webhooks]
    return "\n".join(lines + ([refusals.line(refused)] if refused else []))


async def _tools(args: argparse.Namespace, agents: AgentClient) -> str:
    spec = await agents.tools(args.agent)
    if args.json:  # each tool as a run would freeze it (ToolSpec)
        return json.dumps([t.model_dump(mode="json") for t in spec.tools], indent=2)
    return render.tools(spec)


async def _webhooks_test(args: argparse.Namespace, agents: AgentClient) -> str:
    result = await agents.test_webhook(args.endpoint)
    if args.json:
        return result.model_dump_json(indent=2)
    said = f"HTTP {result.code}" if result.code is not None else "no answer"
    why = f": {render.safe(result.error)}" if result.error else ""
    words = {
        "delivered": "delivered",
        "refused": "refused (not retried)",
        "retry": f"failed (a delivery would try again in {result.retry_in_seconds or 0:.0f} s)",
        "gave_up": "failed (a delivery would give up)",
    }[result.outcome]
    line = f"webhook {render.safe(args.endpoint)}: {words}, {said}{why}"
    if result.outcome != "delivered":  # a script sees it in the exit code
        raise AgentClientError(line)
    return line


async def _state(args: argparse.Namespace, agents: AgentClient) -> str:
    state = await agents.state(args.run_id)
    if args.json:  # the whole record, as `export` writes it
        return state.model_dump_json(indent=2)
    refused = refusals.last_of(state)
    shown = render.state(state, reveal=args.show_sensitive)
    return shown + (f"\n{refusals.line(refused)}" if refused else "")


async def _pending(args: argparse.Namespace, agents: AgentClient) -> str:
    if args.all:
        found = await agents.pending_all()
        target = agents.client.service_client.config.target_host
        ui = ui_links.ui_address(args.ui, address=target)
        link = ui and ui_links.waiting_runs(ui, agents.client.namespace)
        if args.json:
            if not args.show_sensitive:
                found.approvals = [render.masked_item(a) for a in found.approvals]
            return json.dumps({**found.model_dump(mode="json"), "ui_url": link}, indent=2)
        shown = render.pending_across_runs(found, reveal=args.show_sensitive)
        return shown + (f"\nin the Temporal UI: {link}" if link else "")
    pending = await agents.pending(args.run_id)
    if args.json:
        shown = pending if args.show_sensitive else [render.masked_item(p) for p in pending]
        return TypeAdapter(list[PendingApproval]).dump_json(shown, indent=2).decode()
    if not pending:
        return waiting_hints.no_pending(args.run_id, await agents.status(args.run_id))
    return render.pending(pending, reveal=args.show_sensitive)


async def _approve(args: argparse.Namespace, agents: AgentClient) -> str:
    return await _decide(args, agents, "approve")


async def _reject(args: argparse.Namespace, agents: AgentClient) -> str:
    return await _decide(args, agents, "reject")


async def _answer(args: argparse.Namespace, agents: AgentClient) -> str:
    args.always, args.wait = False, True  # an answer goes by the update: refused at once
    return await _decide(args, agents, "answer")


async def _decide(args: argparse.Namespace, agents: AgentClient, decision: str) -> str:
    key = signing.read_key(Path(args.key)) if args.key else None
    if key is not None and args.approver not in (None, key.owner):
        raise AgentClientError(f"--as {args.approver}: the key {args.key} is {key.owner}'s")
    options: dict[str, Any] = {"reason": args.reason, "always": args.always, "sender": PROG}
    if args.metadata is not None:
        options["metadata"] = parse_metadata(args.metadata)
    options["approver"] = key.owner if key is not None else args.approver or default_approver()
    if decision == "approve":
        options["arguments"] = args.arguments
    if decision == "answer":
        options["result"] = cli_answers.parse_result(args.result)
    if args.request_id is not None and not args.wait:
        raise AgentClientError("--request-id goes with --wait (it is the update's id)")
    shown = await _pending_call(agents, args.run_id, args.call_id, args.holder)
    if shown is not None and decision != "reject":
        cli_answers.check_kind(shown, decision, options.get("result"))
    if shown is None and decision in ("approve", "answer"):
        # Nothing to show, so nothing to bind to: the call could be proposed, with any
        # arguments, between this read and the decision.
        raise AgentClientError(await _not_pending(agents, args.run_id, args.call_id))
    seen = args.sha256
    if seen is not None and not (
        shown is not None and (shown.arguments_sha256 or "").startswith(seen.lower())
    ):
        now = render.safe((shown.arguments_sha256 or "-")[:16]) if shown is not None else "-"
        raise AgentClientError(
            f"call {render.safe(args.call_id)}: its arguments are not the ones you saw "
            f"(sha256 {now}…, not {render.safe(seen[:16])}…); nothing sent"
        )
    below = shown is not None and shown.run_id not in (None, args.run_id)
    if shown is not None and shown.arguments_sha256 is not None:
        # bound to what `pending` shows for this call (the run that holds it checks it)
        options["arguments_sha256"] = shown.arguments_sha256
        options["execution_id"] = shown.execution_id
        if below:
            options["holder_run_id"] = shown.run_id
    if key is not None:
        if "arguments_sha256" not in options:
            raise AgentClientError(
                f"call {args.call_id} is not pending in run {args.run_id} (or its worker "
                "predates signed decisions): a signed decision needs its arguments_sha256"
            )
        options["signing_key"] = key
    if args.wait or below:  # a run below answers through the update (its state is its own)
        recorded = await agents.decide(
            args.run_id, args.call_id, decision, request_id=args.request_id, **options
        )
    else:  # the signal; the run's state tells whether it was applied, held or refused
        recorded = await send_decision(agents, args.run_id, args.call_id, decision, **options)
    hidden = shown.sensitive if shown is not None else []
    if args.json:
        if isinstance(recorded, Decision) and recorded.arguments is not None and hidden:
            masked = {
                n: masked_value(v) if n in hidden else v for n, v in recorded.arguments.items()
            }
            recorded = recorded.model_copy(update={"arguments": masked})
        return recorded.model_dump_json(indent=2)
    if isinstance(recorded, Decision):
        echo = f"\n{render.call(shown)}" if shown is not None else ""
        if below and shown is not None:
            echo += f"\nin run {render.safe(shown.run_id or '')} ({render.path(shown)})"
        return render.decision(recorded, sensitive=hidden) + echo
    return (
        f"{decision} of call {args.call_id} held: run {args.run_id} applies it when the "
        "model proposes that call (a model call is under way)"
    )


async def _not_pending(agents: AgentClient, run_id: str, call_id: str) -> str:
    """Why an approval of `call_id` is not sent: it is decided, or not pending."""
    made = decisions.decided(await agents.state(run_id)).get(call_id)
    if made is not None:
        why = f"already decided ({made.decision} by {render.safe(made.approver)})"
    else:
        why = await waiting_hints.not_pending(agents, run_id)
    return f"approval of call {render.safe(call_id)} refused here: {why}"


def _keygen(args: argparse.Namespace) -> str:
    """Write a new key file; print the public entry for the workers' AGENT_APPROVER_KEYS."""
    key = signing.generate(args.key_id, args.owner)
    signing.write_key(key, Path(args.output))
    entry = key.public().model_dump_json(exclude_none=True)
    return (
        f"wrote {args.output} (keep it secret); add this entry to the JSON list that "
        f"{signing.APPROVER_KEYS_ENV} names on every worker:\n{entry}"
    )


async def _pending_call(
    agents: AgentClient, run_id: str, call_id: str, holder: str | None = None
) -> PendingApproval | None:
    """The pending item of `call_id`, as `agentctl pending` shows it, or None: the one of
    the run that holds it (`holder`, when given: needed when the run and a run below
    it, or several runs below, hold calls of that id)."""
    found = [p for p in await agents.pending(run_id) if call_id in (p.call_id, p.short_id)]
    if holder is not None:
        found = [p for p in found if (p.run_id or run_id) == holder]
        if not found:
            raise AgentClientError(
                f"call {render.safe(call_id)} is not pending in run {render.safe(holder)} "
                f"under {render.safe(run_id)}"
            )
    own = [p for p in found if p.run_id in (None, run_id)]
    runs = sorted({p.run_id or run_id for p in found})
    if own and len(runs) == 1:
        return own[0]
    if len(runs) > 1:
        raise AgentClientError(
            f"call {render.safe(call_id)} is pending in {len(runs)} runs under "
            f"{render.safe(run_id)} ({render.safe(', '.join(runs[:5]))}): say which with "
            "--in RUN_ID"
        )
    return found[0] if found else None


async def _result(args: argparse.Namespace, agents: AgentClient) -> str:
    note = await start_checks.waiting_note(agents.client, args.run_id)
    if note is not None:  # stderr: stdout stays the result scripts read
        print(f"{PROG}: {note}", file=sys.stderr, flush=True)
    result = await agents.result(args.run_id)
    return result.model_dump_json(indent=2) if args.json else render.result(result)


# --- arguments ----------------------------------------------------------------------


def given_input(text: str | None, items: str | None, name: str) -> str | list[Any]:
    """The text, or the input list in the file `items` (`-`: standard input); exactly one
    of them. A file that is not a JSON list is an `AgentClientError`."""
    if (text is None) == (items is None):
        raise AgentClientError(f"give {name} or --items FILE (one of them)")
    if text is not None:
        return text
    assert items is not None
    try:
        raw = sys.stdin.read() if items == "-" else Path(items).read_text(encoding="utf-8")
        value = json.loads(raw)
    except OSError as err:
        raise AgentClientError(f"--items {items}: {err.strerror or err}") from None
    except (ValueError, RecursionError) as err:
        raise AgentClientError(f"--items {items} is not JSON: {_unreadable(err)}") from None
    if not isinstance(value, list):
        raise AgentClientError(
            f"--items {items}: a JSON list of input items, not a {type(value).__name__}"
        )
    return value


def parse_context(text: str) -> JsonValue:
    """The `--context` option as JSON data; bad JSON is an `AgentClientError`."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise AgentClientError(
            f"--context is not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})"
        ) from err
    except (ValueError, RecursionError) as err:
        raise AgentClientError(f"--context cannot be read: {_unreadable(err)}") from None


def parse_metadata(text: str) -> dict[str, JsonValue]:
    """The `--metadata` option: a JSON object; anything else is an `AgentClientError`."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise AgentClientError(f"--metadata is not valid JSON: {err.msg}") from err
    except (ValueError, RecursionError) as err:
        raise AgentClientError(f"--metadata cannot be read: {_unreadable(err)}") from None
    if not isinstance(value, dict):
        raise AgentClientError('--metadata must be a JSON object, e.g. \'{"ticket": "CHG-1"}\'')
    return value


def parse_settings(pairs: list[str]) -> dict[str, JsonValue]:
    """`--setting NAME=VALUE` options as a dict (VALUE as JSON, else as text); the
    names and values are checked against ModelSettings when the input is built."""
    found: dict[str, JsonValue] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name.strip():
            raise AgentClientError(f"--setting {pair!r}: expected NAME=VALUE")
        try:
            value: JsonValue = json.loads(text)
        except (ValueError, RecursionError):  # not JSON (or past what JSON reads): text
            value = text
        found[name.strip()] = value
    return found


def parse_arguments(text: str) -> dict[str, JsonValue]:
    """The `--args` option: a JSON object of edited tool arguments."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise AgentClientError(
            f"--args is not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})"
        ) from err
    except (ValueError, RecursionError) as err:
        raise AgentClientError(f"--args cannot be read: {_unreadable(err)}") from None
    if not isinstance(value, dict):
        raise AgentClientError("--args must be a JSON object of the tool's arguments")
    return value


def _unreadable(err: ValueError | RecursionError) -> str:
    if isinstance(err, RecursionError):
        return "nested too deeply"
    return str(err)  # an integer of thousands of digits, say


def default_approver() -> str:
    """`$AGENTCTL_APPROVER`, else the OS user name; never empty."""
    name = os.environ.get(APPROVER_ENV, "").strip()
    if name:
        return name
    try:
        return getpass.getuser() or "unknown"
    except (OSError, KeyError):  # no user name in the environment or passwd database
        return "unknown"


def _digest_prefix(text: str) -> str:
    if not re.fullmatch(r"[0-9a-fA-F]{8,64}", text):
        raise argparse.ArgumentTypeError("8 to 64 hex digits of the arguments' sha256")
    return text


def _non_empty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


_positive_int = cli_ops.int_at_least(1)


def _amount(text: str) -> float:
    """A positive, finite amount of money."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid amount: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive amount, not {text}")
    return value


_turn = cli_ops.int_at_least(0)


def build_parser() -> argparse.ArgumentParser:
    """The agentctl argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Start durable agent runs on Temporal and decide on their tools."
    )
    _connection_options(parser, suppress=False)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the payload as JSON")
    _connection_options(common, suppress=True)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, fn: Command, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(command_fn=fn)
        return sub

    start = command("start", _start, "start a run of AGENT on INPUT and print its id")
    start.add_argument("agent", metavar="AGENT")
    start.add_argument("input", metavar="INPUT", nargs="?")
    start.add_argument(
        "--items",
        metavar="FILE",
        help="start from an input list instead of INPUT: a JSON file (- : stdin) of user "
        "messages with input_text and input_image parts",
    )
    start.add_argument("--context", metavar="JSON", help="JSON handed to every tool call")
    start.add_argument("--max-turns", type=_positive_int, metavar="N")
    start.add_argument("--id", metavar="RUN_ID", help="workflow id (default: AGENT-<random>)")
    start.add_argument("--wait", action="store_true", help="wait for the run's result")
    start.add_argument(
        "--session", action="store_true", help="keep the run open for `message` until `end`"
    )
    start.add_argument(
        "--stream",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="stream the model's replies as text_delta events (watch --follow), or not; "
        "default: as the agent says",
    )
    start.add_argument(
        "--token-budget",
        type=_positive_int,
        metavar="N",
        help="tokens the run may spend (only lowers the agent's budget)",
    )
    start.add_argument(
        "--cost-budget",
        type=_amount,
        metavar="AMOUNT",
        help="money the run may spend, in the currency of the worker's price for the "
        "agent's model (only lowers the agent's budget)",
    )
    start.add_argument(
        "--setting",
        action="append",
        metavar="NAME=VALUE",
        help="a model setting for this run (temperature=0, tool_choice=required, "
        'stop=["END"], ...; VALUE is JSON, or text); repeat for more',
    )
    start.add_argument(
        "--key",
        metavar="FILE",
        help="sign the start with this approver key (agentctl keygen): the run records its "
        "owner as who started it, whom a policy with separate_duties keeps from approving",
    )
    message = command("message", _message, "send a session its user's next message")
    message.add_argument("run_id", metavar="RUN_ID")
    message.add_argument("content", metavar="TEXT", nargs="?")
    message.add_argument(
        "--items",
        metavar="FILE",
        help="send an input list instead of TEXT: a JSON file (- : stdin) of user messages",
    )
    message.add_argument(
        "--while-busy",
        choices=["queue", "interrupt", "reject"],
        metavar="POLICY",
        help="if the run is working on a turn: queue the message (wait for the turn's tool "
        "calls), interrupt the turn and answer it, or reject it (default: the agent's)",
    )
    interrupt = command(
        "interrupt",
        _interrupt,
        "stop a run's current turn: a session then waits for input, another run ends",
    )
    interrupt.add_argument("run_id", metavar="RUN_ID")
    interrupt.add_argument("--reason", metavar="R")
    end = command("end", _end, "end a session once its current exchange is answered")
    end.add_argument("run_id", metavar="RUN_ID")
    end.add_argument("--reason", metavar="R")
    pause = command("pause", _pause, "pause a run: no new model, tool or guardrail call starts")
    pause.add_argument("run_id", metavar="RUN_ID")
    pause.add_argument("--reason", metavar="R")
    unpause = command("unpause", _unpause, "let a paused run go on")
    unpause.add_argument("run_id", metavar="RUN_ID")
    refresh = command(
        "refresh-tools",
        _refresh_tools,
        "have a run list its MCP tools again before its next model call",
    )
    refresh.add_argument("run_id", metavar="RUN_ID")
    for sub in (pause, unpause, refresh, interrupt):
        sub.add_argument(
            "--as",
            dest="by",
            type=_non_empty,
            metavar="WHO",
            help=f"who does it (default: ${APPROVER_ENV} or your user name)",
        )

    def offline(name: str, fn: OfflineCommand, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(offline_fn=fn)
        return sub

    for name, fn, text in (
        ("status", _status, "show a run's status"),
        ("state", _state, "show a run's conversation and state"),
        (
            "result",
            _result,
            "wait for a run to end and show its result (stderr says first what it waits for)",
        ),
    ):
        command(name, fn, text).add_argument("run_id", metavar="RUN_ID")
    reveal_help = "show the values of arguments the tool marks sensitive (hidden by default)"
    commands.choices["state"].add_argument(
        "--show-sensitive", action="store_true", help=reveal_help
    )
    tools = command(
        "tools", _tools, "list an agent's tools (its MCP servers' too) and their approval rules"
    )
    tools.add_argument("agent", metavar="AGENT")
    hooks = commands.add_parser("webhooks", help="the workers' webhook endpoints")
    hook_commands = hooks.add_subparsers(dest="webhooks_command", required=True, metavar="COMMAND")
    hook_test = hook_commands.add_parser(
        "test",
        parents=[common],
        help="send an endpoint a signed sample event and show what came back",
    )
    hook_test.add_argument("endpoint", metavar="NAME")
    hook_test.set_defaults(command_fn=_webhooks_test)
    pending = command(
        "pending", _pending, "list the tool calls awaiting a decision (and evaluators at work)"
    )
    pending.add_argument("run_id", metavar="RUN_ID", nargs="?")
    pending.add_argument("--all", action="store_true", help="of every run waiting for one")
    pending.add_argument("--show-sensitive", action="store_true", help=reveal_help)
    pending.add_argument(
        "--ui",
        metavar="URL",
        help="(--all) the Temporal UI's address, for a link to the runs waiting for a "
        f"decision (default: ${ui_links.UI_ENV}; {ui_links.DEV_UI} when --address is the "
        "dev server's default, localhost:7233; otherwise no link)",
    )
    keygen = offline("keygen", _keygen, "make an approver key for signed decisions")
    keygen.add_argument(
        "--owner", required=True, type=_non_empty, help="the approver it speaks for"
    )
    keygen.add_argument("--key-id", required=True, type=_non_empty, metavar="ID")
    keygen.add_argument("-o", "--output", required=True, metavar="FILE", help="key file (0600)")
    for name, fn in (("approve", _approve), ("reject", _reject)):
        _decision_arguments(command(name, fn, f"{name} a pending tool call"), edits=fn is _approve)
    answer = command("answer", _answer, "answer a call of an external tool")
    _decision_arguments(answer, edits=False, answers=True)
    cli_snapshots.add_commands(command, offline, turn=_turn)
    cli_ops.add_commands(command)
    return parser


def _decision_arguments(
    sub: argparse.ArgumentParser, *, edits: bool, answers: bool = False
) -> None:
    sub.add_argument("run_id", metavar="RUN_ID")
    sub.add_argument("call_id", metavar="CALL_ID", help="the call's id or its short id")
    if answers:
        cli_answers.add_result_argument(sub)
    sub.add_argument(
        "--in",
        dest="holder",
        metavar="RUN_ID",
        help="the run that holds the call (RUN_ID itself or a run below it), when more "
        "than one uses the same call id (`agentctl pending RUN_ID` shows each call's run)",
    )
    sub.add_argument(
        "--sha256",
        type=_digest_prefix,
        metavar="PREFIX",
        help="the arguments digest you saw (`agentctl pending` shows its first 16 hex "
        "digits): nothing is sent unless the call's arguments still have it",
    )
    sub.add_argument(
        "--as",
        dest="approver",
        type=_non_empty,
        metavar="APPROVER",
        help=f"who decides (default: ${APPROVER_ENV} or your user name)",
    )
    sub.add_argument("--reason", metavar="R")
    sub.add_argument(
        "--metadata",
        metavar="JSON",
        help="your own data kept with the decision in the audit (a JSON object: a ticket id)",
    )
    if edits:  # only an approval can carry edited arguments
        sub.add_argument(
            "--args",
            dest="arguments",
            metavar="JSON",
            help="approve with these arguments instead of the model's (a JSON object)",
        )
    if not answers:  # an answer is given once
        sub.add_argument(
            "--always",
            action="store_true",
            help="same decision for later calls with the same arguments (if the policy allows it)",
        )
    sub.add_argument(
        "--key",
        metavar="FILE",
        help="sign the decision with this approver key (agentctl keygen); the approver is "
        "the key's owner",
    )
    if not answers:  # an answer always goes by the update
        sub.add_argument(
            "--wait",
            action="store_true",
            help="use the `decide` update: refused at once if it cannot apply (default: "
            "the signal, then the run's state is read to report what it did with it)",
        )
    sub.add_argument(
        "--request-id",
        metavar="ID",
        help="(--wait) the update id: a retried command with the same id gets the first answer",
    )


def _connection_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """Connection options, accepted before the command and (suppress=True) after it."""

    def default(value: str | None) -> str | None:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument(
        "--address",
        default=default(None),
        help="host:port of Temporal (default: $TEMPORAL_ADDRESS, else the profile's, else "
        "localhost:7233, where `worker.py --dev` starts its dev server)",
    )
    parser.add_argument(
        "--namespace",
        default=default(None),
        help="Temporal namespace (default: $TEMPORAL_NAMESPACE, else the profile's, else default)",
    )
    parser.add_argument("--profile", default=default(None), help="Temporal config profile")
    parser.add_argument(
        "--task-queue",
        default=default(contract.DEFAULT_TASK_QUEUE),
        help=f"task queue of new runs (default: {contract.DEFAULT_TASK_QUEUE})",
    )


if __name__ == "__main__":
    raise SystemExit(main())
