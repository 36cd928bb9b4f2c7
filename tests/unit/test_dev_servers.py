"""Tests' dev servers are started again when one did not come up, and only then."""

import pytest

from tests.support.dev_servers import FAILED_START, started


class Starts:
    """A start that fails with each of `errors` in turn, then returns "server"."""

    def __init__(self, *errors: Exception):
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "server"


def did_not_start() -> RuntimeError:
    return RuntimeError(f"{FAILED_START}: ephemeral server at 127.0.0.1:1 did not start in 30s")


async def test_a_server_that_did_not_come_up_is_started_again(capsys):
    start = Starts(did_not_start(), did_not_start())
    assert (await started(start, starts=3), start.calls) == ("server", 3)
    assert capsys.readouterr().err.count("dev server start") == 2


async def test_the_last_failure_is_raised_after_the_allowed_starts():
    start = Starts(did_not_start(), did_not_start(), did_not_start())
    with pytest.raises(RuntimeError, match=FAILED_START):
        await started(start, starts=2)
    assert start.calls == 2


@pytest.mark.parametrize("error", [RuntimeError("something else"), ValueError(FAILED_START)])
async def test_any_other_error_is_raised_at_once(error):
    start = Starts(error)
    with pytest.raises(type(error)):
        await started(start)
    assert start.calls == 1
