"""A real local HTTP server that speaks OpenAI's Chat Completions and Responses APIs,
scripted.

Tests, the offline demo and manual tries point the official `openai` client at
it (`base_url=server.base_url`); the client talks real HTTP, nothing is mocked.
Each request to `POST /v1/chat/completions` or `POST /v1/responses`
(non-streaming; also under a path prefix, `/NAME/v1/...`, to tell clients apart)
is answered by the next scripted step, else by the responder, else with a loud
HTTP 500. The same steps answer either API, in its own shape.

With `context_window=N`, a request estimated (`request_tokens`) past N tokens is
refused as OpenAI refuses one: HTTP 400, code `context_length_exceeded`.

The Responses endpoint is stateless, as OpenAI's is with `store=False`: it keeps
no response (a `previous_response_id` is refused), and a reasoning item sent back
must be one it issued, with its encrypted content unchanged and followed by the
item that came after it.

A step is one of:

- `Reply`: a normal completion (text and/or tool calls, usage, optional delay);
- `Fault`: an HTTP error with OpenAI's error JSON and optional headers
  (`retry-after`, ...);
- `Hang`: wait `seconds`, then close the connection without answering
  (a client with a shorter timeout sees a timeout, otherwise a dropped
  connection);
- `Raw`: send `body` verbatim with `status` (an unusable or malformed reply).

Run `python -m durable_agents.testing --port 8000` for an echo model.
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Call",
    "Fault",
    "Hang",
    "Raw",
    "Reply",
    "Responder",
    "ScriptedModelServer",
    "Step",
    "echo_responder",
    "main",
    "request_tokens",
]

COMPLETIONS_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
ENDPOINTS = {COMPLETIONS_PATH: "chat_completions", RESPONSES_PATH: "responses"}
MODELS_PATH = "/v1/models"
SCRIPTED_MODEL = "scripted"
"""The one model `GET /models` lists (a scripted reply answers whatever model is asked)."""
EXHAUSTED = "scripted model: script exhausted"


@dataclass(frozen=True)
class Call:
    """One tool call in a scripted reply."""

    tool: str
    arguments: dict[str, Any] | str
    """A dict is sent as JSON; a str is sent verbatim (to simulate malformed JSON)."""
    call_id: str | None = None
    """None: the server makes one up (`call_<n>`, unique per server)."""


@dataclass(frozen=True)
class Reply:
    """A successful completion."""

    content: str | None = None
    tool_calls: tuple[Call, ...] = ()
    usage: tuple[int, int] = (10, 5)
    """(prompt_tokens, completion_tokens); total is their sum."""
    cached_tokens: int = 0
    """Of the prompt tokens, those from the prompt cache (`prompt_tokens_details`)."""
    reasoning_tokens: int = 0
    """Of the completion tokens, those spent reasoning (`completion_tokens_details`)."""
    reasoning: tuple[str, ...] = ()
    """Responses API only: one reasoning item per entry (the entry its summary), with
    encrypted content the server checks when it comes back."""
    delay_seconds: float = 0.0
    """Wait this long before answering (latency tests)."""
    finish_reason: str | None = None
    """Chat Completions: the choice's `finish_reason` (default: `tool_calls` or `stop`)."""
    chunk_chars: int = 4
    """Streamed (`"stream": true`): the text and each call's arguments in pieces of
    this many characters, one chunk (or event) each."""
    chunk_delay_seconds: float = 0.0
    """Streamed: wait this long before each piece."""
    cut_after_chunks: int | None = None
    """Streamed: drop the connection after this many chunks (a stream that breaks off)."""
    hold_after_pieces: int | None = None
    """Streamed: after this many pieces, wait until `release` is set (at most 60 s), so a
    test can see what arrived while the model was still writing."""
    release: threading.Event | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Fault:
    """An HTTP error answered with OpenAI's error JSON."""

    status: int
    message: str = "injected fault"
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra response headers, e.g. {"retry-after": "1"}."""


@dataclass(frozen=True)
class Hang:
    """Wait `seconds`, then drop the connection without any response."""

    seconds: float


@dataclass(frozen=True)
class Raw:
    """Send `body` as is (a dict as JSON, a str verbatim) with `status`."""

    body: dict[str, Any] | str
    status: int = 200
    content_type: str = "application/json"
    cut_at: int | None = None
    """Send only this many bytes of the body (its full length announced), then close:
    a reply cut off on the way."""


Step = Reply | Fault | Hang | Raw
Responder = Callable[[dict], Step]
"""Given the parsed JSON request body, decide the answer."""


class ScriptedModelServer:
    """An OpenAI-compatible endpoint on a daemon thread, answering scripted steps.

    Thread-safe: the test thread scripts and inspects while handler threads answer.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        context_window: int | None = None,
        api_key: str | None = None,
    ) -> None:
        self.responder = responder
        self.api_key = api_key
        """Requests bearing another key are refused with HTTP 401, as a real API
        refuses a wrong key (None: any key, or none, is taken)."""
        self.model_listings = 0
        """`GET /models` requests answered (a worker's check at start: no tokens)."""
        """Answers when the script is empty (None: answer HTTP 500 `EXHAUSTED`)."""
        self.context_window = context_window
        """Requests estimated past this many tokens are refused (None: no limit)."""
        self.sizes: list[int] = []
        """The estimated tokens (`request_tokens`) of every request answered, in order."""
        self.requests: list[dict] = []
        """Every chat-completions request body received (parsed), in order."""
        self.headers: list[dict[str, str]] = []
        """The HTTP headers of each of those requests (names lower-cased), in order."""
        self.errors: list[str] = []
        """Problems on the server side (script exhausted, responder raised, ...)."""
        self.routes: list[str] = []
        """The path before `/v1/chat/completions` of each request, in order: a client
        whose base URL is `.../NAME/v1` is told apart by it ("" for the plain one)."""
        self.endpoints: list[str] = []
        """The API of each request, in order: "chat_completions" or "responses"."""
        self.streamed: list[tuple[float, str]] = []
        """Each streamed piece of text or arguments, with when it was sent
        (`time.monotonic()`), in order."""
        self.in_flight = 0
        """Requests being answered right now."""
        self.max_in_flight = 0
        """The most requests answered at once so far."""
        self._host = host
        self._port = port
        self._steps: deque[Step] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._completion_ids = itertools.count(1)
        self._reasoning_ids = itertools.count(1)
        self._issued: dict[str, str] = {}
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------

    def start(self) -> ScriptedModelServer:
        """Bind (port 0: any free port) and serve on a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("scripted model server already started")
        self._stopping.clear()
        httpd = _HTTPServer((self._host, self._port), _Handler)
        httpd.model = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket; delayed or hanging answers end at once."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """The URL to give `openai.OpenAI(base_url=...)`, e.g. http://127.0.0.1:5123/v1."""
        if self._httpd is None:
            raise RuntimeError("scripted model server not started")
        return f"http://{self._host}:{self._httpd.server_address[1]}/v1"

    # --- scripting -------------------------------------------------------------

    def script(self, *steps: Step) -> None:
        """Append steps to the FIFO; each request consumes one."""
        with self._lock:
            self._steps.extend(steps)

    def remaining(self) -> int:
        """Scripted steps not consumed yet."""
        with self._lock:
            return len(self._steps)

    # --- used by the handler threads -------------------------------------------

    def _record_and_pick(
        self,
        body: dict,
        route: str = "",
        headers: Mapping[str, str] | None = None,
        endpoint: str = "chat_completions",
    ) -> Step:
        with self._lock:
            self.endpoints.append(endpoint)
            self.requests.append(body)
            self.headers.append({k.lower(): v for k, v in (headers or {}).items()})
            self.routes.append(route)
            step = self._steps.popleft() if self._steps else None
        if step is not None:
            return step
        if self.responder is None:
            return self._failure(EXHAUSTED)
        try:
            return self.responder(body)
        except Exception as err:
            return self._failure(f"scripted model: responder raised {err!r}")

    def _failure(self, message: str) -> Fault:
        with self._lock:
            self.errors.append(message)
        return Fault(500, message)

    def _next_call_id(self) -> str:
        with self._lock:
            return f"call_{next(self._ids)}"

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _completion(self, body: dict, reply: Reply) -> dict:
        calls = [
            {
                "id": c.call_id or self._next_call_id(),
                "type": "function",
                "function": {
                    "name": c.tool,
                    "arguments": c.arguments
                    if isinstance(c.arguments, str)
                    else json.dumps(c.arguments),
                },
            }
            for c in reply.tool_calls
        ]
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if calls:
            message["tool_calls"] = calls
        prompt, completion = reply.usage
        return {
            "id": f"chatcmpl-scripted-{next(self._completion_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model", "scripted")),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": reply.finish_reason or ("tool_calls" if calls else "stop"),
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
                "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
            },
        }

    def _response(self, body: dict, reply: Reply) -> dict:
        """`reply` as a Responses API object (reasoning, message, function calls)."""
        output: list[dict[str, Any]] = []
        for summary in reply.reasoning:
            with self._lock:
                item_id = f"rs_scripted_{next(self._reasoning_ids)}"
                sealed = f"sealed:{item_id}:{json.dumps(summary)}"
                self._issued[item_id] = sealed
            output.append(
                {
                    "id": item_id,
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": summary}],
                    "encrypted_content": sealed,
                }
            )
        number = next(self._completion_ids)
        if reply.content is not None:
            output.append(
                {
                    "id": f"msg_scripted_{number}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
                }
            )
        for call in reply.tool_calls:
            call_id = call.call_id or self._next_call_id()
            arguments = call.arguments
            output.append(
                {
                    "id": f"fc_{call_id}",
                    "type": "function_call",
                    "call_id": call_id,
                    "name": call.tool,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    "status": "completed",
                }
            )
        prompt, completion = reply.usage
        return {
            "id": f"resp_scripted_{number}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": str(body.get("model", "scripted")),
            "output": output,
            "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "store": bool(body.get("store", True)),
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "metadata": body.get("metadata") or {},
            "temperature": body.get("temperature"),
            "top_p": body.get("top_p"),
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": reply.cached_tokens},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
                "total_tokens": prompt + completion,
            },
        }

    def input_problem(self, body: dict) -> str | None:
        """Why OpenAI would refuse a stateless Responses request's `input`, or None."""
        if body.get("previous_response_id") is not None:
            return (
                f"Previous response with id '{body['previous_response_id']}' not found "
                "(this server stores no response)."
            )
        items = body.get("input")
        if isinstance(items, str):
            return None
        if not isinstance(items, list):
            return "input: a string or a list of items is expected"
        for index, item in enumerate(items):
            if not isinstance(item, dict) or item.get("type") != "reasoning":
                continue
            item_id = item.get("id")
            with self._lock:
                issued = self._issued.get(item_id) if isinstance(item_id, str) else None
            if issued is None:
                return (
                    f"Item with id '{item_id}' not found. Items are not persisted when "
                    "`store` is set to false."
                )
            if item.get("encrypted_content") != issued:
                return f"The encrypted content for item {item_id} could not be verified."
            after = next((i for i in items[index + 1 :] if not _is_reasoning(i)), None)
            if not _is_model_output(after):
                return (
                    f"Item '{item_id}' of type 'reasoning' was provided without its "
                    "required following item."
                )
        return None


def _is_reasoning(item: object) -> bool:
    return isinstance(item, dict) and item.get("type") == "reasoning"


def _is_model_output(item: object) -> bool:
    """An assistant message or a function call: what reasoning is followed by."""
    return isinstance(item, dict) and (
        item.get("type") == "function_call" or item.get("role") == "assistant"
    )


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    model: ScriptedModelServer

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that went away (timeout, hang) is expected: stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    # HTTP/1.0: one request per connection, so no idle keep-alive threads linger.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        """No per-request logging to stderr."""

    def do_GET(self) -> None:
        if not self.path.split("?")[0].endswith(MODELS_PATH):
            self._send_error(404, f"no route for GET {self.path}", "not_found")
            return
        if self._refused_key():
            return
        model = self.server.model
        with model._lock:
            model.model_listings += 1
        listed = {"object": "list", "data": [{"id": SCRIPTED_MODEL, "object": "model"}]}
        self._send_json(200, listed)

    def _refused_key(self) -> bool:
        """Answer 401 when the server wants a key and the request bears another."""
        wanted = self.server.model.api_key
        if wanted is None or self.headers.get("authorization") == f"Bearer {wanted}":
            return False
        self._send_error(401, "Incorrect API key provided", "invalid_api_key")
        return True

    def do_POST(self) -> None:
        model = self.server.model
        if self._refused_key():
            return
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        path = self.path.split("?")[0]
        suffix = next((p for p in ENDPOINTS if path.endswith(p)), None)
        if suffix is None:
            self._send_error(404, f"no route for POST {self.path}", "not_found")
            return
        with model._lock:
            model.in_flight += 1
            model.max_in_flight = max(model.max_in_flight, model.in_flight)
        try:
            self._answer(model, raw, path.removesuffix(suffix), ENDPOINTS[suffix])
        finally:
            with model._lock:
                model.in_flight -= 1

    def _answer(self, model: ScriptedModelServer, raw: bytes, route: str, endpoint: str) -> None:
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as err:
            self._send_error(400, f"malformed JSON body: {err}", "invalid_json")
            return
        responses = endpoint == "responses"
        size = request_tokens(body)
        window = model.context_window
        if window is not None and size > window:
            message = (
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {size} tokens. Please reduce the length of the messages."
            )
            model._failure(f"scripted model: {message}")
            self._send_error(400, message, "context_length_exceeded")
            return
        with model._lock:
            model.sizes.append(size)
        problem = (
            text_format_problem(body.get("text")) or model.input_problem(body)
            if responses
            else response_format_problem(body.get("response_format"))
        )
        if problem is not None:  # as OpenAI answers a request it cannot take
            model._failure(f"scripted model: {problem}")
            self._send_error(400, problem, "invalid_request")
            return
        step = model._record_and_pick(body, route, dict(self.headers.items()), endpoint)
        if isinstance(step, Reply):
            model._sleep(step.delay_seconds)
            answer = model._response if responses else model._completion
            if body.get("stream"):
                full = answer(body, step)
                events = _response_events(full, step) if responses else _chunks(body, full, step)
                self._send_stream(model, events, step, named=responses)
            else:
                self._send_json(200, answer(body, step))
        elif isinstance(step, Fault):
            self._send_error(step.status, step.message, None, step.headers)
        elif isinstance(step, Hang):
            model._sleep(step.seconds)
            self.close_connection = True
        else:
            self._send_json(step.status, step.body, content_type=step.content_type, cut=step.cut_at)

    def _send_stream(
        self,
        model: ScriptedModelServer,
        events: Iterator[tuple[dict, str]],
        step: Reply,
        *,
        named: bool,
    ) -> None:
        """Server-sent events, as OpenAI streams (`event:` lines for the Responses API,
        `data: [DONE]` last for Chat Completions); each piece of text is recorded with
        when it left."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        pieces = 0
        for sent, (event, piece) in enumerate(events):
            if step.cut_after_chunks is not None and sent >= step.cut_after_chunks:
                self.close_connection = True
                return
            if piece and pieces == step.hold_after_pieces and step.release is not None:
                step.release.wait(60)
            if piece:
                pieces += 1
                model._sleep(step.chunk_delay_seconds)
            head = f"event: {event['type']}\n" if named else ""
            self.wfile.write(f"{head}data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
            if piece:
                with model._lock:
                    model.streamed.append((time.monotonic(), piece))
        if not named:
            self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True

    def _send_error(
        self,
        status: int,
        message: str,
        code: str | None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        kind = "invalid_request_error" if 400 <= status < 500 else "server_error"
        error = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        self._send_json(status, error, headers)

    def _send_json(
        self,
        status: int,
        payload: dict | str,
        headers: Mapping[str, str] | None = None,
        *,
        content_type: str = "application/json",
        cut: int | None = None,
    ) -> None:
        data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data if cut is None else data[:cut])
        if cut is not None:
            self.close_connection = True


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(size, 1))]


def _chunks(body: dict, full: dict, reply: Reply) -> Iterator[tuple[dict, str]]:
    """A chat completion as the chunks OpenAI streams it, each with its piece of text."""
    base = {k: full[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    choice = full["choices"][0]

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""}), ""
    for piece in _pieces(choice["message"].get("content") or "", reply.chunk_chars):
        yield chunk({"content": piece}), piece
    for index, call in enumerate(choice["message"].get("tool_calls", [])):
        function = call["function"]
        opening = {"index": index, "id": call["id"], "type": "function"}
        yield chunk({"tool_calls": [{**opening, "function": {"name": function["name"]}}]}), ""
        for piece in _pieces(function["arguments"], reply.chunk_chars):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}), piece
    yield chunk({}, choice["finish_reason"]), ""
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": full["usage"]}, ""


def _response_events(full: dict, reply: Reply) -> Iterator[tuple[dict, str]]:
    """A response as the events the Responses API streams, each with its piece of text."""
    numbers = itertools.count()

    def event(kind: str, **fields: Any) -> dict:
        return {"type": kind, "sequence_number": next(numbers), **fields}

    yield event("response.created", response={**full, "status": "in_progress", "output": []}), ""
    for index, item in enumerate(full["output"]):
        if item["type"] == "message":
            opened = {**item, "status": "in_progress", "content": []}
            text = item["content"][0]["text"]
        elif item["type"] == "function_call":
            opened = {**item, "status": "in_progress", "arguments": ""}
            text = item["arguments"]
        else:
            opened, text = item, ""
        yield event("response.output_item.added", output_index=index, item=opened), ""
        for piece in _pieces(text, reply.chunk_chars):
            where = {"item_id": item["id"], "output_index": index, "delta": piece}
            if item["type"] == "message":
                yield (
                    event("response.output_text.delta", **where, content_index=0, logprobs=[]),
                    piece,
                )
            else:
                yield event("response.function_call_arguments.delta", **where), piece
        yield event("response.output_item.done", output_index=index, item=item), ""
    yield event("response.completed", response=full), ""


def request_tokens(body: dict) -> int:
    """The tokens a request sends, as this server estimates them: about 4 characters a
    token of its messages (or input), instructions and tools as JSON."""
    sent = [body.get(k) for k in ("messages", "input", "instructions", "tools")]
    return len(json.dumps([s for s in sent if s is not None])) // 4


def response_format_problem(response_format: object) -> str | None:
    """Why OpenAI would refuse a `response_format`, as far as its strict-mode rules go:
    a `json_schema` with a name, `strict: true`, an object at the root, and every
    object closed (`additionalProperties: false`) with every property required.
    None for no `response_format`, or one that meets them."""
    if response_format is None:
        return None
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return "response_format: only json_schema is scripted"
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        return "response_format.json_schema needs a name"
    if spec.get("strict") is not True or not isinstance(spec.get("schema"), dict):
        return "response_format.json_schema: strict and a schema are expected"
    if spec["schema"].get("type") != "object":
        return "Invalid schema: the root must be an object"
    return _strict_problem(spec["schema"], "#")


def text_format_problem(text: object) -> str | None:
    """`response_format_problem` for the Responses API's `text.format`."""
    if text is None:
        return None
    if not isinstance(text, dict):
        return "text: an object is expected"
    spec = text.get("format")
    if spec is None or (isinstance(spec, dict) and spec.get("type") == "text"):
        return None
    if not isinstance(spec, dict) or spec.get("type") != "json_schema":
        return "text.format: only json_schema is scripted"
    fields = {k: v for k, v in spec.items() if k != "type"}
    return response_format_problem({"type": "json_schema", "json_schema": fields})


def _strict_problem(node: object, path: str) -> str | None:
    if isinstance(node, list):
        for index, item in enumerate(node):
            problem = _strict_problem(item, f"{path}/{index}")
            if problem is not None:
                return problem
        return None
    if not isinstance(node, dict):
        return None
    if node.get("type") == "object" or "properties" in node:
        if node.get("additionalProperties") is not False:
            return f"Invalid schema at {path}: additionalProperties must be false"
        if sorted(node.get("required", [])) != sorted(node.get("properties", {})):
            return f"Invalid schema at {path}: every property must be required"
    for key, value in node.items():
        problem = _strict_problem(value, f"{path}/{key}")
        if problem is not None:
            return problem
    return None


def echo_responder(body: dict) -> Reply:
    """Answer with the last user message, prefixed by "echo: " (either API)."""
    sent = body.get("messages", body.get("input", []))
    if isinstance(sent, str):
        sent = [{"role": "user", "content": sent}]
    users = [m for m in sent if isinstance(m, dict) and m.get("role") == "user"]
    text = users[-1].get("content") if users else ""
    return Reply(content=f"echo: {text}")


def main(argv: list[str] | None = None) -> None:
    """Serve the echo model until Ctrl-C."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    with ScriptedModelServer(echo_responder, host=args.host, port=args.port) as server:
        print(f"scripted echo model on {server.base_url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
