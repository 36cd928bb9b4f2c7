"""How a call's arguments are shown to people: every argument in full, long values
folded, sensitive ones masked. Pure; used by the UI's details, activity summaries
and `agentctl`, so a value is hidden (or shown) the same way everywhere.

A tool marks parameters sensitive (`ToolSpec.sensitive`): their values are shown
as `<sensitive, 19 chars>` unless a person asks to see them (`agentctl
--show-sensitive`). Arguments that are not a JSON object cannot be masked field by
field: for a tool with sensitive parameters they are hidden whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection

from durable_agents.workflows.proposed_calls import parse_arguments

FOLD = 100
"""Characters of an argument value per line; longer values continue on the next."""


def value_text(value: object) -> str:
    """A value as a person reads it: a string as is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def masked(value: object) -> str:
    """What stands in for a sensitive value: its kind of secret, and its length."""
    return f"<sensitive, {len(value_text(value)):,} chars>"


def as_object(arguments_json: str) -> dict[str, object] | None:
    """The arguments as a JSON object, or None if they are not one."""
    try:
        parsed = parse_arguments(arguments_json, finite=False)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def named_values(
    arguments_json: str, sensitive: Collection[str], *, reveal: bool = False
) -> list[tuple[str, str]] | str:
    """Each argument's name and shown value (sensitive ones masked unless `reveal`),
    or, for arguments that are not a JSON object, the text to show instead."""
    arguments = as_object(arguments_json)
    if arguments is None:
        if sensitive and not reveal:
            return (
                f"<{len(arguments_json):,} chars, not a JSON object: hidden, the tool has "
                "sensitive parameters>"
            )
        return arguments_json
    return [
        (name, masked(value) if name in sensitive and not reveal else value_text(value))
        for name, value in arguments.items()
    ]


def redacted(arguments_json: str, sensitive: Collection[str]) -> str:
    """The arguments as JSON text with sensitive values masked (unchanged if the tool
    has none): for one-line summaries."""
    if not sensitive:
        return arguments_json
    shown = named_values(arguments_json, sensitive)
    if isinstance(shown, str):
        return json.dumps(shown, ensure_ascii=False)
    arguments = as_object(arguments_json) or {}
    return json.dumps(
        {n: masked(v) if n in sensitive else v for n, v in arguments.items()},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def fold(text: str, width: int = FOLD) -> list[str]:
    """`text` in pieces of at most `width` characters (one empty piece for "")."""
    return [text[i : i + width] for i in range(0, len(text), width)] or [""]


_INVISIBLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\U000e0000-\U000e007f"
    "\ud800-\udfff]"  # and lone surrogates: no character, and no UTF-8 holds them
)


def safe(text: str) -> str:
    """`text` with control, bidi and zero-width characters shown as `\\u{1b}`: a
    value can neither move the cursor, hide the rest of a line, nor reorder it."""
    return _INVISIBLE.sub(lambda m: f"\\u{{{ord(m.group()):x}}}", text)


def safe_lines(text: str) -> str:
    """`safe`, its line breaks kept: for text meant to read as lines (an answer)."""
    return "\n".join(safe(line) for line in text.split("\n"))
