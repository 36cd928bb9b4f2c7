"""Every code block of the README and the docs site is accounted for (issue 43): run by
a test, or marked as not run with the reason. A block is marked by the line before its
fence:

    <!-- run-by: tests/integration/test_docs_examples.py -->   a test file that reads
        the page (it names the page's path) and runs the block
    <!-- not-run: an output sample -->                          why it is not run

A block with neither fails here, naming the page and line; so does a `run-by` file that
does not exist or never names the page, and a marker no fence follows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from durable_agents import Agent, AgentClient, Tool
from tests.support.doc_blocks import DOCS, FENCE_LINE, MARKER, README, ROOT, Block, blocks

PAGES = (README, *sorted(DOCS.rglob("*.md")))


def where(path: Path, block: Block) -> str:
    return f"{path.relative_to(ROOT)}:{block.line}"


def page_name(path: Path) -> str:
    """How a test names the page: `README` for the README, else its path under docs/."""
    return "README" if path == README else path.relative_to(DOCS).as_posix()


def every_block() -> list[tuple[Path, Block]]:
    return [(p, b) for p in PAGES for b in blocks(p.read_text(encoding="utf-8"))]


def test_the_parser_sees_every_fence_and_every_marker():
    """A fence written in a way the parser cannot read (tildes, four backticks, an
    unclosed one) or a marker no fence follows would let a block escape the inventory."""
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        found = blocks(text)
        assert len(FENCE_LINE.findall(text)) == 2 * len(found), f"{path}: a fence unread"
        marked = [b for b in found if b.not_run is not None or b.run_by is not None]
        assert len(MARKER.findall(text)) == len(marked), f"{path}: a marker before no fence"
    assert len(every_block()) > 80


def test_every_block_is_run_by_a_test_or_says_why_not():
    unaccounted = [where(p, b) for p, b in every_block() if b.not_run is None and b.run_by is None]
    assert not unaccounted, (
        "blocks neither run by a test nor marked not run "
        "(put `<!-- run-by: tests/....py -->` or `<!-- not-run: WHY -->` on the line "
        f"before the fence): {unaccounted}"
    )


def test_a_reason_not_to_run_is_a_reason():
    for path, block in every_block():
        if block.not_run is not None:
            assert len(block.not_run.split()) >= 3, f"{where(path, block)}: {block.not_run!r}"


def test_a_block_run_by_a_test_names_a_test_file_that_reads_its_page():
    claimed = 0
    for path, block in every_block():
        if block.run_by is None:
            continue
        test = ROOT / block.run_by
        assert block.run_by.startswith("tests/") and test.name.startswith("test_"), (
            f"{where(path, block)}: run-by {block.run_by!r} is not a test file"
        )
        assert test.is_file(), f"{where(path, block)}: no test file {block.run_by}"
        assert page_name(path) in test.read_text(encoding="utf-8"), (
            f"{where(path, block)}: {block.run_by} never reads {page_name(path)}"
        )
        claimed += 1
    assert claimed >= 30


# The Python blocks this file runs: whole programs or definitions, run in order in one
# namespace per page (a later block of a page uses what an earlier one defined).
RUN_HERE = (
    "how-to/agents.md",
    "how-to/approval-rules.md",
    "how-to/approvals.md",
    "how-to/mcp.md",
    "tutorial/approvals.md",
    "reference/api.md",
)


@pytest.mark.parametrize("name", RUN_HERE)
def test_the_python_blocks_of_a_page_run_as_written(name):
    path = DOCS / name
    ran = [b for b in blocks(path.read_text(encoding="utf-8"), lang="python")]
    ran = [b for b in ran if b.run_by == "tests/unit/test_doc_blocks_inventory.py"]
    assert ran, f"{name}: no python block marked as run here"
    namespace: dict[str, object] = {"__name__": f"docs_{path.stem}"}
    for block in ran:
        exec(compile(block.text, where(path, block), "exec"), namespace)
    made = [v for v in namespace.values() if isinstance(v, (Agent, Tool))]
    assert made or namespace.get("AgentClient") is AgentClient, f"{name}: nothing defined"


def test_the_json_blocks_are_json():
    """Config files the pages show (not run: they need services of their own) are at
    least documents a JSON parser reads."""
    found = [(p, b) for p, b in every_block() if b.lang == "json"]
    assert found
    for path, block in found:
        try:
            json.loads(block.text)
        except json.JSONDecodeError as error:
            pytest.fail(f"{where(path, block)}: {error}")


def test_the_docs_pictures_stay_small_and_are_shown():
    """docs/img/*.png (`make screenshots`): each under 150 KB, each on a page."""
    pictures = sorted((DOCS / "img").glob("*.png"))
    assert len(pictures) >= 3
    text = "".join(p.read_text(encoding="utf-8") for p in PAGES)
    for picture in pictures:
        assert picture.stat().st_size < 150_000, picture.name
        assert f"img/{picture.name})" in text, f"{picture.name} is on no page"
