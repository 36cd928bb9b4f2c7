"""The code blocks of the README and the docs site, as the tests that run them read them."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
FENCE = re.compile(
    r"(?:<!-- not-run: (?P<why>[^>]*) -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.S | re.M
)


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its text, and why it is not run (if marked so)."""

    lang: str
    text: str
    not_run: str | None

    def commands(self) -> list[str]:
        """Its shell commands, one per line (`\\` continuations joined; comments and
        here-documents left as they are)."""
        return [line for line in self.text.replace("\\\n", " ").splitlines() if line.strip()]


def page(path: Path | str) -> str:
    path = Path(path)
    return (path if path.is_absolute() else DOCS / path).read_text(encoding="utf-8")


def blocks(text: str, *, lang: str | None = None) -> list[Block]:
    """The fenced blocks of a Markdown text (of language `lang`, if given)."""
    found = [Block(m.group("lang"), m.group("body"), m.group("why")) for m in FENCE.finditer(text)]
    return [b for b in found if lang is None or b.lang == lang]


def section(text: str, heading: str) -> str:
    """The text from the Markdown heading `heading` (any level) to the end."""
    match = re.search(rf"^#+ {re.escape(heading)}\n", text, re.M)
    assert match is not None, f"no heading {heading!r}"
    return text[match.end() :]


def temporal_commands(text: str) -> list[list[str]]:
    """The `temporal ...` commands of the first sh block of `text`, as argv after `temporal`."""
    [first, *_] = blocks(text, lang="sh")
    return [shlex.split(c)[1:] for c in first.commands() if c.startswith("temporal ")]
