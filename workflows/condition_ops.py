"""How a data condition (`ApprovalCondition`) compares a call's argument with its value.

Strings are compared as people mean them, not as they are spelt: both sides are put in
Unicode NFKC form and case-folded ("Oakland", "OAKLAND" and its full-width form are one
city). `contains` finds a value within a string (or an element in a list); `matches`
is a glob (`*`, `?`, `[...]`) over the whole string. Pure and bounded: fine inside
workflow code.

Which way a doubt goes depends on what holding grants. A `when` condition asks for a
person: it holds if it holds on the text as written *or* as normalised
(`holds_either`). A `limits`, `always_when` or `auto_approve_within` condition lets a
call through: it holds only if it holds both ways (`holds_both`). So normalising never
lets a call through that the raw text would have stopped, nor the reverse.

Globs: `fnmatch.translate` turns a pattern into a regular expression whose wildcards
cannot backtrack catastrophically (CPython since 3.9, bpo-40480); patterns are also
bounded (`MAX_PATTERN` characters, at definition) and so is the text matched
(`MAX_MATCHED`: a longer value is taken as matching for `when`, not for a limit).
Regular expressions are not offered: a safe subset is hard to promise.
"""

from __future__ import annotations

import fnmatch
import functools
import operator
import re
import unicodedata
from collections.abc import Callable
from typing import Any

MAX_PATTERN = 200
"""Characters of a `matches` pattern."""
MAX_MATCHED = 100_000
"""Characters of a value a pattern is matched against; a longer one cannot be judged."""


class CannotJudge(Exception):
    """The comparison cannot be made (a value too long to match)."""


def normal(value: Any) -> Any:
    """`value` with every string in it (list elements too) NFKC-normalised and
    case-folded."""
    if isinstance(value, str):
        return unicodedata.normalize("NFKC", value).casefold()
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def _contains(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return b in a
    if isinstance(a, list):
        return b in a
    raise TypeError("contains needs a string or a list")


@functools.lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern), re.DOTALL)


def _matches(a: Any, b: Any) -> bool:
    if not isinstance(a, str) or not isinstance(b, str):
        raise TypeError("matches needs a string and a pattern")
    if len(a) > MAX_MATCHED:
        raise CannotJudge(f"value longer than {MAX_MATCHED} characters")
    return _glob(b).match(a) is not None


COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "in": lambda a, b: a in b,
    "not_in": lambda a, b: a not in b,
    "contains": _contains,
    "not_contains": lambda a, b: not _contains(a, b),
    "matches": _matches,
}


def _both_ways(op: str, value: Any, expected: Any) -> tuple[bool, bool]:
    """(as written, as normalised); TypeError or CannotJudge if it cannot be made."""
    compare = COMPARE[op]
    return bool(compare(value, expected)), bool(compare(normal(value), normal(expected)))


def holds_either(op: str, value: Any, expected: Any) -> bool:
    """True if it holds as written or as normalised; raises if it cannot be judged."""
    return any(_both_ways(op, value, expected))


def holds_both(op: str, value: Any, expected: Any) -> bool:
    """True if it holds as written and as normalised; raises if it cannot be judged."""
    return all(_both_ways(op, value, expected))


def pattern_problem(op: str, expected: Any) -> str | None:
    """Why a condition's value cannot be used with `op` (checked at definition)."""
    if op == "matches":
        if not isinstance(expected, str):
            return "a `matches` value is a glob pattern (a string)"
        if len(expected) > MAX_PATTERN:
            return f"a `matches` pattern has at most {MAX_PATTERN} characters"
    return None
