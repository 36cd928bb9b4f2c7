"""A real HTTP receiver of webhooks for the tests: every delivery verified with the
`standardwebhooks` library against the receiver's secret, answered as scripted
(a status, headers), and recorded.

    with WebhookReceiver(secret) as receiver:
        receiver.answer(Answer(503), Answer(429, {"Retry-After": "1"}))  # then 200s
        ... receiver.url ...
        receiver.deliveries  # verified: [(headers, event), ...]
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook, WebhookVerificationError


@dataclass(frozen=True)
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"ok"
    delay: float = 0.0
    """Seconds the receiver holds the request before it answers."""


@dataclass
class Delivery:
    headers: dict[str, str]
    event: dict[str, Any]
    status: int
    at: float = field(default_factory=time.monotonic)
    """When it arrived (`time.monotonic`)."""


class WebhookReceiver:
    def __init__(self, secret: str, *, port: int = 0) -> None:
        self.secret = secret
        self.deliveries: list[Delivery] = []
        """Verified deliveries, each with the status it was answered."""
        self.unverified: list[tuple[dict[str, str], bytes, str]] = []
        self.arrived: list[str] = []
        """The webhook-id of each request as it arrives (before it is answered)."""
        self._script: list[Answer] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    event = Webhook(receiver.secret).verify(body, headers)
                except WebhookVerificationError as err:
                    with receiver._lock:
                        receiver.unverified.append((headers, body, str(err)))
                    self.send_response(401)
                    self.end_headers()
                    return
                with receiver._lock:
                    receiver.arrived.append(headers["webhook-id"])
                    answer = receiver._script.pop(0) if receiver._script else Answer()
                time.sleep(answer.delay)
                with receiver._lock:
                    receiver.deliveries.append(Delivery(headers, event, answer.status))
                try:
                    self.send_response(answer.status)
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the sender is gone (its worker was killed mid-delivery)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks"

    def answer(self, *answers: Answer) -> None:
        """The next deliveries' answers, in order (then 200)."""
        with self._lock:
            self._script.extend(answers)

    def accepted(self) -> list[Delivery]:
        with self._lock:
            return [d for d in self.deliveries if 200 <= d.status < 300]

    def __enter__(self) -> WebhookReceiver:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def in_order(deliveries: list[Delivery]) -> list[Delivery]:
    """`deliveries` by their event's number: each event has its own delivery workflow,
    so two events close together may arrive in either order."""
    return sorted(deliveries, key=lambda d: (d.event.get("run_id", ""), d.event.get("seq", 0)))


def events_of(deliveries: list[Delivery]) -> list[tuple[str, str]]:
    """(webhook-id, event type) of each delivery, by event number."""
    return [(d.headers["webhook-id"], d.event["type"]) for d in in_order(deliveries)]


def as_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))
