"""The docs' `temporal` CLI examples (how-to/approvals.md), run exactly as written
against a real run."""

from __future__ import annotations

from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunStatus

from durable_agents.testing import Call, Reply
from tests.support.doc_blocks import page, section, temporal_commands
from tests.support.runs import start, state_of, temporal_cli, wait_for_status

SECTION = "Approving from any other service (the `temporal` CLI here)"


def readme_commands(heading: str = SECTION) -> list[list[str]]:
    """The `temporal ...` commands of the first sh block under `heading` in
    docs/how-to/approvals.md (they were the README's)."""
    return temporal_commands(section(page("how-to/approvals.md"), heading))


async def test_readme_temporal_cli_examples_decide_a_real_run(worker, model_server):
    emails = tuple(Call("send_email", {"to": f"t{i}", "body": "b"}, f"call_{i}") for i in (1, 2, 3))
    model_server.script(Reply(tool_calls=emails), Reply(content="done"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    commands = readme_commands()
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
