"""Data conditions cannot fail open by spelling: strings compare as written and
NFKC-normalised and case-folded, `contains` and `matches` (globs) included, each way
in the direction that keeps a call from running unasked."""

from __future__ import annotations

import time

import pytest
from durable_agents.workflows.agent_spec import ApprovalCondition, ApprovalPolicy
from durable_agents.workflows.approval_policy import condition_holds, requires_decision
from durable_agents.workflows.condition_ops import MAX_MATCHED, MAX_PATTERN
from pydantic import ValidationError

WIDE = "".join(chr(ord(c) + 0xFEE0) for c in "Oakland")
"""Oakland in full-width letters (U+FF2F ...), as some keyboards type it."""
OAKLAND_SPELLINGS = ["Oakland", "oakland", "OAKLAND", WIDE]


def asks(op: str, value: object, argument: object) -> bool:
    policy = ApprovalPolicy(when=[ApprovalCondition(field="city", op=op, value=value)])
    return requires_decision(policy, {"city": argument})


@pytest.mark.parametrize("spelling", OAKLAND_SPELLINGS)
def test_equality_asks_for_every_case_and_width_of_the_name(spelling):
    assert asks("==", "Oakland", spelling)
    assert asks("in", ["Oakland", "Berkeley"], spelling)


def test_case_folding_covers_more_than_ascii():
    assert asks("==", "STRASSE", "straße")  # casefold, not lower
    assert asks("==", "ﬁle", "FILE")  # NFKC: the ligature is two letters


def test_contains_finds_the_name_within_any_spelling_of_the_city():
    wide_ca = WIDE + " " + "".join(chr(ord(c) + 0xFEE0) for c in "CA")
    for city in ["Oakland, USA", "oakland, ca", "Port of OAKLAND", wide_ca]:
        assert asks("contains", "Oakland", city), city
    assert not asks("contains", "Oakland", "Paris")
    assert asks("contains", "vip", ["basic", "VIP"])  # an element of a list


def test_a_glob_matches_the_whole_string_normalised():
    assert asks("matches", "oak*", "OAKLAND, USA")
    assert asks("matches", "*@example.com", "Ann@EXAMPLE.com")
    assert not asks("matches", "oak*", "Paris")
    assert not asks("matches", "oak", "oakland")  # whole string: no implicit `*`


def test_not_equal_in_when_asks_on_either_reading():
    # "us" is not "US" as written: a person is asked (the doubt goes to asking)
    assert asks("!=", "US", "us")


def test_a_limit_holds_only_if_it_holds_both_as_written_and_normalised():
    blocked = ApprovalCondition(field="country", op="!=", value="KP")
    assert condition_holds(blocked, {"country": "FR"})
    assert not condition_holds(blocked, {"country": "kp"})  # normalised, it is KP
    listed = ApprovalCondition(field="currency", op="in", value=["EUR"])
    assert not condition_holds(listed, {"currency": "eur"})  # as written, not listed


def test_a_pattern_is_refused_at_definition_when_too_long_or_not_a_string():
    with pytest.raises(ValidationError, match="at most"):
        ApprovalCondition(field="f", op="matches", value="*" * (MAX_PATTERN + 1))
    with pytest.raises(ValidationError, match="glob pattern"):
        ApprovalCondition(field="f", op="matches", value=3)


def test_a_hostile_pattern_and_value_stay_bounded():
    """Hostile: a pattern built to backtrack over a value built to make it: fnmatch's
    translation does not backtrack, and a value past MAX_MATCHED is not matched at all
    (a `when` holds: a person is asked; a limit does not: the call does not run)."""
    pattern = "*a*a*a*a*a*a*a*a*a*a*a*a*b"
    started = time.process_time()
    assert not asks("matches", pattern, "a" * 5_000)
    assert time.process_time() - started < 2  # exponential would be hours
    huge = "a" * (MAX_MATCHED + 1)
    assert asks("matches", "x*", huge)
    limit = ApprovalCondition(field="city", op="matches", value="a*")
    assert not condition_holds(limit, {"city": huge})


def test_a_type_that_cannot_be_compared_asks_a_person():
    assert asks("contains", "Oakland", 12)
    assert asks("matches", "oak*", {"name": "Oakland"})
