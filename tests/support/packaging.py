"""The release's files as a user gets them, for the packaging tests
(tests/integration/test_wheel.py, test_deploy.py): built from a clean clone of the
checkout's HEAD, so that nothing untracked (`.venv`, `site/`, `__pycache__`, a module
never committed) can slip into them or stand in for a file the package needs, and
read from outside, as lists of names."""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.doc_blocks import blocks, page

ROOT = Path(__file__).resolve().parents[2]
_PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION: str = _PROJECT["project"]["version"]
PACKAGE = "durable_agents"
DIST_INFO = f"{PACKAGE}-{VERSION}.dist-info"
SDIST_TOP = f"{PACKAGE}-{VERSION}"
FOLDERS: dict[str, str] = {
    folder: package.replace(".", "/")
    for package, folder in _PROJECT["tool"]["setuptools"]["package-dir"].items()
} | {PACKAGE: PACKAGE}
"""Repository folder -> its place in the installed package (pyproject `package-dir`)."""
WHEEL_METADATA = ("METADATA", "WHEEL", "RECORD", "entry_points.txt", "top_level.txt")
SDIST_METADATA = ("PKG-INFO", "setup.cfg", "README.md", "pyproject.toml")
EGG_INFO = (
    "PKG-INFO",
    "SOURCES.txt",
    "dependency_links.txt",
    "entry_points.txt",
    "requires.txt",
    "top_level.txt",
)
LICENSE_FILE = re.compile(r"(LICEN[CS]E|COPYING|NOTICE|AUTHORS)[^/]*")
"""Top-level files setuptools ships as license files (its `license-files` default)."""
NEVER = re.compile(
    r"(^|/)(tests|\.venv|site|\.bench-venvs|\.git|\.typecheck|\.temporal|__pycache__|secrets"
    r"|\.pytest_cache|\.ruff_cache|\.mypy_cache)/"
    r"|\.(pyc|pyo|pem|key|p12|pfx|crt|db|sqlite)$"
    r"|(^|/)(\.env(\.[^/]*)?|\.DS_Store|id_rsa[^/]*)$"
)
"""What no release file may hold: tests and their histories, venvs, the docs build,
caches, bytecode, secrets, keys and certificates, dev-server databases."""


def sh(
    argv: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> str:
    """A command's output; fails the test, with the output, on a non-zero exit."""
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv} exited {done.returncode}\n{done.stdout}{done.stderr}"
    return done.stdout


def clone_head(dest: Path) -> Path:
    """A clean clone of the checkout's HEAD commit at `dest`: what a release is built from.
    Uncommitted changes are not in it: commit what the package needs."""
    head = sh(["git", "rev-parse", "HEAD"], cwd=ROOT).strip()
    sh(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(dest)], cwd=dest.parent)
    sh(["git", "fetch", "--quiet", str(ROOT), head], cwd=dest)  # HEAD even if detached
    sh(["git", "checkout", "--quiet", "--detach", head], cwd=dest)
    assert sh(["git", "status", "--porcelain", "--ignored"], cwd=dest) == ""
    return dest


def tracked(clone: Path) -> list[str]:
    """The files git holds in `clone`."""
    return sh(["git", "ls-files", "-z"], cwd=clone).strip("\0").split("\0")


def shipped(clone: Path) -> dict[str, str]:
    """Tracked file of a package folder -> its path in the installed package."""
    found = {}
    for path in tracked(clone):
        folder, _, rest = path.partition("/")
        if folder in FOLDERS and rest:
            found[path] = f"{FOLDERS[folder]}/{rest}"
    return found


def licenses(clone: Path) -> list[str]:
    """The tracked license files of `clone` (none yet: the project has no license)."""
    return [path for path in tracked(clone) if LICENSE_FILE.fullmatch(path)]


def expected_wheel(clone: Path) -> set[str]:
    """The names a wheel built from `clone` must hold: every tracked file of the
    package's folders, in the package, and the wheel's own metadata and license files."""
    return {
        *shipped(clone).values(),
        *(f"{DIST_INFO}/{name}" for name in WHEEL_METADATA),
        *(f"{DIST_INFO}/licenses/{name}" for name in licenses(clone)),
    }


def expected_sdist(clone: Path) -> set[str]:
    """The files an sdist built from `clone` must hold: the package's folders as the
    repository lays them out, README and pyproject, and what setuptools adds."""
    return {
        *(f"{SDIST_TOP}/{path}" for path in shipped(clone)),
        *(f"{SDIST_TOP}/{name}" for name in (*SDIST_METADATA, *licenses(clone))),
        *(f"{SDIST_TOP}/{PACKAGE}.egg-info/{name}" for name in EGG_INFO),
    }


def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if not name.endswith("/")}


def wheel_contents(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def sdist_names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as archive:
        return {member.name for member in archive.getmembers() if member.isfile()}


def never_shipped(names: set[str]) -> list[str]:
    """The names of `names` that no release file may hold (`NEVER`)."""
    return sorted(name for name in names if NEVER.search(name))


def build(source: Path, out: Path, *only: str) -> list[Path]:
    """`python -m build --no-isolation` of `source` into `out`: the sdist, then the wheel
    built from that sdist (what pip does with an sdist from an index), or `--sdist` or
    `--wheel` alone. With this venv's setuptools: nothing downloads."""
    sh([sys.executable, "-m", "build", "--no-isolation", *only, "--outdir", str(out), str(source)],
       cwd=source.parent)  # fmt: skip
    return sorted(out.iterdir())


def built_once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """A folder that `make` fills once per test session: under pytest-xdist, the first
    process to ask builds it while the others wait, then all read it (builds are the
    slow part of the packaging tests). A failed `make` leaves nothing: the next one
    tries again."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        folder = factory.mktemp(name)
        make(folder)
        return folder
    session = factory.getbasetemp().parent  # pytest-N, shared by the session's workers
    folder = session / name
    with open(session / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".built").touch()
    return folder


def bare_env() -> dict[str, str]:
    """This environment without what would point a command at the checkout or a server."""
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TEMPORAL_"))}
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        bare.pop(name, None)
    return bare


def build_as_the_docs_say(base: Path) -> None:
    """docs/how-to/release-files.md's commands, run in `base`: a clean clone of HEAD, then
    the sdist and the wheel from it in `base`/dist."""
    [block] = blocks(page("how-to/release-files.md"), lang="sh")
    clone_line, build_line = block.commands()
    clone_argv = shlex.split(clone_line.replace("/path/to/durable-agents", str(ROOT)))
    assert clone_argv[:2] == ["git", "clone"] and clone_argv[-1] == "durable-agents-release"
    sh(clone_argv, cwd=base, env=bare_env())
    clone = base / clone_argv[-1]
    head = sh(["git", "rev-parse", "HEAD"], cwd=ROOT)
    assert sh(["git", "rev-parse", "HEAD"], cwd=clone) == head, "the clone is not HEAD"
    assert sh(["git", "status", "--porcelain", "--ignored"], cwd=clone) == ""
    build_argv = shlex.split(build_line)
    assert build_argv[:3] == ["python", "-m", "build"] and "--outdir" in build_argv
    assert build_argv[build_argv.index("--outdir") + 1] == "dist"
    sh([sys.executable, *build_argv[1:]], cwd=base, env=bare_env())


def release_files(factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The clean clone, the wheel built from the sdist, and the sdist, as
    docs/how-to/release-files.md builds them (once per test session)."""
    base = built_once(factory, "release", build_as_the_docs_say)
    files = sorted((base / "dist").iterdir())
    [wheel] = [f for f in files if f.suffix == ".whl"]
    [sdist] = [f for f in files if f.name.endswith(".tar.gz")]
    assert len(files) == 2, files
    return base / "durable-agents-release", wheel, sdist
