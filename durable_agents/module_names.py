"""Module names on the worker's command line (`--agents`, `--scripted-model`): a file path
there is the newcomer's first guess (tab completion offers `my_agents.py`), and Python's
own "No module named 'my_agents.py'; 'my_agents' is not a package" does not say what
to type instead. This does."""

from __future__ import annotations

from pathlib import Path, PurePath

NOT_FOUND_HINT = (
    "--agents takes importable module names: `python worker.py` imports those next to "
    "itself; for others, put their folder on PYTHONPATH"
)


def with_hint(message: str) -> str:
    """The registry's import error, with where modules are looked for when none was found."""
    return f"{message} ({NOT_FOUND_HINT})" if "No module named" in message else message


def file_path_problem(option: str, given: str, *, attr: str = "") -> str | None:
    """Why `given` is not a module name but a file path, with the value to pass instead
    (`attr`: the `:FUNCTION` that follows it, for `--scripted-model`); None for a name.
    A file inside packages (`examples/support_agent.py`) becomes the dotted name."""
    name = given.strip()
    if not (name.endswith(".py") or "/" in name or "\\" in name):
        return None
    path = PurePath(name.replace("\\", "/"))
    parts = [path.stem if path.suffix == ".py" else path.name]
    folder = path.parent
    while folder.name and Path(folder, "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    module = ".".join(parts)
    where = "" if folder.as_posix() in ("", ".") else f" with PYTHONPATH={folder.as_posix()}"
    return (
        f"{option} takes a module name, not a file path: {option} {module}{attr}{where} "
        f"(not {name}{attr})"
    )
