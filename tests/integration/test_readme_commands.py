"""The README's `temporal` CLI examples, run exactly as written against a real run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from durable_agents.workflows.state import Decision, RunStatus

from durable_agents.testing import Call, Reply
from tests.support.runs import start, state_of, temporal_cli, wait_for_status

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_commands(section: str) -> list[list[str]]:
    """The `temporal ...` commands of the first sh block under `## {section}`."""
    text = README.read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1]
    block = re.search(r"```sh\n(.*?)```", body, re.S).group(1)
    lines = block.replace("\\\n", " ").splitlines()
    return [shlex.split(line)[1:] for line in lines if line.startswith("temporal ")]


async def test_readme_temporal_cli_examples_decide_a_real_run(worker, model_server):
    emails = tuple(Call("send_email", {"to": f"t{i}", "body": "b"}, f"call_{i}") for i in (1, 2, 3))
    model_server.script(Reply(tool_calls=emails), Reply(content="done"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    commands = readme_commands("Approving from any other service (the `temporal` CLI here)")
    assert [c[:2] for c in commands] == [
        ["workflow", "query"],
        ["workflow", "signal"],
        ["workflow", "update"],
        ["workflow", "signal"],
    ]
    outputs = []
    for command in commands:
        command = [handle.id if word == "my-run" else word for word in command]
        outputs.append(await temporal_cli(worker, *command))
    assert all(f"call_{i}" in outputs[0] for i in (1, 2, 3))  # the pending calls
    assert "via:update" in outputs[2]  # the update's answer: the recorded decision
    assert (await handle.result()).status is RunStatus.COMPLETED
    decisions = [i for i in (await state_of(handle)).items if isinstance(i, Decision)]
    assert [(d.call_id, d.decision, d.via, d.always) for d in decisions] == [
        ("call_1", "approve", "signal", False),
        ("call_2", "approve", "update", False),
        ("call_3", "reject", "signal", True),
    ]
    assert {d.approver for d in decisions} == {"billing-service"}
