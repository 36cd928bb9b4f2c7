"""The codec server over real HTTP: token check, CORS, protocol, logs."""

from __future__ import annotations

import base64
import http.client
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from durable_agents.client import codec_server
from durable_agents.client.codec_server import CodecServer, CodecServerConfig, for_dev_ui
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from durable_agents.dataplane.codec import CodecError, CodecKeys, EncryptionCodec

KEY = base64.b64encode(b"k" * 32).decode()
KEYS = CodecKeys.parse(f"ops-1:{KEY}")
TOKEN = "s3cret-token-of-24-chars"
UI = "http://localhost:8080"
SECRET = '"the customer\'s card number"'


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


@pytest.fixture
def server() -> Iterator[CodecServer]:
    config = CodecServerConfig(tokens=("old-token-still-valid", TOKEN), cors_origins=(UI,))
    running = CodecServer(("127.0.0.1", 0), EncryptionCodec(KEYS), config)
    running.serve_in_thread()
    yield running
    running.shutdown()
    running.server_close()


def call(
    server: CodecServer,
    method: str,
    path: str,
    body: bytes | str = b"",
    **headers: str,
) -> Answer:
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=10)
    names = {k.replace("_", "-"): v for k, v in headers.items()}
    connection.request(method, path, body=body, headers=names)
    response = connection.getresponse()
    answer = Answer(response.status, dict(response.getheaders()), response.read())
    connection.close()
    return answer


def payloads_json(*payloads: Payload) -> str:
    return json_format.MessageToJson(Payloads(payloads=payloads))


def from_json(answer: Answer) -> list[Payload]:
    return list(json_format.Parse(answer.body, Payloads()).payloads)


def encrypted_secret() -> Payload:
    [payload] = EncryptionCodec(KEYS).encode_sync(
        [Payload(metadata={"encoding": b"json/plain"}, data=SECRET.encode())]
    )
    return payload


JSON = {"Content_Type": "application/json"}
AUTH = {"Authorization": f"Bearer {TOKEN}", **JSON}


def test_request_without_token_is_refused(server):
    answer = call(server, "POST", "/decode", payloads_json(encrypted_secret()), **JSON)
    assert answer.status == 401
    assert answer.headers["WWW-Authenticate"] == "Bearer"
    assert SECRET.encode() not in answer.body
    wrong = call(server, "POST", "/decode", "{}", Authorization="Bearer nope", **JSON)
    assert wrong.status == 401


def test_decode_with_token_returns_the_plain_payload(server):
    answer = call(server, "POST", "/decode", payloads_json(encrypted_secret()), **AUTH)
    assert answer.status == 200, answer.body
    [payload] = from_json(answer)
    assert payload.data.decode() == SECRET
    assert payload.metadata["encoding"] == b"json/plain"
    # The protocol's JSON: base64 data and metadata values.
    assert answer.json()["payloads"][0]["metadata"]["encoding"] == "anNvbi9wbGFpbg=="


def test_every_configured_token_works(server):
    body = payloads_json(encrypted_secret())
    answer = call(
        server, "POST", "/decode", body, Authorization="Bearer old-token-still-valid", **JSON
    )
    assert answer.status == 200


def test_encode_then_decode_round_trip_under_a_namespace_path(server):
    original = Payload(metadata={"encoding": b"json/plain"}, data=b'{"call_id": "c1"}')
    encoded = call(server, "POST", "/default/encode", payloads_json(original), **AUTH)
    [sealed] = from_json(encoded)
    assert sealed.metadata["encoding"] == b"binary/encrypted"
    assert sealed.metadata["encryption-key-id"] == b"ops-1"
    decoded = call(server, "POST", "/default/decode", payloads_json(sealed), **AUTH)
    assert from_json(decoded) == [original]


def test_cors_preflight_and_response_allow_the_ui_origin_only(server):
    preflight = call(
        server,
        "OPTIONS",
        "/decode",
        Origin=UI,
        Access_Control_Request_Method="POST",
        Access_Control_Request_Headers="authorization,content-type,x-namespace",
    )
    assert preflight.status == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == UI
    assert preflight.headers["Access-Control-Allow-Credentials"] == "true"
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    allowed = preflight.headers["Access-Control-Allow-Headers"].lower()
    assert {"authorization", "content-type", "x-namespace"} <= set(allowed.split(", "))
    body = payloads_json(encrypted_secret())
    actual = call(server, "POST", "/decode", body, Origin=UI, X_Namespace="default", **AUTH)
    assert actual.headers["Access-Control-Allow-Origin"] == UI
    refused = call(server, "OPTIONS", "/decode", Origin="https://evil.example")
    assert "Access-Control-Allow-Origin" not in refused.headers
    other = call(server, "POST", "/decode", body, Origin="https://evil.example", **AUTH)
    assert "Access-Control-Allow-Origin" not in other.headers


def test_login_sets_a_cookie_the_ui_sends_with_credentials(server):
    assert b"<form" in call(server, "GET", "/login").body
    form = {"Content_Type": "application/x-www-form-urlencoded"}
    assert call(server, "POST", "/login", "token=nope", **form).status == 401
    login = call(server, "POST", "/login", f"token={TOKEN}", **form)
    assert login.status == 200
    cookie = login.headers["Set-Cookie"]
    # SameSite=None: the UI is another site (Temporal Cloud's always is), whose
    # credentialed requests a SameSite=Strict or Lax cookie would not go with.
    assert {"HttpOnly", "Secure", "SameSite=None"} <= {p.strip() for p in cookie.split(";")}
    jar = cookie.split(";")[0]
    body = payloads_json(encrypted_secret())
    answer = call(server, "POST", "/decode", body, Origin=UI, Cookie=jar, **JSON)
    assert answer.status == 200 and from_json(answer)[0].data.decode() == SECRET


def test_the_login_cookie_counts_only_from_an_allowed_ui_origin(server):
    # The cookie goes with cross-site requests, so another site's page could make
    # the browser send it: without the UI's Origin it opens nothing.
    form = {"Content_Type": "application/x-www-form-urlencoded"}
    jar = call(server, "POST", "/login", f"token={TOKEN}", **form).headers["Set-Cookie"]
    jar = jar.split(";")[0]
    body = payloads_json(encrypted_secret())
    for origin in ("https://evil.example", None):
        headers = {"Origin": origin} if origin else {}
        answer = call(server, "POST", "/decode", body, Cookie=jar, **headers, **JSON)
        assert answer.status == 401, origin
        assert answer.json() == {"error": "missing or wrong bearer token"}
        assert SECRET.encode() not in answer.body


def test_preflight_from_a_public_ui_to_a_private_server_is_allowed(server):
    # Chrome's Private Network Access: Temporal Cloud's UI calling a codec server on
    # the operator's machine or network asks first; only an allowed origin gets a yes.
    ask = {"Access_Control_Request_Method": "POST"}
    ask["Access_Control_Request_Private_Network"] = "true"
    allowed = call(server, "OPTIONS", "/decode", Origin=UI, **ask)
    assert allowed.headers["Access-Control-Allow-Private-Network"] == "true"
    refused = call(server, "OPTIONS", "/decode", Origin="https://evil.example", **ask)
    assert "Access-Control-Allow-Private-Network" not in refused.headers


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"short", "5 bytes, shorter than a nonce and a tag"),
        (b"\0" * 12 + AESGCM(b"k" * 32).encrypt(b"\0" * 12, b"\xff\xff", None), "malformed"),
    ],
    ids=["truncated", "not-a-payload"],
)
def test_malformed_encrypted_payload_is_a_400_naming_the_problem(server, data, message):
    bad = Payload(
        metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"ops-1"}, data=data
    )
    answer = call(server, "POST", "/decode", payloads_json(bad), **AUTH)
    assert answer.status == 400
    error = answer.json()["error"]
    assert error.startswith("malformed encrypted payload (codec key 'ops-1')")
    assert message in error
    # The connection still answers: the server did not crash on it.
    assert call(server, "GET", "/healthz").body == b"ok\n"


def test_protocol_errors(server):
    assert call(server, "GET", "/decode").status == 405
    assert call(server, "POST", "/other", "{}", **AUTH).status == 404
    assert call(server, "POST", "/decode", "{}", Authorization=f"Bearer {TOKEN}").status == 415
    bad = call(server, "POST", "/decode", "not json", **AUTH)
    assert bad.status == 400 and "Payloads JSON" in bad.json()["error"]
    assert call(server, "GET", "/healthz").body == b"ok\n"


def test_decode_with_an_unknown_key_names_the_key_only(server):
    other = CodecKeys.parse("retired-0:" + base64.b64encode(b"r" * 32).decode())
    [sealed] = EncryptionCodec(other).encode_sync([Payload(data=b"x")])
    answer = call(server, "POST", "/decode", payloads_json(sealed), **AUTH)
    assert answer.status == 400
    assert "codec key 'retired-0', which is not configured" in answer.json()["error"]


def test_logs_carry_no_token_payload_or_key(server, caplog):
    caplog.set_level(logging.DEBUG, logger="codec_server")
    body = payloads_json(encrypted_secret())
    call(server, "POST", "/decode", body, X_Namespace="default", **AUTH)
    call(server, "POST", "/decode", body, Authorization="Bearer wrong-guess", **JSON)
    text = caplog.text
    assert "POST /decode -> 200, 1 payloads (namespace default)" in text
    assert "-> 401" in text
    for secret in (TOKEN, "wrong-guess", SECRET, "customer", KEY):
        assert secret not in text


def test_serving_without_a_token_needs_loopback():
    keys = EncryptionCodec(KEYS)
    with pytest.raises(CodecError, match="needs a token"):
        CodecServer(("127.0.0.1", 0), keys, CodecServerConfig())
    open_config = CodecServerConfig(allow_unauthenticated=True)
    with pytest.raises(CodecError, match=r"loopback address only, not 0\.0\.0\.0"):
        CodecServer(("0.0.0.0", 0), keys, open_config)


@pytest.mark.parametrize("token", ["replace-me", "short-token", "changeme"])
def test_placeholder_and_short_tokens_are_refused(token):
    with pytest.raises(CodecError, match="is refused; use at least 16 random characters"):
        CodecServer(("127.0.0.1", 0), EncryptionCodec(KEYS), CodecServerConfig(tokens=(token,)))


def test_dev_ui_server_is_open_on_loopback_for_the_dev_ui(monkeypatch):
    monkeypatch.delenv(codec_server.TOKEN_ENV, raising=False)
    server = for_dev_ui(KEYS, port=0, ui_port=8233)
    try:
        assert server.config.allow_unauthenticated
        assert server.config.cors_origins == ("http://localhost:8233", "http://127.0.0.1:8233")
        server.serve_in_thread()
        answer = call(server, "POST", "/decode", payloads_json(encrypted_secret()), **JSON)
        assert answer.status == 200
        # DNS rebinding: a page of evil.example resolving to 127.0.0.1, or another site
        rebound = {"Host": "evil.example:8081", **JSON}
        assert (
            call(server, "POST", "/decode", payloads_json(encrypted_secret()), **rebound).status
            == 403
        )
        foreign = {"Origin": "http://evil.example", **JSON}
        assert (
            call(server, "POST", "/decode", payloads_json(encrypted_secret()), **foreign).status
            == 403
        )
        ui = {"Origin": "http://localhost:8233", **JSON}
        assert (
            call(server, "POST", "/decode", payloads_json(encrypted_secret()), **ui).status == 200
        )
    finally:
        server.shutdown()
        server.server_close()
    monkeypatch.setenv(codec_server.TOKEN_ENV, TOKEN)
    guarded = for_dev_ui(KEYS, port=0, ui_port=8233)
    guarded.server_close()
    assert guarded.config.tokens == (TOKEN,) and not guarded.config.allow_unauthenticated


def test_main_refuses_to_start_without_keys_or_token(monkeypatch, capsys):
    monkeypatch.delenv("AGENT_CODEC_KEYS", raising=False)
    monkeypatch.delenv("AGENT_CODEC_KEYS_FILE", raising=False)
    assert codec_server.main(["--port", "0"]) == 1
    assert "no codec keys" in capsys.readouterr().err
    monkeypatch.setenv("AGENT_CODEC_KEYS", f"ops-1:{KEY}")
    monkeypatch.delenv(codec_server.TOKEN_ENV, raising=False)
    assert codec_server.main(["--port", "0"]) == 1
    err = capsys.readouterr().err
    assert "needs a token: set AGENT_CODEC_SERVER_TOKEN" in err and KEY not in err


def test_a_silent_connection_is_closed_and_connections_are_capped(server, monkeypatch):
    import socket

    assert codec_server._Handler.timeout == codec_server.SOCKET_TIMEOUT_SECONDS
    monkeypatch.setattr(codec_server._Handler, "timeout", 0.5)
    monkeypatch.setattr(codec_server, "REQUEST_SECONDS", 600.0)  # only the silence is due
    slow = socket.create_connection(server.server_address[:2])
    slow.sendall(b"POST /decode HTTP/1.1\r\n")  # and then nothing
    slow.settimeout(60)  # bounds a failing test only
    assert slow.recv(1024) == b""  # closed by the server: its silence timeout, nothing else
    slow.close()
    slots_left(server, codec_server.MAX_CONNECTIONS)  # its thread ended: all slots free
    monkeypatch.setattr(codec_server._Handler, "timeout", 60)  # held until closed below
    held = []
    try:
        for taken in range(1, codec_server.MAX_CONNECTIONS + 1):
            held.append(socket.create_connection(server.server_address[:2]))
            # one at a time, each accepted before the next: 32 at once overflowed the
            # listen backlog (5), and the kernel's SYN retries took 5 s
            slots_left(server, codec_server.MAX_CONNECTIONS - taken)
        extra = socket.create_connection(server.server_address[:2])
        extra.settimeout(60)
        assert extra.recv(1024) == b""  # refused: every slot is taken
        extra.close()
    finally:
        for connection in held:
            connection.close()
    slots_left(server, codec_server.MAX_CONNECTIONS)  # closed: their threads ended
    assert call(server, "GET", "/healthz").status == 200


def slots_left(server, wanted: int) -> None:
    """Wait (30 s at most) until `wanted` of the server's connection slots are free
    (its semaphore's count)."""
    import time

    deadline = time.monotonic() + 30
    while server._slots._value != wanted:
        assert time.monotonic() < deadline, f"{server._slots._value} slots free, not {wanted}"
        time.sleep(0.01)


def test_a_trickled_request_is_cut_at_the_request_deadline(server, monkeypatch):
    import socket
    import time

    monkeypatch.setattr(codec_server, "REQUEST_SECONDS", 1.0)
    slow = socket.create_connection(server.server_address[:2])
    slow.settimeout(0.1)
    started, answer = time.monotonic(), None
    slow.sendall(b"POST /decode HTTP/1.1\r\n")
    try:  # a byte every 0.1 s: never silent for long; 60 s bounds a failing test only
        while time.monotonic() - started < 60:
            slow.sendall(b"X")
            try:
                answer = slow.recv(1024)
                break
            except TimeoutError:
                continue
    except (BrokenPipeError, ConnectionResetError):
        answer = b""
    finally:
        slow.close()
    assert answer == b""  # cut by the server: only its request deadline was due
    assert call(server, "GET", "/healthz").status == 200


def test_a_login_form_past_its_size_is_refused_unread(server):
    big = call(server, "POST", "/login", "token=" + "x" * 5000, Content_Type="text/plain")
    assert big.status == 413 and big.json()["error"] == "at most 4096 bytes"


def test_a_request_line_that_does_not_parse_is_a_400(server, caplog):
    import socket

    caplog.set_level(logging.INFO, logger="codec_server")
    odd = socket.create_connection(server.server_address[:2])
    odd.settimeout(5)
    odd.sendall(b"BLAH\r\n\r\n")
    assert b"Error code: 400" in odd.recv(4096)  # an HTTP/0.9 line: the page alone
    odd.close()
    assert any(r.getMessage().startswith("- - -> 400") for r in caplog.records)


def test_a_kept_alive_connection_s_idle_time_is_not_a_request_s(server, monkeypatch):
    import time

    monkeypatch.setattr(codec_server, "REQUEST_SECONDS", 0.5)
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=10)
    for _ in range(2):
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        assert (response.status, response.read()) == (200, b"ok\n")
        time.sleep(0.8)  # idle past the deadline: the next request's time starts with it
    connection.close()
