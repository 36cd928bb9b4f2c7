"""The published JSON Schemas of the contract's payloads: committed, current, and
saying what the workflow itself accepts."""

from __future__ import annotations

import json

import jsonschema
import pytest
from durable_agents.client import cli
from durable_agents.workflows.payload_schemas import PAYLOADS, payload_schema

from schemas import generate
from tests.integration.test_readme_commands import readme_commands
from tests.support.doc_blocks import DOCS, README, blocks, temporal_argv


def test_committed_payload_schemas_are_current():
    assert generate.payload_problems(write=False) == []
    assert sorted(p.name for p in generate.payload_path("x").parent.iterdir()) == sorted(
        f"{name}.schema.json" for name in PAYLOADS
    )


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads(generate.payload_path(name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_readme_payloads_fit_their_schemas():
    sent = {
        c[c.index("--name") + 1]: json.loads(c[c.index("--input") + 1])
        for c in readme_commands()
        if "--input" in c
    }
    assert set(sent) == {"approve", "decide", "reject"}
    for name, payload in sent.items():
        validator(name).validate(payload)


def test_every_payload_the_readme_and_docs_send_fits_its_schema():
    """Each `temporal workflow signal|update ... --name NAME --input JSON` line of the
    README and the docs sends a payload the contract's schema of NAME accepts."""
    checked = set()
    for path in (README, *sorted(DOCS.rglob("*.md"))):
        for block in blocks(path.read_text(encoding="utf-8"), lang="sh"):
            for line in block.commands():
                argv = temporal_argv(line)
                if argv is None or argv[0] != "workflow" or "--name" not in argv:
                    continue
                if "--input" not in argv or argv[1] not in ("signal", "update"):
                    continue
                name = argv[argv.index("--name") + 1]
                validator(name).validate(json.loads(argv[argv.index("--input") + 1]))
                checked.add(name)
    assert {"approve", "reject", "decide", "send_message", "pause", "resume"} <= checked


@pytest.mark.parametrize(
    ("name", "payload", "problem"),
    [
        ("approve", {"call_id": "c1", "approver": "a", "always": "true"}, "is not of type"),
        ("reject", {"call_id": "c1"}, "'approver' is a required property"),
        ("decide", {"call_id": "c1", "approver": "a", "decision": "maybe"}, "is not one of"),
        ("send_message", {"content": "hi", "extra": 1}, "Additional properties"),
    ],
)
def test_schemas_refuse_what_the_workflow_refuses(name, payload, problem):
    with pytest.raises(jsonschema.ValidationError, match=problem):
        validator(name).validate(payload)


def test_agentctl_prints_a_payload_schema(capsys):
    assert cli.main(["schema", "decide"]) == 0
    assert json.loads(capsys.readouterr().out) == payload_schema("decide")
