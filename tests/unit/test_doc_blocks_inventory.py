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


def problems(path: Path, text: str) -> list[str]:
    """What keeps a page's blocks from being accounted for, one line each."""
    found = blocks(text)
    said = []
    if len(FENCE_LINE.findall(text)) != 2 * len(found):
        said.append(
            f"{path.name}: a fence the parser cannot read (tildes, four backticks, unclosed)"
        )
    marked = [b for b in found if b.not_run is not None or b.run_by is not None]
    if len(MARKER.findall(text)) != len(marked):
        said.append(f"{path.name}: a marker no fence follows")
    for block in found:
        here = where(path, block)
        if block.not_run is None and block.run_by is None:
            said.append(
                f"{here}: neither run by a test nor marked not run (put `<!-- run-by: "
                "tests/....py -->` or `<!-- not-run: WHY -->` on the line before the fence)"
            )
        elif block.not_run is not None and len(block.not_run.split()) < 3:
            said.append(f"{here}: not a reason: {block.not_run!r}")
        elif block.run_by is not None:
            said += run_by_problems(path, block)
    return said


def run_by_problems(path: Path, block: Block) -> list[str]:
    test = (ROOT / block.run_by).resolve()
    here = where(path, block)
    if not (test.is_relative_to(ROOT / "tests") and test.name.startswith("test_")):
        return [f"{here}: run-by {block.run_by!r} is not a test file"]
    if not test.is_file():
        return [f"{here}: no test file {block.run_by}"]
    if page_name(path) not in test.read_text(encoding="utf-8"):
        return [f"{here}: {block.run_by} never reads {page_name(path)}"]
    return []


def test_every_block_is_run_by_a_test_or_says_why_not():
    found = [problem for path in PAGES for problem in problems(path, path.read_text("utf-8"))]
    assert not found, "\n".join(found)
    every = every_block()
    assert len(every) > 80
    assert sum(b.run_by is not None for _, b in every) >= 30


RUN_BY = "<!-- run-by: tests/integration/test_docs_examples.py -->\n"
HOSTILE_PAGES = [
    ("```sh\nls\n```\n", "neither run by a test nor marked"),
    ("<!-- not-run: -->\n```sh\nls\n```\n", "neither run by a test nor marked"),
    ("<!-- not-run: why -->\n```sh\nls\n```\n", "not a reason"),
    ("<!-- not-run: an output sample -->\n\n```sh\nls\n```\n", "a marker no fence follows"),
    ("<!-- not-run: an output sample -->\ntext\n```sh\nls\n```\n", "a marker no fence follows"),
    (RUN_BY + "~~~sh\nls\n~~~\n", "a fence the parser cannot read"),
    (RUN_BY + "````sh\nls\n````\n", "a fence the parser cannot read"),
    (RUN_BY + "```sh\nls\n", "a fence the parser cannot read"),
    ("- item\n\n  ```sh\n  ls\n  ```\n", "neither run by a test nor marked"),
    ("<!-- run-by: tests/../README.md -->\n```sh\nls\n```\n", "is not a test file"),
    ("<!-- run-by: /etc/passwd -->\n```sh\nls\n```\n", "is not a test file"),
    ("<!-- run-by: ../tests/test_x.py -->\n```sh\nls\n```\n", "is not a test file"),
    ("<!-- run-by: tests/unit/test_nothing_here.py -->\n```sh\nls\n```\n", "no test file"),
    (RUN_BY + "```sh\nls\n```\n", "never reads how-to/not-a-page.md"),
]


@pytest.mark.parametrize(("text", "problem"), HOSTILE_PAGES)
def test_a_block_that_is_not_accounted_for_is_named(text, problem):
    """Pages written to slip a block past the inventory, each caught with its reason."""
    found = problems(DOCS / "how-to" / "not-a-page.md", text)
    assert any(problem in line for line in found), found


def test_a_marked_block_at_any_indentation_is_read():
    text = "- item\n\n  " + RUN_BY + "  ```sh\n  ls -l\n  ```\n"
    [block] = blocks(text)
    assert (block.text, block.run_by, block.line) == (
        "ls -l\n",
        "tests/integration/test_docs_examples.py",
        4,
    )


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
