"""Codec server: lets the Temporal UI and CLI show decrypted payloads to authorised people.

`python -m durable_agents.client.codec_server --port 8081` serves Temporal's remote codec
protocol with the keys of `dataplane.codec` (AGENT_CODEC_KEYS...):
`POST …/encode` and `POST …/decode` take and return `{"payloads": [...]}`
(Payloads as protobuf JSON: base64 `data` and metadata values); only the last
path segment counts, so `http://host:8081/{namespace}/decode` works too.
`GET /healthz` answers `ok` for probes.

Who may call it:

- `Authorization: Bearer TOKEN` with a token from `AGENT_CODEC_SERVER_TOKEN`
  (several comma-separated tokens rotate): the `temporal` CLI
  (`--codec-endpoint URL --codec-auth "Bearer TOKEN"`) and services;
- the Temporal UI in a browser: open `/login` on this server once, enter a
  token, and it sets an HttpOnly, Secure, SameSite=None cookie; the UI sends it
  when its codec setting "include cross-origin credentials" is on
  (`TEMPORAL_CODEC_INCLUDE_CREDENTIALS=true` for the `temporalio/ui` image).
  SameSite=None because the UI is another origin, often another site (Temporal
  Cloud's UI always is); the cookie counts only on requests whose `Origin` is
  an allowed UI origin, so another site cannot use it. Browsers that block
  third-party cookies (Safari, Firefox's strict mode) do not send it to a
  cross-site UI: see deploy/README.md for Temporal Cloud;
- nobody else: 401. `--allow-unauthenticated` turns the check off, accepted
  only on a loopback address (the dev UI of `worker.py --dev --codec-server`,
  or a codec server on an operator's own machine for Temporal Cloud's UI).
  Temporal Cloud's "pass access token" (a Cloud JWT) is not accepted.

Browsers may call it only from the UI origins in `--cors-origin` /
`AGENT_CODEC_SERVER_CORS_ORIGINS` (default: the dev UI, `http://localhost:8233`
and `http://127.0.0.1:8233`). Logs carry method, path, status and payload
counts: never payloads, tokens or key material.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hmac
import ipaddress
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads

from durable_agents.dataplane.codec import (
    CodecConfigError,
    CodecError,
    CodecKeys,
    EncryptionCodec,
    keys_from_env,
)
from durable_agents.dataplane.secret_env import SecretEnvError, secret_from_env

TOKEN_ENV = "AGENT_CODEC_SERVER_TOKEN"
MIN_TOKEN_CHARS = 16
"""Shorter tokens (and template placeholders) are refused: they can be guessed."""
CORS_ENV = "AGENT_CODEC_SERVER_CORS_ORIGINS"
DEFAULT_PORT = 8081
DEFAULT_ORIGINS = ("http://localhost:8233", "http://127.0.0.1:8233")
COOKIE = "agent_codec_token"
MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest request accepted (a whole history's payloads, base64, can be large)."""
LOGIN_BODY_BYTES = 4096
"""Largest login form accepted (a token; read before anyone is known)."""
SOCKET_TIMEOUT_SECONDS = 30
"""A connection silent this long is closed."""
REQUEST_SECONDS = 30
"""From a request's first byte, its line and headers (and, before anyone is known, its
body) must arrive within this, else its connection is cut: a client trickling bytes
holds a thread no longer. An authorised request's body and the answer are not timed."""
MAX_CONNECTIONS = 32
"""Connections served at once; more are closed at once (each holds a thread). Anyone
who can connect can take them for REQUEST_SECONDS at a time: expose the server
through a proxy that limits connections per client (deploy/README.md)."""

logger = logging.getLogger("codec_server")

_LOGIN_PAGE = b"""<!doctype html><meta charset="utf-8"><title>Codec server login</title>
<form method="post" action="login"><label>Codec server token
<input type="password" name="token" autocomplete="off" autofocus></label>
<button>Log in</button></form>
<p>Then turn on "include cross-origin credentials" in the Temporal UI's codec settings.</p>
"""


@dataclass(frozen=True)
class CodecServerConfig:
    """Who may use the codec server."""

    tokens: tuple[str, ...] = ()
    """Accepted bearer tokens (compared in constant time). Default: none."""
    cors_origins: tuple[str, ...] = DEFAULT_ORIGINS
    """Browser origins (the Temporal UI's) allowed to call. Default: the dev UI on :8233."""
    allow_unauthenticated: bool = False
    """Serve without a token (loopback only). Default: False."""


class CodecServer(ThreadingHTTPServer):
    """The HTTP server; `serve_in_thread` runs it in the background."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], codec: EncryptionCodec, config: CodecServerConfig
    ) -> None:
        if not config.tokens and not config.allow_unauthenticated:
            raise CodecError(f"the codec server needs a token: set {TOKEN_ENV}")
        for token in config.tokens:
            if len(token) < MIN_TOKEN_CHARS or token.lower() in ("replace-me", "changeme"):
                raise CodecError(
                    f"{TOKEN_ENV}: a token of {len(token)} characters (or a template "
                    f"placeholder) is refused; use at least {MIN_TOKEN_CHARS} random "
                    "characters: openssl rand -hex 24"
                )
        if config.allow_unauthenticated and not is_loopback_host(address[0]):
            raise CodecError(
                f"serving without a token is allowed on a loopback address only, not {address[0]}"
            )
        self.codec = codec
        self.config = config
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, _Handler)

    def process_request(self, request: object, client_address: object) -> None:
        """Serve the connection on its own thread, unless MAX_CONNECTIONS already are."""
        if not self._slots.acquire(blocking=False):
            logger.warning("connection refused: %d connections already open", MAX_CONNECTIONS)
            self.shutdown_request(request)  # type: ignore[arg-type]
            return
        super().process_request(request, client_address)  # type: ignore[arg-type]

    def process_request_thread(self, request: object, client_address: object) -> None:
        try:
            super().process_request_thread(request, client_address)  # type: ignore[arg-type]
        finally:
            self._slots.release()

    @property
    def url(self) -> str:
        """Base URL of the server, e.g. `http://127.0.0.1:8081`."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def serve_in_thread(self) -> threading.Thread:
        """Start serving on a daemon thread (stop with `shutdown()`)."""
        thread = threading.Thread(
            target=self.serve_forever, args=(0.1,), name="codec-server", daemon=True
        )
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: CodecServer
    server_version = "agent-codec-server"
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT_SECONDS

    def handle_one_request(self) -> None:
        """One request, its connection cut if the request is not in REQUEST_SECONDS
        after its first byte (waiting for that byte, a kept-alive connection closes
        after SOCKET_TIMEOUT_SECONDS)."""
        self._was_cut = False
        try:
            if not self.rfile.peek(1):  # the client closed the connection
                self.close_connection = True
                return
        except TimeoutError:
            self.close_connection = True
            return
        self._deadline = threading.Timer(REQUEST_SECONDS, self._cut)
        self._deadline.daemon = True
        self._deadline.start()
        try:
            super().handle_one_request()
        except OSError:
            if not self._was_cut:
                raise
            self.close_connection = True  # cut: nothing to answer, nothing to log
        finally:
            self._deadline.cancel()

    def _cut(self) -> None:
        self._was_cut = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _received(self) -> None:
        """The request is in, or its sender known (an authorised upload may take its
        time): what follows (reading it, decoding, answering) is not cut."""
        self._deadline.cancel()

    def parse_request(self) -> bool:
        """Without a token (loopback only), also refuse requests that name another host
        or come from another site's page: a web page can reach a loopback server by
        rebinding its own host name to 127.0.0.1 (DNS rebinding), and read decrypted
        payloads unless the Host and Origin are checked."""
        if not super().parse_request() or self._was_cut:
            self.close_connection = True
            return False
        if not self.server.config.allow_unauthenticated:
            return True
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        origin = self.headers.get("Origin")
        if not is_loopback_host(host) or (origin is not None and not self._allowed_origin()):
            self._error(HTTPStatus.FORBIDDEN, "this codec server serves its own machine only")
            return False
        return True

    # --- routing ---------------------------------------------------------------------

    def do_OPTIONS(self) -> None:  # CORS preflight: no credentials are sent with it
        self._received()
        self._send(HTTPStatus.NO_CONTENT, preflight=True)

    def do_GET(self) -> None:
        self._received()
        if self.path == "/healthz":
            self._send(HTTPStatus.OK, b"ok\n", "text/plain")
        elif self._endpoint() == "login":
            self._send(HTTPStatus.OK, _LOGIN_PAGE, "text/html; charset=utf-8")
        elif self._endpoint() in ("encode", "decode"):
            self._error(HTTPStatus.METHOD_NOT_ALLOWED, "use POST")
        else:
            self._error(HTTPStatus.NOT_FOUND, "unknown path")

    def do_POST(self) -> None:
        endpoint = self._endpoint()
        if endpoint == "login":
            self._login()
        elif endpoint not in ("encode", "decode"):
            self._error(HTTPStatus.NOT_FOUND, "unknown path")
        elif not self._authorised():
            self._error(HTTPStatus.UNAUTHORIZED, "missing or wrong bearer token")
        elif not self.headers.get("Content-Type", "").startswith("application/json"):
            # Also keeps browsers from sending it as a "simple" request without preflight.
            self._error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send Content-Type: application/json")
        else:
            self._received()  # an authorised upload of a large history may take its time
            self._transform(endpoint)

    # --- endpoints -------------------------------------------------------------------

    def _transform(self, endpoint: str) -> None:
        body = self._body()
        if body is None:
            return
        payloads = Payloads()
        try:
            json_format.Parse(body, payloads, ignore_unknown_fields=True)
        except (json_format.ParseError, UnicodeDecodeError) as err:
            self._error(HTTPStatus.BAD_REQUEST, f"not a Payloads JSON object: {err}")
            return
        codec = self.server.codec
        try:
            if endpoint == "encode":
                result = codec.encode_sync(payloads.payloads)
            else:
                result = codec.decode_sync(payloads.payloads)
        except CodecError as err:  # unknown key, wrong key, malformed: names a key id at most
            self._error(HTTPStatus.BAD_REQUEST, err.message)
            return
        except Exception as err:  # a bug: answer, and log no more than the error's type
            logger.error("%s failed: %s", endpoint, type(err).__name__)
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{endpoint} failed")
            return
        self._count: int | None = len(result)
        answer = json_format.MessageToJson(Payloads(payloads=result), indent=None)
        self._send(HTTPStatus.OK, answer.encode(), "application/json")

    def _login(self) -> None:
        body = self._body(LOGIN_BODY_BYTES)
        if body is None:
            return
        token = parse_qs(body.decode(errors="replace")).get("token", [""])[0]
        if not self._known_token(token):
            self._error(HTTPStatus.UNAUTHORIZED, "wrong token")
            return
        cookie = f"{COOKIE}={token}; Path=/; HttpOnly; Secure; SameSite=None; Max-Age=43200"
        self._send(HTTPStatus.OK, b"logged in\n", "text/plain", extra={"Set-Cookie": cookie})

    # --- helpers ---------------------------------------------------------------------

    def _endpoint(self) -> str:
        """The last path segment: the protocol allows mounting at any depth."""
        return self.path.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]

    def _authorised(self) -> bool:
        if self.server.config.allow_unauthenticated:
            return True
        scheme, _, token = self.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and self._known_token(token.strip()):
            return True
        if not self._allowed_origin():  # the cookie is sent cross-site: only the UI may use it
            return False
        cookie = SimpleCookie(self.headers.get("Cookie", ""))
        return COOKIE in cookie and self._known_token(cookie[COOKIE].value)

    def _allowed_origin(self) -> bool:
        origin = self.headers.get("Origin")
        return bool(origin) and origin in self.server.config.cors_origins

    def _known_token(self, token: str) -> bool:
        given = token.encode()
        # Check every token (no early exit) so timing tells nothing about which matched.
        matches = [hmac.compare_digest(given, t.encode()) for t in self.server.config.tokens]
        return bool(token) and any(matches)

    def _body(self, limit: int = MAX_BODY_BYTES) -> bytes | None:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length < 0 or length > limit:
            self.close_connection = True
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"at most {limit} bytes")
            return None
        body = self.rfile.read(length)
        if len(body) < length:  # cut off (by the client, or at REQUEST_SECONDS)
            self.close_connection = True
            return None
        self._received()
        return body

    def _cors_headers(self, *, preflight: bool) -> dict[str, str]:
        headers = {"Vary": "Origin"}
        if self._allowed_origin():
            headers["Access-Control-Allow-Origin"] = self.headers["Origin"]
            headers["Access-Control-Allow-Credentials"] = "true"
            if preflight:
                headers["Access-Control-Allow-Methods"] = "POST, OPTIONS"
                headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type, X-Namespace"
                headers["Access-Control-Max-Age"] = "600"
                # Chrome asks before a public page (Temporal Cloud's UI) calls a server on
                # the operator's own machine or network.
                if self.headers.get("Access-Control-Request-Private-Network") == "true":
                    headers["Access-Control-Allow-Private-Network"] = "true"
        return headers

    def _error(self, status: HTTPStatus, message: str) -> None:
        self.close_connection = True  # the request body may be unread: no keep-alive
        extra = {"WWW-Authenticate": "Bearer"} if status == HTTPStatus.UNAUTHORIZED else {}
        body = json.dumps({"error": message}).encode()
        self._send(status, body, "application/json", extra=extra)

    def _send(
        self,
        status: HTTPStatus,
        body: bytes = b"",
        content_type: str | None = None,
        *,
        preflight: bool = False,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        headers = {**self._cors_headers(preflight=preflight), **(extra or {})}
        if content_type:
            headers["Content-Type"] = content_type
        headers["Content-Length"] = str(len(body))
        headers["Cache-Control"] = "no-store"
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One line per request: no headers, no bodies (tokens and payloads stay out)."""
        count, self._count = getattr(self, "_count", None), None
        headers = getattr(self, "headers", None)  # none on a request line that did not parse
        logger.info(
            "%s %s -> %s%s (namespace %s)",
            getattr(self, "command", None) or "-",
            getattr(self, "path", "-").split("?", 1)[0],
            int(code) if isinstance(code, int) else code,
            f", {count} payloads" if count is not None else "",
            headers.get("X-Namespace", "-") if headers else "-",
        )

    def log_message(self, format: str, *args: object) -> None:
        logger.warning("%s", format % args)


def is_loopback_host(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def config_from_env(
    *, origins: Sequence[str] = (), allow_unauthenticated: bool = False
) -> CodecServerConfig:
    """Tokens from AGENT_CODEC_SERVER_TOKEN or the file AGENT_CODEC_SERVER_TOKEN_FILE
    names; origins given, else from the env, else the dev UI."""
    try:
        secret = secret_from_env(TOKEN_ENV)
    except SecretEnvError as err:
        raise CodecConfigError(err.message) from None
    text = secret.value if secret else ""
    tokens = tuple(t.strip() for t in text.split(",") if t.strip())
    env_origins = [o.strip() for o in os.environ.get(CORS_ENV, "").split(",") if o.strip()]
    return CodecServerConfig(
        tokens=tokens,
        cors_origins=tuple(origins or env_origins or DEFAULT_ORIGINS),
        allow_unauthenticated=allow_unauthenticated,
    )


def for_dev_ui(keys: CodecKeys, *, port: int, ui_port: int) -> CodecServer:
    """A codec server on 127.0.0.1 for the dev server's UI on `ui_port` (not started).

    It checks AGENT_CODEC_SERVER_TOKEN if set; else it serves without a token,
    loopback only: the dev UI has no way to send one and the dev server itself
    has no authentication either.
    """
    origins = (f"http://localhost:{ui_port}", f"http://127.0.0.1:{ui_port}")
    config = config_from_env(origins=origins)
    if not config.tokens:
        config = dataclasses.replace(config, allow_unauthenticated=True)
    return CodecServer(("127.0.0.1", port), EncryptionCodec(keys), config)


def main(argv: list[str] | None = None) -> int:
    """Run the codec server until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m durable_agents.client.codec_server", description=__doc__
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        help=f"a Temporal UI origin allowed to call (repeatable; env {CORS_ENV})",
    )
    parser.add_argument(
        "--allow-unauthenticated", action="store_true", help="no token check (loopback only)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="codec-server: %(message)s")
    try:
        keys = keys_from_env()
        if keys is None:
            raise CodecError("no codec keys: set AGENT_CODEC_KEYS or AGENT_CODEC_KEYS_FILE")
        config = config_from_env(
            origins=args.cors_origin, allow_unauthenticated=args.allow_unauthenticated
        )
        server = CodecServer((args.host, args.port), EncryptionCodec(keys), config)
    except (CodecError, OSError) as err:
        print(f"codec-server: error: {getattr(err, 'message', err)}", file=sys.stderr)
        return 1
    auth = "no token check (loopback)" if config.allow_unauthenticated else "bearer token"
    logger.info(
        "serving on %s (%s; %s; UI origins: %s)",
        server.url,
        keys.describe(),
        auth,
        ", ".join(config.cors_origins),
    )
    # As a container's PID 1 the process ignores SIGTERM unless it handles it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
