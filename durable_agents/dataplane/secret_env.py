"""Secrets from the environment or from a file: `NAME`, or `NAME_FILE` naming a file
that holds the value, the convention of Docker's official images.

A value in an environment variable shows in `docker inspect`, in the orchestrator's
API and in `/proc/PID/environ`; a file mounted from a secret store (compose
`secrets:` under /run/secrets, a Kubernetes Secret volume) only to whoever may read
that file. `OPENAI_API_KEY`, `AGENT_CODEC_SERVER_TOKEN` and `AGENT_SNAPSHOT_KEY`
are read here (`AGENT_CODEC_KEYS_FILE` is the codec's own, `dataplane.codec`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass

from durable_agents.dataplane.errors import DataPlaneError

FILE_SUFFIX = "_FILE"
MAX_FILE_BYTES = 64 * 1024
"""A secret file larger than this is refused: the path points at something else."""


class SecretEnvError(DataPlaneError):
    """A secret set both ways, or a secret file that is unreadable, empty or not text.
    Messages name the variables and the file, never the value."""


@dataclass(frozen=True)
class EnvSecret:
    """A secret and where it came from."""

    value: str
    """The secret: the variable's value, or the file's text less one trailing newline."""
    source: str
    """For messages: `NAME`, or `NAME (file PATH)`. Never the value."""


def secret_from_env(
    name: str, *, env: Mapping[str, str] | None = None, empty_file_ok: bool = False
) -> EnvSecret | None:
    """The secret `name` from `$name` or from the file `$name_FILE` names; None if
    neither is set (an empty variable counts as unset).

    `empty_file_ok`: an empty file counts as unset too, instead of an error (for a
    secret that is optional, where compose must mount a file either way).
    Raises `SecretEnvError` if both are set, or the file cannot be read, is not a
    regular file, is larger than `MAX_FILE_BYTES`, is not UTF-8 or (unless
    `empty_file_ok`) is empty.
    """
    env = os.environ if env is None else env
    file_env = name + FILE_SUFFIX
    inline = env.get(name, "")
    path = env.get(file_env, "").strip()
    if inline and path:
        raise SecretEnvError(f"set {name} or {file_env}, not both")
    if not path:
        return EnvSecret(value=inline, source=name) if inline else None
    text = _read(file_env, path)
    if text.endswith("\r\n"):
        text = text[:-2]
    elif text.endswith("\n"):
        text = text[:-1]
    if not text:
        if empty_file_ok:
            return None
        raise SecretEnvError(f"{file_env}: {path} is empty")
    return EnvSecret(value=text, source=f"{name} (file {path})")


def _read(file_env: str, path: str) -> str:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device would block or never end
            raise SecretEnvError(f"{file_env}: {path} is not a regular file")
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise SecretEnvError(f"{file_env}: cannot read {path}: {err.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise SecretEnvError(f"{file_env}: {path} is larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SecretEnvError(f"{file_env}: {path} is not UTF-8 text") from None
