"""`make demo` with a Python older than pyproject's requires-python stops before `.venv`
exists, saying which Python it found and how to pick another (PYTHON=...). Before, the
venv was made with it, uv's resolver refused the package, and the broken venv stayed:
`make demo PYTHON=python3.12` afterwards kept it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.doc_blocks import ROOT


def fake_python(folder: Path, version: tuple[int, int, int]) -> Path:
    """This interpreter, telling the command it runs (`-c CODE`) that it is `version`."""
    shown = ".".join(map(str, version))
    script = folder / f"python{shown}"
    prelude = f"import sys; sys.version_info = {version!r}; sys.version = '{shown} (fake)'"
    run = f'exec "{sys.executable}" -c "{prelude}; exec(sys.argv[1])" "$2"'
    script.write_text(f"#!/bin/sh\n{run}\n")
    script.chmod(0o755)
    return script


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_an_old_python_is_refused_before_a_venv_is_made(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    python = fake_python(tmp_path, (3, 10, 13))
    done = subprocess.run(
        ["make", "-C", str(ROOT), f"{venv}/.runtime-installed", f"VENV={venv}", f"PYTHON={python}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert (
        f"make: durable-agents needs Python 3.11 or newer, and {python} is 3.10.13: run make "
        "again with PYTHON=python3.12 (or another 3.11+)"
    ) in done.stderr
    assert not venv.exists()


def test_the_check_passes_the_python_that_runs_the_tests_and_is_pyprojects() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    [check] = [line for line in makefile.splitlines() if "needs Python 3.11 or newer" in line]
    assert 'requires-python = ">=3.11"' in (ROOT / "pyproject.toml").read_text()
    assert "sys.version_info < (3, 11)" in check
    code = check.split("-c '", 1)[1].rsplit("'", 1)[0].replace("$(PYTHON)", sys.executable)
    assert subprocess.run([sys.executable, "-c", code], timeout=30).returncode == 0
