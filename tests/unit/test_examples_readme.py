"""examples/README.md is the map of examples/: it names every file there, and what it
says to run exists (each `make` target, module, `MODULE:FUNCTION`, linked page); its two
command blocks are a worker line the worker's own parser takes and a start of an agent
that line serves. (The support agent's line is what `make demo` runs end to end:
tests/integration/test_worker.py.)"""

from __future__ import annotations

import importlib
import re
import shlex

from durable_agents.activities.registry import AgentRegistry

from durable_agents import worker
from tests.support.doc_blocks import ROOT, blocks

EXAMPLES = ROOT / "examples"
TEXT = (EXAMPLES / "README.md").read_text(encoding="utf-8")


def test_it_names_every_file_of_the_examples_folder() -> None:
    files = {p.name for p in EXAMPLES.iterdir() if p.is_file()} - {"__init__.py", "README.md"}
    assert files, "examples/ has files"
    missing = sorted(f for f in files if f"`{f}`" not in TEXT)
    assert not missing, f"examples/README.md does not say what these are: {missing}"


def test_what_it_says_to_run_exists() -> None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    named = set(re.findall(r"`make ([\w-]+)[` ]", TEXT))
    assert named and named <= targets, named - targets
    for module, attr in re.findall(r"\b(examples\.\w+)(?::(\w+))?", TEXT):
        found = importlib.import_module(module)
        assert not attr or callable(getattr(found, attr)), f"{module}:{attr}"
    for link in re.findall(r"\]\(([^)#]+)", TEXT):
        assert (EXAMPLES / link).exists(), link


def test_its_command_blocks_serve_the_agent_they_start() -> None:
    found = [b for b in blocks(TEXT, lang="sh")]
    assert len(found) == 2 and all(b.run_by == "tests/unit/test_examples_readme.py" for b in found)
    for block in found:
        serve, start = block.commands()
        argv = shlex.split(serve)
        argv = argv[next(i for i, a in enumerate(argv) if a == "worker.py") + 1 :]
        args = worker.parse_args(argv)
        served = AgentRegistry.from_modules(args.agents.split(",")).names()
        if args.scripted_model is not None:
            module, _, attr = args.scripted_model.partition(":")
            assert callable(getattr(importlib.import_module(module), attr))
        ctl = shlex.split(start)
        assert ctl[:2] == [".venv/bin/agentctl", "start"] and ctl[2] in served, (ctl, served)
