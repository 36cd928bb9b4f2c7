"""The code blocks of the README and the docs site, as the tests that run them read them."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# A fenced block (at any indentation: inside a list item too), with the marker line
# before it, if any: `<!-- not-run: WHY -->` (not run, and why) or
# `<!-- run-by: tests/.../test_x.py -->` (that test file reads the page and runs it).
FENCE = re.compile(
    r"(?:^[ \t]*<!-- (?P<mark>not-run|run-by): (?P<why>[^>]*?) -->[ \t]*\n)?"
    r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.S | re.M,
)
# Every line that opens or closes a fence, however written: the inventory test checks
# that FENCE found them all (a fence FENCE cannot read would escape it).
FENCE_LINE = re.compile(r"^[ \t]*(```|~~~)", re.M)
MARKER = re.compile(r"^[ \t]*<!-- (not-run|run-by):", re.M)


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its text, and how it is accounted for: why it is
    not run (`not_run`) or which test file runs it (`run_by`)."""

    lang: str
    text: str
    not_run: str | None
    run_by: str | None = None
    line: int = 0  # where its fence opens (1-based), for messages

    def commands(self) -> list[str]:
        """Its shell commands, one per line (`\\` continuations joined; comments and
        here-documents left as they are)."""
        return [line for line in self.text.replace("\\\n", " ").splitlines() if line.strip()]


def page(path: Path | str) -> str:
    path = Path(path)
    return (path if path.is_absolute() else DOCS / path).read_text(encoding="utf-8")


def blocks(text: str, *, lang: str | None = None) -> list[Block]:
    """The fenced blocks of a Markdown text (of language `lang`, if given); an indented
    block's text is given without its indentation."""
    found = []
    for m in FENCE.finditer(text):
        indent = m.group("indent")
        body = "".join(
            line.removeprefix(indent) for line in m.group("body").splitlines(keepends=True)
        )
        mark, why = m.group("mark"), m.group("why")
        found.append(
            Block(
                m.group("lang"),
                body,
                why if mark == "not-run" else None,
                why if mark == "run-by" else None,
                text.count("\n", 0, m.start("indent")) + 1,
            )
        )
    return [b for b in found if lang is None or b.lang == lang]


def section(text: str, heading: str) -> str:
    """The text from the Markdown heading `heading` (any level) to the end."""
    match = re.search(rf"^#+ {re.escape(heading)}\n", text, re.M)
    assert match is not None, f"no heading {heading!r}"
    return text[match.end() :]


# A `temporal` CLI line of a page: the pages a newcomer follows from a checkout say
# `.venv/bin/temporal` (`make demo` installs it there, not on PATH), others `temporal`.
TEMPORAL_LINE = re.compile(r"^(?:\.venv/bin/)?temporal ")


def temporal_argv(line: str) -> list[str] | None:
    """The argv after `temporal` of a page's `temporal ...` line (comment left out), or None."""
    if not TEMPORAL_LINE.match(line):
        return None
    return shlex.split(line.split("  #", 1)[0])[1:]


def temporal_commands(text: str) -> list[list[str]]:
    """The `temporal ...` commands of the first sh block of `text`, as argv after `temporal`."""
    [first, *_] = blocks(text, lang="sh")
    return [argv for c in first.commands() if (argv := temporal_argv(c)) is not None]
