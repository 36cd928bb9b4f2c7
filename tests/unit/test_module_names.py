"""durable_agents/module_names.py: a file path where the worker wants a module name gets
the name to type instead (the worker's own lines: tests/integration/test_worker.py)."""

from __future__ import annotations

import pytest

from durable_agents import module_names, worker


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("my_agents.py", "--agents my_agents (not my_agents.py)"),
        ("./my_agents.py", "--agents my_agents (not ./my_agents.py)"),
        ("examples/support_agent.py", "--agents examples.support_agent (not examples/"),
        ("src\\app\\agents.py", "--agents agents with PYTHONPATH=src/app (not src"),
        ("/srv/app/", "--agents app with PYTHONPATH=/srv (not /srv/app/)"),
    ],
)
def test_a_file_path_is_refused_with_the_module_name_to_pass(given: str, said: str) -> None:
    problem = module_names.file_path_problem("--agents", given)
    assert problem is not None and said in problem, problem


@pytest.mark.parametrize("given", ["my_agents", "examples.support_agent", "pkg.mod_py"])
def test_a_module_name_passes(given: str) -> None:
    assert module_names.file_path_problem("--agents", given) is None


def test_the_help_says_the_whole_first_paragraph(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        worker.parse_args(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "(installed: `durable-agents-worker`), a thin command over `AgentsPlugin`." in shown


def test_a_module_not_found_says_where_modules_are_looked_for() -> None:
    said = module_names.with_hint("cannot import agent module 'nope': No module named 'nope'")
    assert said.endswith(
        "(--agents takes importable module names: `python worker.py` "
        "imports those next to itself; for others, put their folder on "
        "PYTHONPATH)"
    )
    other = "module 'm' defines no Agent"
    assert module_names.with_hint(other) == other
