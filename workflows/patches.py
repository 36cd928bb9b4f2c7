"""The `workflow.patched` ids of AgentWorkflow: behaviour that differs from what the
last release wrote, each checked where it applies through `patched` below.

Release 1.0 has none: nothing started on a build before it is supported, so no patch
was owed for changes before it (deploy/README.md, "Releases and patches", has the
rule). From 1.0 on, a change that alters what a
run of that release writes gets one patch per behaviour (changes between two releases
share it), added to `ORDER`, with the release's recorded histories
(`tests/histories/<release>/`) replaying in CI; a patch retires (first into
`DEPRECATED`, then deleted) once no supported release needs it.
"""

from __future__ import annotations

from temporalio import workflow

ORDER: tuple[str, ...] = ()
"""Every patch, oldest first (a new one goes at the end)."""

DEPRECATED: frozenset[str] = frozenset()
"""Patches in the first step of their retirement: every run takes the new branch and
the marker is written as deprecated, so the id can be deleted once no run started
before this step is open."""


def patched(patch_id: str) -> bool:
    """`workflow.patched(patch_id)`; True for a deprecated patch (its marker written as
    deprecated). Every branch on a patch asks here."""
    if patch_id not in ORDER:
        raise ValueError(f"unknown patch {patch_id!r}: add it to patches.ORDER")
    if patch_id in DEPRECATED:
        workflow.deprecate_patch(patch_id)
        return True
    return workflow.patched(patch_id)
