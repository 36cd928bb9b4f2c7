"""A worker's JSON configuration files, named by environment variables
(`AGENT_MCP_SERVERS=FILE`, `AGENT_WEBHOOKS=FILE`): read once, with errors that say
which variable and file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path


def json_file(env: Mapping[str, str], variable: str) -> object | None:
    """The JSON document in the file `$variable` names; None when it is unset. Raises
    ValueError (`VARIABLE: why`) when the file cannot be read or is not JSON."""
    path = env.get(variable, "").strip()
    if not path:
        return None
    try:
        document: object = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise ValueError(f"{variable}: cannot read {path}: {err.strerror or err}") from None
    except ValueError as err:
        raise ValueError(f"{variable}: {path} is not JSON: {err}") from None
    return document
