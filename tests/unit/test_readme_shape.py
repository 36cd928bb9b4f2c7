"""The README stays one screen to a first agent (issue 43) and points only at files
that exist; the docs site's own links are checked by `make docs` (mkdocs --strict)."""

from __future__ import annotations

import ast
import importlib
import re

from tests.support.doc_blocks import DOCS, README, ROOT, blocks


def test_the_readme_is_short_and_shows_an_agent_in_its_first_100_lines():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 250
    first_python = next(i for i, line in enumerate(lines) if line.startswith("```python"))
    assert first_python < 100
    [agent] = blocks(text, lang="python")
    assert "needs_approval=True" in agent.text and "Agent(" in agent.text
    assert "--scripted-model my_agents:scripted_model" in text


def test_the_readmes_links_point_at_files_of_the_repository():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "the README links the docs"
    for target in local:
        assert not target.startswith(".."), f"{target}: outside the repository"
        assert (ROOT / target).exists(), f"{target}: no such file"


def all_python_blocks() -> list[tuple[str, str]]:
    pages = (README, *sorted(DOCS.rglob("*.md")))
    return [
        (str(p.relative_to(ROOT)), b.text)
        for p in pages
        for b in blocks(p.read_text(encoding="utf-8"), lang="python")
    ]


def test_every_python_block_of_the_readme_and_docs_compiles_and_imports_what_exists():
    """The fragments the how-to pages show (`...` for the parts left out) are Python,
    and every name they import from the package is one it has."""
    found = all_python_blocks()
    assert len(found) > 15
    for where, text in found:
        tree = compile(text, where, "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("durable_"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{where}: {node.module}.{alias.name}"
