"""Canonical JSON: the exact bytes a snapshot's integrity digest covers, and the digest.

Defined once, here, so that a service in any language can verify a snapshot
with an off-the-shelf RFC 8785 (JCS) implementation and SHA-256 / HMAC-SHA256.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from decimal import Decimal
from typing import Any

from pydantic import JsonValue

SHA256 = "sha256"
HMAC_SHA256 = "hmac-sha256"


def integrity_block(content: dict[str, JsonValue], key: bytes | None) -> dict[str, str]:
    """`{"algorithm", "digest"}` over the canonical JSON of `content`: a SHA-256,
    or with `key` an HMAC-SHA256. Raises ValueError for what is not JSON."""
    body = canonical_json(content)
    if key is None:
        return {"algorithm": SHA256, "digest": hashlib.sha256(body).hexdigest()}
    return {"algorithm": HMAC_SHA256, "digest": hmac.new(key, body, "sha256").hexdigest()}


def canonical_json(value: JsonValue) -> bytes:
    """The canonical UTF-8 bytes of a JSON value: what the integrity digest covers.

    RFC 8785 (JSON Canonicalization Scheme), so any language can verify a
    snapshot: no whitespace, object keys sorted by their UTF-16 code units,
    strings with only `"`, `\\` and control characters escaped (lowercase
    `\\u00xx` except `\\b \\t \\n \\f \\r`), floats in ECMAScript's shortest form
    (`60.0` -> `60`, `1e21` -> `1e+21`). One deliberate extension: integers
    outside the I-JSON safe range (|n| >= 2**53), which RFC 8785 implementations
    refuse or round to a double, are written exactly, digit for digit, so that
    an edit of a large integer cannot go unnoticed; within the range the output
    is byte for byte RFC 8785. Raises ValueError for what is not JSON (NaN,
    infinities, lone surrogates, other types).
    """
    parts: list[str] = []
    _write_canonical(value, parts)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"text is not valid Unicode ({err.reason})") from None


def _write_canonical(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif value is None or isinstance(value, bool):
        out.append("null" if value is None else "true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(_ecmascript_number(value))
    elif isinstance(value, dict):
        out.append("{")
        for i, key in enumerate(sorted(value, key=lambda k: k.encode("utf-16-be"))):
            out.append("," if i else "")
            out.append(json.dumps(key, ensure_ascii=False) + ":")
            _write_canonical(value[key], out)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for i, item in enumerate(value):
            out.append("," if i else "")
            _write_canonical(item, out)
        out.append("]")
    else:
        raise ValueError(f"{type(value).__name__} is not a JSON value")


def _ecmascript_number(x: float) -> str:
    """ECMAScript's Number::toString, from Python's shortest round-trip digits."""
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError(f"{x} is not a JSON number")
    if x == 0:
        return "0"
    _, digit_tuple, exponent = Decimal(repr(abs(x))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    k = len(digits)
    n = k + int(exponent) + (len(digit_tuple) - k)  # value = 0.digits * 10**n
    sign = "-" if x < 0 else ""
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = f"e{'+' if n > 0 else '-'}{abs(n - 1)}"
    return sign + digits[0] + ("." + digits[1:] if k > 1 else "") + e
