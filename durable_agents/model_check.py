"""What the worker says about its model endpoint when it starts, and how it logs a
failed model attempt.

A wrong `OPENAI_BASE_URL` or key used to show only as a run sitting at `running ·
turn 0` and a log of tracebacks. So the worker asks the endpoint once at start,
`GET /models` (no tokens spent), and says in one line whether it answers, cannot be
reached, or refuses the key. It serves either way: an outage of the model API must
not stop a worker (runs retry their model calls until it is back).

The SDK logs each failed activity attempt at WARNING with its traceback (chained
httpx and openai errors: about 100 lines for a refused connection). `OneLineFailures`
keeps it to one line with the error's own message, unless the log level is DEBUG.
"""

from __future__ import annotations

import logging
import urllib.parse

import openai
from openai import AsyncOpenAI

CHECK_SECONDS = 10.0
"""How long the check waits for the endpoint's answer."""
MAX_ERROR_CHARS = 500


def _where(client: AsyncOpenAI) -> str:
    url = urllib.parse.urlsplit(str(client.base_url))
    host = url.netloc.rpartition("@")[2]  # never print credentials in the URL
    return urllib.parse.urlunsplit((url.scheme, host, url.path, "", "")).rstrip("/")


def _one_line(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


async def check_endpoint(client: AsyncOpenAI, *, timeout: float = CHECK_SECONDS) -> str:
    """One line on the model endpoint of `client`, from one `GET /models` request:
    `worker: model endpoint ... answers`, or a `worker: warning: ...` saying it cannot
    be reached or refuses the key. Never raises."""
    where = _where(client)
    try:
        await client.with_options(timeout=timeout, max_retries=0).models.list()
    except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
        return (
            f"worker: warning: model endpoint {where} refuses the key (HTTP "
            f"{err.status_code}: {_one_line(_message(err))}): model calls fail until "
            "OPENAI_API_KEY (or OPENAI_API_KEY_FILE) is right; serving anyway"
        )
    except openai.APIConnectionError as err:
        cause = err.__cause__ or err
        return (
            f"worker: warning: model endpoint {where} cannot be reached "
            f"({_one_line(str(cause) or type(cause).__name__)}): runs retry their model "
            "calls until it can; check OPENAI_BASE_URL; serving anyway"
        )
    except openai.APIStatusError as err:  # e.g. 404: an endpoint that lists no models
        return (
            f"worker: model endpoint {where} answers (GET /models: HTTP {err.status_code}; "
            "the key is not checked)"
        )
    except Exception as err:  # whatever else: say it, and serve
        return f"worker: warning: model endpoint {where} not checked: {_one_line(str(err))}"
    return f"worker: model endpoint {where} answers and takes the key"


def _message(err: openai.APIStatusError) -> str:
    body = err.body
    said = body.get("message") if isinstance(body, dict) else None
    return said if isinstance(said, str) else err.message


class OneLineFailures(logging.Filter):
    """Turns the SDK's `Completing activity as failed` records (and any other record
    with an exception) into one line: the message, then the error's type and text;
    the traceback is dropped. Put on the stderr handler when the level is not DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            err = record.exc_info[1]
            text = _one_line(str(err)) or type(err).__name__
            record.msg = f"{record.getMessage()}: {type(err).__name__}: {text}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True
