"""The README's first agent and the tutorial, run as written: the agent module saved as
`my_agents.py`, `worker.py --dev --scripted-model` started as the README says (on free
ports), then every `agentctl`, `temporal` and `curl` line of those pages against it; and,
against the same worker, the how-to pages' runnable lines (gateway, schemas, pause and
resume, store gc, erase, the pending-approvals link) and own-worker.md's whole program.

Where a page leaves a value to the reader (`RUN_ID`, `SHA256`: what an earlier command
answered), the test puts in what that command answered; nothing else is changed, except
`.venv/bin/` (the interpreter's own folder), the ports, and `my-run` where one dev server
holds the runs of several tests. Each block this file runs is marked
`<!-- run-by: tests/integration/test_docs_examples.py -->` on its page."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.support.cli_support import Outcome, in_process
from tests.support.doc_blocks import README, ROOT, Block, blocks, page, section
from tests.support.runs import free_port

BIN = Path(sys.executable).parent
# The commands as the pages write them (`sh` runs them from the interpreter's own folder).
CTL, TEMPORAL = ".venv/bin/agentctl", ".venv/bin/temporal"


def env_for(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TEMPORAL_"))}
    # PATH without the venv's folder, as in a newcomer's shell after `make demo`: a page's
    # bare `agentctl` or `temporal` would be "command not found" there, so it fails here.
    path = [d for d in env.get("PATH", "").split(os.pathsep) if d and Path(d) != BIN]
    env.update(
        PATH=os.pathsep.join(path),
        PYTHONPATH=str(tmp_path),
        TEMPORAL_ADDRESS=f"localhost:{port}",
        **extra,
    )
    return env


async def sh(line: str, env: dict[str, str], cwd: Path, timeout: float = 60) -> str:
    """Run one line of a page's sh block with bash; its stdout (fails on a non-zero exit)."""
    process = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        line.replace(".venv/bin/", f"{BIN}/"),
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode == 0, f"{line}\n{out.decode()}{err.decode()}"
    return out.decode()


async def run_line(line: str, env: dict[str, str], cwd: Path) -> Outcome:
    """One line of a page, as `sh` runs it, with its stdout and stderr apart."""
    process = await asyncio.create_subprocess_exec(
        "bash", "-c", line.replace(".venv/bin/", f"{BIN}/"), cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, f"{line}\n{out.decode()}{err.decode()}"
    return Outcome(process.returncode, out.decode(), err.decode())


async def until(line: str, env, cwd, words: str, timeout: float = 30) -> str:
    """Run `line` until its output holds `words` (a run moves on by itself in between).

    A plain `agentctl` line is asked in this process while the run gets there (each
    console script's start costs about a second of CPU: this test's polls were 14 s of
    it), then run as written: the output returned is the page's command's."""
    async with asyncio.timeout(timeout):
        if (ask := in_process_twin(line, env)) is not None:
            while words not in (await ask()).stdout:
                await asyncio.sleep(0.2)
        while words not in (out := await sh(line, env, cwd)):
            await asyncio.sleep(0.2)
    return out


async def ask(line: str, env: dict[str, str], words: str = "", timeout: float = 20) -> str:
    """A test's own check (not a page's line): agentctl in this process, until its output
    holds `words`; a console script's start costs about a second of CPU."""
    twin = in_process_twin(line, env)
    assert twin is not None, line
    async with asyncio.timeout(timeout):
        while (outcome := await twin()).code != 0 or words not in outcome.stdout:
            await asyncio.sleep(0.2)
    return outcome.stdout


def in_process_twin(line: str, env: dict[str, str]) -> Callable[[], Awaitable[Outcome]] | None:
    """`line` as agentctl's `cli.main` in this process, on the page's server, when the
    line is one agentctl command and nothing else (no pipe, variable or redirection)."""
    argv = shlex.split(line)
    if argv[0] not in ("agentctl", ".venv/bin/agentctl") or any(c in line for c in "|&;<>$`"):
        return None
    connection = ("--address", env["TEMPORAL_ADDRESS"])
    return lambda: in_process(*argv[1:], connection=connection)


def sh_lines(block: Block) -> list[str]:
    return [c for c in block.commands() if not c.lstrip().startswith("#")]


@pytest.fixture(scope="module")
async def served(tmp_path_factory):
    """The README's agent module, served by the README's worker command, on free ports."""
    folder = tmp_path_factory.mktemp("first-agent")
    [agent] = blocks(README.read_text(encoding="utf-8"), lang="python")
    (folder / "my_agents.py").write_text(agent.text)
    [serve] = [
        b for b in blocks(README.read_text(encoding="utf-8"), lang="sh") if "worker.py" in b.text
    ]
    [command] = sh_lines(serve)
    port = free_port()
    argv = shlex.split(command.replace(".venv/bin/python", sys.executable))
    ui_port = free_port()
    argv += ["--port", str(port), "--ui-port", str(ui_port), "--dev-db", str(folder / "dev.db")]
    # where the pages' http://localhost:8233 is (agentctl's links go there too)
    env = env_for(folder, port, AGENT_UI_URL=f"http://localhost:{ui_port}")
    worker = await asyncio.create_subprocess_exec(
        *argv, cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    drain = None
    try:
        async with asyncio.timeout(90):
            while b"serving agents my-support" not in (line := await worker.stdout.readline()):
                assert line, "the worker ended before serving"
        drain = asyncio.create_task(worker.stdout.read())  # its log must not fill the pipe
        yield folder, env
    finally:
        worker.send_signal(signal.SIGTERM)
        await asyncio.wait_for(worker.wait(), 60)
        if drain is not None:
            drain.cancel()


async def test_the_readme_first_agent_is_approved_by_agentctl_and_by_the_temporal_cli(served):
    """The README's blocks in the order a newcomer runs them, with their own run ids (the
    `temporal` block's run is a second one: a signal to the ended `my-run` fails), each
    line as written, in a shell whose PATH lacks the venv (`env_for`)."""
    folder, env = served
    text = README.read_text(encoding="utf-8")
    agentctl, other = [b for b in blocks(text, lang="sh") if ".venv/bin/agentctl start" in b.text]
    start, watch, approve, result = sh_lines(agentctl)
    assert "--id my-run" in start and "watch my-run" in watch
    await sh(start, env, folder)
    said = await sh(watch, env, folder)  # it waits for the model, then shows the call
    assert "run my-run needs a decision:" in said and "r1" in said and "issue_refund" in said
    assert "approved r1 by" in await sh(approve, env, folder)
    done = await sh(result, env, folder)
    assert "completed · turn 2" in done and "Done: Refunded 40.00 EUR for order A12." in done

    start, signal_line, result = sh_lines(other)
    assert "temporal workflow signal" in signal_line and "second-run" in signal_line
    await sh(start, env, folder)
    await sh(signal_line, env, folder)  # at once, as a newcomer pastes the block
    done = await sh(result, env, folder)
    assert "completed · turn 2" in done and "Done: Refunded" in done
    decided = await ask(f"{CTL} state second-run", env)
    assert "approved r1 by billing-service" in decided, decided


async def test_the_tutorials_first_agent_is_the_readmes_and_its_commands_print_what_it_says(
    served,
):
    folder, env = served
    text = page("tutorial/first-agent.md")
    [agent] = blocks(text, lang="python")
    assert agent.text == blocks(README.read_text(encoding="utf-8"), lang="python")[0].text
    serve = [b.text for b in blocks(text, lang="sh") if "worker.py" in b.text]
    assert serve == [b.text for b in blocks(README.read_text(), lang="sh") if "worker.py" in b.text]
    start, status, pending, approve, result = sh_lines(
        blocks(section(text, "Start a run and approve it"))[0]
    )
    await sh(start.replace("my-run", "tutorial-run"), env, folder)
    said = "tutorial-run · awaiting_approval · turn 1 · 1 pending approval · "
    assert said in await until(status.replace("my-run", "tutorial-run"), env, folder, "awaiting")
    assert "r1" in await sh(pending.replace("my-run", "tutorial-run"), env, folder)
    await sh(approve.replace("my-run", "tutorial-run"), env, folder)
    done = await sh(result.replace("my-run", "tutorial-run"), env, folder)
    assert "completed · turn 2 · 30 tokens" in text and "completed · turn 2 · 30 tokens" in done
    assert "Done: Refunded 40.00 EUR for order A12." in done

    snapshot, resumed = blocks(section(text, "Keep a snapshot"))
    start, export, validate = sh_lines(snapshot)
    await sh(start, env, folder)
    await until(pending.replace("my-run", "my-run-2"), env, folder, "issue_refund")
    await sh(export, env, folder)
    printed = (await sh(validate, env, folder)).strip()
    resume, pending_3, approve_3, result_3 = sh_lines(resumed)
    said = await run_line(resume, env, folder)
    assert (said.stdout, said.stderr) == ("my-run-3\n", "cancelled the source run my-run-2\n")
    assert "issue_refund" in await until(pending_3, env, folder, "r1")
    assert "approved r1 by" in await sh(approve_3, env, folder)
    assert "Done: Refunded 40.00 EUR for order A12." in await sh(result_3, env, folder)
    assert "my-run-2 · cancelled" in await ask(f"{CTL} status my-run-2", env)
    origin = json.loads(await ask(f"{CTL} state my-run-3 --json", env))["origin"]
    assert (origin["run_id"], origin["mode"]) == ("my-run-2", "resume")
    written = re.search(r"`(valid, schema [^`]*)`", text.replace("\n", " ")).group(1)
    assert version_free(printed) == version_free(written)
    # docs/how-to/snapshots.md shows the same line for `my-run`, as the command prints it
    how_to = re.search(r"# (valid, schema .*)", page("how-to/snapshots.md")).group(1)
    assert version_free(how_to) == version_free(printed.replace("my-run-2", "my-run"))


def version_free(line: str) -> str:
    """A `validate` line with its schema version out: the docs write the version
    generically, and a later release may move RunState's version."""
    return re.sub(r"schema \d+\.\d+", "schema N", line)


async def test_the_tutorials_approvals_and_sessions_run_as_written(served):
    folder, env = served
    text = page("tutorial/approvals.md")
    cli, other, update, _ui = blocks(text, lang="sh")  # the UI's: test_..._temporal_ui_...
    start, pending, reject, result = sh_lines(cli)
    await sh(start, env, folder)
    await until(pending, env, folder, "issue_refund")
    assert "rejected r1" in await sh(reject, env, folder)
    assert "needs a photo of the damage" in await sh(result, env, folder)

    start, query, approve = sh_lines(other)
    await sh(start, env, folder)
    await until(query, env, folder, "arguments_sha256")
    await sh(approve, env, folder)
    assert "Done: Refunded" in await sh(".venv/bin/agentctl result run-b", env, folder)
    start, decide = sh_lines(update)
    await sh(start, env, folder)
    await until(".venv/bin/agentctl pending run-c", env, folder, "issue_refund")
    assert "via:update" in await sh(decide, env, folder)

    text = page("tutorial/sessions.md")
    session, message = blocks(text, lang="sh")
    start, watch, approve, watch_again, send, state, end, result = sh_lines(session)
    assert watch == watch_again
    await sh(start, env, folder)
    assert "r1" in await sh(watch, env, folder)  # waits for the decision: no poll
    await sh(approve, env, folder)
    said = await sh(watch, env, folder)
    assert "run chat-1 waits for the user's next message" in said, said
    status = await ask(f"{CTL} status chat-1", env)
    assert "chat-1 · awaiting_input · turn 2" in status and "awaiting_input · turn 2" in text
    await sh(send, env, folder)
    assert "user: Thanks. Is it done?" in await until(state, env, folder, "turn 3)")
    [other_message] = sh_lines(message)
    await sh(other_message, env, folder)
    await sh(end, env, folder)
    assert "completed" in await sh(result, env, folder)


@contextlib.asynccontextmanager
async def gateway_as_written(env: dict[str, str], folder: Path):
    """docs/how-to/gateway.md's first block: its callers file and `agentctl serve`, on a
    free port; yields the environment with the two tokens exported, and the port."""
    callers = blocks(page("how-to/gateway.md"), lang="sh")[0]
    setup = callers.text[: callers.text.index("AGENT_GATEWAY_TOKENS=")]
    [serve] = [line for line in sh_lines(callers) if line.startswith("AGENT_GATEWAY_TOKENS=")]
    port = free_port()
    tokens = await sh(setup + 'echo "$DESK_TOKEN $BOT_TOKEN"', env, folder)
    desk, bot = tokens.split()
    env = {**env, "DESK_TOKEN": desk, "BOT_TOKEN": bot}
    gateway = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        serve.replace(".venv/bin/", f"{BIN}/").replace("8088", str(port)),
        cwd=folder,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        async with asyncio.timeout(30):
            while not await sh_quiet(f"curl -sf localhost:{port}/openapi.json", env, folder):
                await asyncio.sleep(0.2)  # the gateway is still starting
        yield env, port
    finally:
        gateway.send_signal(signal.SIGTERM)
        await asyncio.wait_for(gateway.wait(), 30)


async def test_the_gateway_examples_work_as_written(served):
    """docs/how-to/gateway.md: its callers file, `agentctl serve` and every curl line."""
    folder, env = served
    calls = blocks(page("how-to/gateway.md"), lang="sh")[1]
    async with gateway_as_written(env, folder) as (env, port):
        start, pending, decide, events = [
            line.replace("8088", str(port)) for line in sh_lines(calls)
        ]
        run_id = json.loads(await sh(start, env, folder))["run_id"]
        pending = pending.replace("RUN_ID", run_id)
        [call] = json.loads(await until(pending, env, folder, "arguments_sha256"))
        decide = decide.replace("RUN_ID", run_id).replace("SHA256", call["arguments_sha256"])
        decision = json.loads(await sh(decide, env, folder))
        assert (decision["approver"], decision["decision"]) == ("ann", "approve"), decision
        streamed = await sh(events.replace("RUN_ID", run_id), env, folder, timeout=30)
        assert "event: run_finished" in streamed and "Done: Refunded" in streamed


async def test_the_inbox_try_it_approves_from_the_page_as_written(served):
    """docs/how-to/inbox.md, "Try it": the gateway of gateway.md, the page's two lines, then
    what it tells a person to do in the browser: a wrong token first (the variable's name,
    pasted as is), the echoed one, Reason, Approve; the run ends with the refund."""
    from playwright.async_api import async_playwright, expect

    from tests.support import browser as browser_support

    if await browser_support.chromium() is None:
        pytest.skip(f"Chromium is not installed at {browser_support.CHROMIUM} (make browser)")
    folder, env = served
    text = section(page("how-to/inbox.md"), "Try it with the tutorial's agent")
    start, echo = sh_lines(blocks(text, lang="sh")[0])
    said = " ".join(text.split())
    [url] = re.findall(r"<(http://127\.0\.0\.1:8088/inbox)>", text)
    [refused] = re.findall(r"\(`(that is not the token[^`]*)`", said)
    async with gateway_as_written(env, folder) as (env, port), async_playwright() as playwright:
        await sh(start, env, folder)
        token = (await sh(echo, env, folder)).strip()
        assert token == env["DESK_TOKEN"]
        chromium = await playwright.chromium.launch(
            executable_path=str(browser_support.CHROMIUM), args=["--no-sandbox"], headless=True
        )
        try:
            expect.set_options(timeout=30_000)
            browser_page = await chromium.new_page()
            await browser_page.goto(url.replace("8088", str(port)))
            await browser_page.get_by_label("Token").fill("$DESK_TOKEN")
            await browser_page.get_by_role("button", name="Sign in").click()
            await expect(browser_page.get_by_role("alert")).to_have_text(refused)
            await browser_page.get_by_label("Token").fill(token)
            await browser_page.get_by_role("button", name="Sign in").click()
            card = browser_page.locator('[data-run-id="inbox-run"][data-call-id="r1"]')
            await card.get_by_role("textbox", name="Reason").fill("photo checked")
            await card.get_by_role("button", name="Approve").click()
            decided = browser_page.locator('[data-run-id="inbox-run"][data-decided-call-id="r1"]')
            await expect(decided).to_contain_text("Approved by desk at")
        finally:
            await chromium.close()
    assert "Approved by desk at" in said
    done = await ask(f"{CTL} result inbox-run", env)
    assert "Done: Refunded 40.00 EUR for order A12." in done and "Done: Refunded 40.00" in said
    state = await ask(f"{CTL} state inbox-run", env)
    assert "approved r1 by desk" in state and "photo checked" in state, state


async def sh_quiet(line: str, env, cwd) -> str:
    """`sh`, but a failure (a server not listening yet) is an empty answer."""
    try:
        return await sh(line, env, cwd)
    except AssertionError:
        return ""


async def test_the_how_to_command_lines_run_as_written(served):
    """reference/schemas.md, how-to/approvals.md (a refused signal in `status`),
    how-to/temporal-ui.md (the link `pending --all` prints) and how-to/operating.md
    (pause and resume, with agentctl and with the `temporal` CLI; the warning of a start
    no worker polls for), against runs of the README's agent. `my-run` and `RUN_ID`
    become this test's runs."""
    folder, env = served
    [schemas] = blocks(page("reference/schemas.md"), lang="sh")
    one, snapshot = sh_lines(schemas)
    assert json.loads(await sh(one, env, folder))["title"] == "`approve` signal"
    assert "RunState" in json.loads(await sh(snapshot, env, folder))["title"]

    [operate] = [b for b in blocks(page("how-to/operating.md"), lang="sh") if "pause" in b.text]
    pause, unpause, pause_signal, resume_signal = [
        line.replace("my-run", "docs-pause") for line in sh_lines(operate)
    ]
    start, pending, approve, result = sh_lines(blocks(README.read_text(), lang="sh")[2])
    await sh(start.replace("my-run", "docs-pause"), env, folder)
    await until(pending.replace("my-run", "docs-pause"), env, folder, "issue_refund")
    # how-to/approvals.md: what `agentctl status` says of a signal the run refused
    [refused] = [b.text for b in blocks(page("how-to/approvals.md")) if "last refused" in b.text]
    bad = '{"call_id": "call_9", "approver": "billing-service"}'
    await sh(
        f"{TEMPORAL} workflow signal --workflow-id docs-pause --name approve --input '{bad}'",
        env,
        folder,
    )
    said = await until(".venv/bin/agentctl status docs-pause", env, folder, "last refused signal")
    # the time and the definition's digest (of the agent as the workers serve it) vary
    varying = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ|(?<=definition )[0-9a-f]{12}")
    assert varying.sub("X", said.replace("docs-pause", "my-run")) == varying.sub("X", refused)
    # how-to/temporal-ui.md: the link `pending --all` ends with, as the page shows it
    [link] = [b.text.strip() for b in blocks(page("how-to/temporal-ui.md"), lang="text")]
    ui = {**env, "AGENT_UI_URL": "http://localhost:8233"}
    assert (await sh(f"{CTL} pending --all", ui, folder)).strip().splitlines()[-1] == link
    assert "docs-pause · paused · turn 1" in await sh(pause, env, folder)
    await sh(unpause, env, folder)
    status = ".venv/bin/agentctl status docs-pause"
    assert "paused" not in await sh(status, env, folder)
    await sh(pause_signal, env, folder)
    await until(status, env, folder, "paused")
    await sh(resume_signal, env, folder)
    await sh(approve.replace("my-run", "docs-pause"), env, folder)
    assert "Done: Refunded" in await sh(result.replace("my-run", "docs-pause"), env, folder)

    # how-to/operating.md: what `agentctl start` says when no worker polls the queue
    [warning] = [b.text for b in blocks(page("how-to/operating.md")) if "typo-queue" in b.text]
    typo = f'{BIN}/agentctl start my-support "Refund A12" --task-queue typo-queue --id docs-typo'
    process = await asyncio.create_subprocess_exec(
        "bash", "-c", typo, cwd=folder, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert (process.returncode, out.decode()) == (0, "docs-typo\n"), err.decode()
    assert err.decode() == warning.replace("support-3f2a", "docs-typo")
    await sh(".venv/bin/agentctl cancel docs-typo", env, folder)


async def completed_run(run_id: str, env, folder) -> None:
    """A run of the README's agent, started, approved and ended with its own commands."""
    start, pending, approve, result = [
        line.replace("my-run", run_id)
        for line in sh_lines(blocks(README.read_text(), lang="sh")[2])
    ]
    await sh(start, env, folder)
    await until(pending, env, folder, "issue_refund")
    await sh(approve, env, folder)
    assert "Done: Refunded" in await sh(result, env, folder)


async def test_the_store_and_erase_lines_run_as_written(served, tmp_path):
    """how-to/codec-payload-store.md: `store gc` on a store folder, and the three ways to
    erase an ended run (`RUN_ID` becomes this test's runs)."""
    folder, env = served
    gc, erase = blocks(page("how-to/codec-payload-store.md"), lang="sh")
    store = tmp_path / "store"
    store.mkdir()
    (store / "kept").write_text("not a blob of the store")  # whatever else sits there stays
    gc_env = {**env, "AGENT_PAYLOAD_STORE": str(store)}
    dry, collect = sh_lines(gc)
    assert "would" in (said := await sh(dry, gc_env, folder)) and "runs read" in said, said
    assert "runs read" in await sh(collect, gc_env, folder)
    assert (store / "kept").read_text() == "not a blob of the store"

    # three ways to erase an ended run: the last one on a run of its own
    dry, erase_one, erase_all = sh_lines(erase)
    await completed_run("docs-erase-1", env, folder)
    said = await sh(dry.replace("RUN_ID", "docs-erase-1"), env, folder)
    assert "run docs-erase-1: would remove" in said, said
    assert "docs-erase-1 · completed" in await sh(f"{CTL} status docs-erase-1", env, folder)
    said = await sh(erase_one.replace("RUN_ID", "docs-erase-1"), env, folder)
    assert "asked Temporal to delete 1 execution(s)" in said, said
    await completed_run("docs-erase-2", env, folder)
    said = await sh(erase_all.replace("RUN_ID", "docs-erase-2"), env, folder)
    assert "asked Temporal to delete 1 execution(s)" in said, said


async def test_the_own_worker_program_serves_its_workflow_and_approves_from_python(served):
    """how-to/own-worker.md's whole program: the user's workflow and the tutorial's agent
    on the user's own worker, a run started and approved with AgentClient, offline."""
    folder, env = served
    text = section(page("how-to/own-worker.md"), "The whole program, offline")
    [program] = blocks(text, lang="python")
    [command] = sh_lines(blocks(text, lang="sh")[0])
    port = env["TEMPORAL_ADDRESS"].rsplit(":", 1)[1]
    (folder / "my_app.py").write_text(program.text.replace("localhost:7233", f"localhost:{port}"))
    printed = (await sh(command, env, folder, timeout=120)).splitlines()
    assert printed == [
        "tea: 3 EUR",
        'approving issue_refund({"order_id": "A12", "amount": 40})',
        "Done: Refunded 40.00 EUR for order A12.",
    ]


async def test_the_tutorials_temporal_ui_approval_works_as_written(served):
    """tutorial/approvals.md, "From the Temporal UI": its start line, then its steps in
    Chromium against the dev server's own UI: the pending call read under User Metadata,
    the custom `approve` signal with the page's Data, the run completed."""
    from playwright.async_api import async_playwright, expect

    from tests.integration.test_ui_browser import CHROMIUM_ARGS, send_signal
    from tests.support import browser as browser_support

    if await browser_support.chromium() is None:
        pytest.skip(f"Chromium is not installed at {browser_support.CHROMIUM} (make browser)")
    folder, env = served
    text = section(page("tutorial/approvals.md"), "From the Temporal UI")
    text = text[: text.index("## Policies")]
    [start] = sh_lines(blocks(text, lang="sh")[0])
    [url] = re.findall(r"<(http://localhost:8233/[^>]*)>", text)
    [name] = re.findall(r"choose \*Custom\* and type `(\w+)`", " ".join(text.split()))
    [data] = re.findall(r"\*Data\*: `(\{[^`]*\})`", text)
    [result] = [c for c in re.findall(r"`(\.venv/bin/agentctl [^`]*)`", text) if "result" in c]
    await sh(start, env, folder)
    await ask(f"{CTL} pending run-d", env, "issue_refund")
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=str(browser_support.CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            expect.set_options(timeout=30_000)
            ui = await chromium.new_page(viewport={"width": 1400, "height": 900})
            await ui.goto(url.replace("http://localhost:8233", env["AGENT_UI_URL"]))
            await ui.get_by_text("User Metadata", exact=True).click()
            details = ui.frame_locator("#user-metadata-current-details").locator("body")
            await expect(details).to_contain_text("issue_refund")
            await expect(details).to_contain_text("r1")
            await send_signal(ui, name, data)
            done = await sh(result, env, folder)
            [said] = re.findall(r"prints `(Done: [^`]*)`", text)
            assert said in done, done
            await ui.reload()
            await ui.get_by_text("User Metadata", exact=True).click()
            await expect(details).to_contain_text("completed")
        finally:
            await chromium.close()
    decided = await ask(f"{CTL} state run-d", env)
    assert "approved r1 by ann" in decided, decided
