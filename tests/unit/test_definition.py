"""`loop.definition`: the digest `agentctl status` shows of the agent definition a run
uses, and `agentctl tools` of the one the workers serve now."""

from __future__ import annotations

import dataclasses

from durable_agents.activities.agent import Trust
from durable_agents.workflows import loop
from durable_agents.workflows.state import ModelPrice

from tests.support import agents
from tests.support.approver_keys import WORKER_TRUST


def test_the_same_definition_has_the_same_digest_whatever_the_workers_keys_and_prices():
    plain = loop.definition(agents.assistant.spec())
    assert len(plain) == 12 and int(plain, 16) >= 0
    assert loop.definition(agents.assistant.spec(WORKER_TRUST)) == plain
    assert loop.definition(agents.assistant.spec(Trust(), ModelPrice(input=1, output=2))) == plain
    streamed = agents.assistant.spec().model_copy(update={"stream": True})  # a run's choice
    assert loop.definition(streamed) == plain


def test_a_changed_definition_has_another_digest():
    plain = loop.definition(agents.assistant.spec())
    reworded = dataclasses.replace(agents.assistant, instructions="Be brief.")
    fewer = dataclasses.replace(agents.assistant, tools=agents.assistant.tools[:1])
    assert loop.definition(reworded.spec()) != plain
    assert loop.definition(fewer.spec()) != plain
