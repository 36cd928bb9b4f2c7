"""Which patches the recorded histories still need, proved by replay
(`tests/support/patch_needs.py`), and the table deploy/README.md's rule for retiring
a patch reads (tests/histories/PATCHES.md) kept current."""

from __future__ import annotations

import re
from pathlib import Path

from durable_agents.workflows import patches

from tests.support import patch_needs

WORKFLOW_CODE = Path(patches.__file__).resolve().parent


async def test_the_table_of_patch_needs_is_current():
    table = await patch_needs.needs()
    assert patch_needs.TABLE.read_text() == patch_needs.render(table), (
        "tests/histories/PATCHES.md is stale: run python -m tests.support.patch_needs"
    )
    # Every patch has a recorded run that reached its branch.
    assert not [p for p, need in table.items() if not need.asked]


async def test_a_patch_whose_old_branch_a_history_took_cannot_be_deprecated():
    """The proof is a replay that fails: protocol_edges_v2 gave reused call ids names of
    the old form, so deprecating `provider-safe-call-ids` breaks it, and deleting the
    id breaks every history holding its marker."""
    replays = patch_needs.Replays()
    broken = await replays.breaks(
        patches.PATCH_PROVIDER_SAFE_CALL_IDS,
        ["protocol_edges_v2", "protocol_edges_v3"],
        deleted=False,
    )
    assert broken == ["protocol_edges_v2"]
    gone = await replays.breaks(
        patches.PATCH_PROVIDER_SAFE_CALL_IDS, ["protocol_edges_v3"], deleted=True
    )
    assert gone == ["protocol_edges_v3"]
    assert await replays.breaks(patches.PATCH_WEBHOOKS, ["webhooks_v27"], deleted=False) == []


def test_workflow_code_asks_every_patch_through_patches_patched():
    """Else the table would miss a branch: `workflow.patched` is called in one place."""
    direct = re.compile(r"workflow\.(patched|deprecate_patch)\(")
    callers = [
        path.name
        for path in WORKFLOW_CODE.glob("*.py")
        if path.name != "patches.py" and direct.search(path.read_text())
    ]
    assert callers == []


async def test_deprecating_a_patch_is_one_line_and_the_table_says_what_it_breaks(monkeypatch):
    """Step 1 of retiring, as deploy/README.md says: the id in `patches.DEPRECATED`.
    Every history replays through the real `patches.patched` but the ones the table
    lists for the patch. (Unsandboxed: a sandboxed run imports its own `patches`.)"""
    replays = patch_needs.Replays()
    for patch_id, broken in (
        (patches.PATCH_WEBHOOKS, []),
        (patches.PATCH_PROVIDER_SAFE_CALL_IDS, ["protocol_edges_v2"]),
    ):
        monkeypatch.setattr(patches, "DEPRECATED", frozenset({patch_id}))
        failed = [p.stem for p in replays.paths if not await replays.replays(p)]
        assert failed == broken, patch_id


def test_every_patch_has_its_place_in_the_order_and_the_levels_are_in_it():
    """`patches.ORDER` decides which patches a level counts as asked: a patch missing
    from it could not be asked at all, one listed twice would be counted twice."""
    declared = [v for k, v in vars(patches).items() if k.startswith("PATCH_")]
    assert sorted(patches.ORDER) == sorted(declared)
    assert len(set(patches.ORDER)) == len(patches.ORDER)
    ranks = [patches.ORDER.index(level) for level in patches.LEVELS]
    assert ranks == sorted(ranks)


def test_no_patch_is_slipped_in_before_a_level():
    """A run that started with a level on an older build counts every patch before it
    as taken: one added there later would be counted for runs that never had it.
    These are the patches each level counts, for good."""
    first = patches.ORDER.index(patches.PATCH_ASKED_AT_START)
    assert patches.ORDER[:first] == COUNTED_BY_THE_FIRST_LEVEL
    second = patches.ORDER.index(patches.PATCH_LEVEL_2)
    assert patches.ORDER[first + 1 : second] == COUNTED_BY_THE_SECOND_LEVEL_TOO
    assert patches.LEVELS == (patches.PATCH_ASKED_AT_START, patches.PATCH_LEVEL_2)


COUNTED_BY_THE_SECOND_LEVEL_TOO = (
    "checked-tree-signals",
    "guardrail-check-items",
    "checked-tool-outcomes",
    "checked-replies",
)


COUNTED_BY_THE_FIRST_LEVEL = (
    "unique-call-ids",
    "provider-safe-call-ids",
    "quiet-refused-signals",
    "switch-while-waiting",
    "publish-start-failure",
    "resume-under-own-id",
    "any-signal-arguments",
    "bounded-refusals",
    "field-limits",
    "max-turns-lower-only",
    "repeated-argument-keys",
    "cancel-during-model-call",
    "heartbeats",
    "bound-decisions",
    "rename-unsafe-call-ids",
    "verified-resume",
    "finite-argument-numbers",
    "execution-bound-decisions",
    "structured-output",
    "total-tokens-attribute",
    "resume-context-overlay",
    "pause-resume",
    "total-cost-attribute",
    "resume-from-other-tools",
    "mcp-tools",
    "mcp-idempotency-key",
    "mcp-list-again",
    "mcp-images",
    "webhooks",
    "run-events",
    "handoffs",
    "agent-tools",
    "tree-approvals",
    "tree-snapshots",
    "tree-pause",
    "tree-budgets",
    "tree-start",
    "child-failure-policy",
    "upgrade-at-continue-as-new",
    "definition-updates",
    "wake-from-step",
    "local-tools",
    "start-when-decided",
    "tool-queues",
    "coalesced-counters",
)
