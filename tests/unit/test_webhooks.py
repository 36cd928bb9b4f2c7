"""Webhook configuration (durable_agents.webhooks) and run events
(workflows.run_events), without a server: malformed AGENT_WEBHOOKS files, the
allow-list, Retry-After, signatures a receiver verifies, and which events a state
announces, each once."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from datetime import UTC, datetime, timedelta

import pytest
from durable_agents.workflows import run_events
from durable_agents.workflows.agent_spec import AgentSpec, ToolSpec, WebhookSubscription
from durable_agents.workflows.run_items import AssistantMessage, Decision, ToolCall, UserMessage
from durable_agents.workflows.state import Pause, RunState, RunStatus
from durable_agents.workflows.webhook_payloads import DeliveryRequest
from standardwebhooks import Webhook

from durable_agents.webhooks import (
    AllowList,
    Endpoint,
    WebhookConfigError,
    _pinned,
    _retry_after,
    _retry_or_give_up,
    deliver,
    parse,
    sign,
)
from tests.integration.test_deploy_tls import _issue
from tests.support.webhook_receiver import WebhookReceiver

SECRET = "whsec_" + "c2VjcmV0LWtleS1mb3ItdGVzdHMtMDEyMzQ1Njc4OQ=="
ENV = {"HOOK": SECRET, "AGENT_WEBHOOK_ALLOW": "127.0.0.1"}
GOOD = {
    "name": "a",
    "url": "http://127.0.0.1:9/h",
    "events": ["run_finished"],
    "secret_env": "HOOK",
}
AT = datetime(2026, 11, 25, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    "document, env, message",
    [
        ({"a": 1}, ENV, "a JSON list of endpoints"),
        ([{"url": "http://x"}], ENV, 'each endpoint is an object with a "name"'),
        ([{**GOOD, "name": "a b"}], ENV, "a name is letters"),
        ([{**GOOD, "url": "ftp://127.0.0.1/"}], ENV, '"url" is an http(s) URL'),
        ([{**GOOD, "url": "http://u:p@127.0.0.1/"}], ENV, "may not carry credentials"),
        ([{**GOOD, "events": ["everything"]}], ENV, '"events" is a list of'),
        ([{**GOOD, "events": []}], ENV, '"events" is a list of'),
        ([{**GOOD, "secret_env": "NOPE"}], ENV, "$NOPE (its secret) is not set, nor $NOPE_FILE"),
        ([GOOD], {**ENV, "HOOK_FILE": "/no/such/file"}, "set HOOK or HOOK_FILE, not both"),
        ([GOOD], {"HOOK_FILE": "/no/such/file", "AGENT_WEBHOOK_ALLOW": "127.0.0.1"}, "HOOK_FILE"),
        ([GOOD], {**ENV, "HOOK": "plain-text"}, "is not a whsec_ secret"),
        ([{**GOOD, "give_up_after": -1}], ENV, '"give_up_after" is seconds'),
        ([{**GOOD, "give_up_after": True}], ENV, '"give_up_after" is seconds'),
        ([{**GOOD, "headers": {}}], ENV, "unknown field 'headers'"),
        ([GOOD, GOOD], ENV, "listed twice"),
        ([{**GOOD, "url": "http://169.254.169.254/latest"}], {"HOOK": SECRET}, "loopback, private"),
        ([{**GOOD, "url": "http://[::1]:9/"}], {"HOOK": SECRET}, "loopback, private"),
        ([{**GOOD, "url": "http://[::ffff:10.0.0.1]/"}], {"HOOK": SECRET}, "loopback, private"),
    ],
)
def test_an_unusable_webhooks_file_is_refused_with_the_reason(document, env, message):
    with pytest.raises(WebhookConfigError) as refused:
        parse(document, env)
    assert message in str(refused.value)


def test_secrets_stay_out_of_an_endpoint_s_repr_and_several_verify():
    other = "whsec_" + "bmV3LXNlY3JldC1rZXktZm9yLXRlc3RzLTAxMjM0NQ=="
    [found] = parse([GOOD], {**ENV, "HOOK": f"{SECRET} {other}"}).values()
    assert SECRET not in repr(found) and other not in repr(found)
    headers = sign(found, "run-1:1", datetime.now(UTC), '{"x":1}')
    assert Webhook(SECRET).verify('{"x":1}', headers) == {"x": 1}
    assert Webhook(other).verify('{"x":1}', headers) == {"x": 1}


def test_the_allow_list_admits_what_it_lists_and_public_addresses_when_unset():
    unset = AllowList.parse(None)
    assert unset.problem("hooks.example.com", ["93.184.216.34"]) is None
    assert "loopback" in (unset.problem("localhost", ["127.0.0.1"]) or "")
    assert "private" in (unset.problem("db", ["10.0.0.7", "93.184.216.34"]) or "")  # any
    listed = AllowList.parse("hooks.example.com, 10.0.0.0/8")
    assert listed.problem("hooks.example.com", ["10.9.9.9"]) is None
    assert listed.problem("intranet", ["10.1.2.3"]) is None
    assert "is not in AGENT_WEBHOOK_ALLOW" in (
        listed.problem("x.example.org", ["93.184.216.34"]) or ""
    )


def test_retry_after_in_seconds_or_a_date_and_never_past_the_give_up_time():
    assert _retry_after("3") == timedelta(seconds=3)
    assert _retry_after("-5") == timedelta(0)
    assert _retry_after("soon") is None and _retry_after("inf") is None
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == timedelta(0)  # past
    hook = Endpoint("a", "http://x", ("run_finished",), (SECRET,), give_up_after=timedelta(hours=1))
    first = DeliveryRequest(
        endpoint="a", webhook_id="r:1", event={}, attempt=1, first_try_at=datetime.now(UTC)
    )
    result = _retry_or_give_up(hook, first, 503, "HTTP 503", timedelta(minutes=30))
    assert (result.outcome, result.retry_in_seconds) == ("retry", 1800.0)
    late = first.model_copy(update={"attempt": 20})
    assert _retry_or_give_up(hook, late, 503, "x", None).retry_in_seconds == 600.0  # capped
    past = first.model_copy(update={"first_try_at": datetime.now(UTC) - timedelta(hours=2)})
    assert _retry_or_give_up(hook, past, 503, "x", None).outcome == "gave_up"


def _run(**fields) -> RunState:
    spec = AgentSpec(
        name="desk",
        instructions="",
        model="m",
        tools=[
            ToolSpec(name="pay", description="", parameters={"type": "object"}, needs_approval=True)
        ],
        webhooks=[
            WebhookSubscription(
                endpoint="all",
                events=[*run_events.APPROVAL_EVENTS, "run_finished", "paused", "resumed"],
            )
        ],
    )
    call = ToolCall(call_id="c1", tool="pay", arguments='{"amount": 5}', needs_approval=True)
    items = [
        UserMessage(content="pay"),
        AssistantMessage(turn=1, content=None, tool_calls=[call], at=AT),
    ]
    return RunState(
        run_id="r",
        agent=spec,
        max_turns=5,
        items=items,
        turn=1,
        created_at=AT,
        updated_at=AT,
        **fields,
    )


def test_each_event_is_announced_once_numbered_with_how_to_answer():
    state = _run(status=RunStatus.AWAITING_APPROVAL)
    [asked] = run_events.due(state, now=AT)
    assert (asked["seq"], asked["type"], asked["call_id"], asked["args"]) == (
        1,
        "approval_requested",
        "c1",
        {"amount": 5},
    )
    assert asked["answer"]["approve"] == {
        "signal": "approve",
        "input": {
            "call_id": "c1",
            "approver": "<approver>",
            "run_id": "r",
            "arguments_sha256": asked["arguments_sha256"],
        },
    }
    to_desk = run_events.addressed(asked, "desk-hook")
    assert to_desk["answer"]["approve"]["input"]["approver"] == "desk-hook"
    assert (
        '\'{"call_id":"c1","approver":"desk-hook"' in to_desk["answer"]["temporal_cli"]["approve"]
    )
    assert run_events.due(state, now=AT) == []  # once
    state.paused = Pause(by="ops", reason="look", at=AT)
    [paused] = run_events.due(state, now=AT)
    assert (paused["seq"], paused["type"], paused["by"]) == (2, "paused", "ops")
    state.paused = None
    state.items.append(
        Decision(
            call_id="c1", decision="reject", approver="system", reason="late", via="timeout", at=AT
        )
    )
    expired, resumed = run_events.due(state, now=AT)
    assert (expired["seq"], expired["type"], expired["via"]) == (3, "approval_expired", "timeout")
    assert (resumed["seq"], resumed["type"]) == (4, "resumed")
    state.status = RunStatus.FAILED
    [finished] = run_events.due(state, now=AT)
    assert (finished["seq"], finished["type"], finished["status"]) == (5, "run_finished", "failed")
    assert run_events.due(state, now=AT) == []


def test_a_tool_s_own_subscriptions_take_its_approval_events():
    state = _run(status=RunStatus.AWAITING_APPROVAL)
    state.agent.tools[0].webhooks = [
        WebhookSubscription(endpoint="payments", events=["approval_requested", "approval_expired"])
    ]
    [asked] = run_events.due(state, now=AT)
    assert run_events.endpoints_for(state, asked) == ["payments"]
    state.status = RunStatus.CANCELLED  # with the call still waiting: it is closed
    closed, finished = run_events.due(state, now=AT)
    assert (closed["type"], closed["via"], closed["call_id"]) == (
        "approval_expired",
        "run_ended",
        "c1",
    )
    assert run_events.endpoints_for(state, closed) == ["payments"]
    assert run_events.endpoints_for(state, finished) == ["all"]
    state.agent.tools[0].webhooks = []  # a tool that sends its approvals nowhere
    assert run_events.endpoints_for(state, asked) == []


def test_sensitive_arguments_are_masked_in_an_event():
    state = _run(status=RunStatus.AWAITING_APPROVAL)
    state.agent.tools[0].sensitive = ["amount"]
    [asked] = run_events.due(state, now=AT)
    assert asked["args"] == {"amount": "<sensitive, 1 chars>"} and asked["sensitive"] == ["amount"]


def test_a_resumed_or_forked_run_announces_its_own_events():
    from durable_agents.workflows import loop

    state = _run(status=RunStatus.AWAITING_APPROVAL, execution_id="exec-1")
    [asked] = run_events.due(state, now=AT)
    run_events.record_sending(state, "all", run_events.webhook_id(state, 1), asked, now=AT)
    resumed = loop.resume(state, run_id="r2", workflow_run="w2", now=AT)
    assert resumed.notices is None and resumed.webhook_deliveries == []
    resumed.execution_id = "exec-2"
    [again] = run_events.due(resumed, now=AT)  # the waiting call is announced by the new run
    assert (again["seq"], again["run_id"], again["type"]) == (1, "r2", "approval_requested")
    assert run_events.webhook_id(resumed, 1) == "evt_exec-2_1" != run_events.webhook_id(state, 1)
    continued = loop.resume(state, run_id="r", workflow_run="w3", now=AT, continue_as_new=True)
    assert continued.notices == state.notices  # the same run goes on: nothing again
    assert run_events.due(continued, now=AT) == []


def test_reports_are_taken_in_order_and_a_delivery_that_gives_up_is_never_dropped():
    from durable_agents.workflows.audit import DELIVERIES_KEPT
    from durable_agents.workflows.webhook_payloads import DeliveryReport

    state = _run(status=RunStatus.AWAITING_APPROVAL, execution_id="exec-1")
    [asked] = run_events.due(state, now=AT)
    first = run_events.webhook_id(state, 1)
    run_events.record_sending(state, "all", first, asked, now=AT)

    def report(**fields) -> DeliveryReport:
        base = {"endpoint": "all", "webhook_id": first, "event": "approval_requested"}
        return DeliveryReport(**{**base, "status": "failing", "attempts": 1, **fields})

    assert run_events.record_report(state, report(code=503), now=AT) is None
    assert "attempt 1 reported after attempt 1" in run_events.record_report(state, report(), now=AT)
    assert "attempt 9 reported" in run_events.record_report(state, report(attempts=9), now=AT)
    assert "no delivery evt_exec-1_2" in run_events.record_report(
        state, report(webhook_id="evt_exec-1_2", attempts=2), now=AT
    )
    # digits `int` refuses ("²" is one to `isdigit`) or reads slowly: refused, not raised
    for hostile in ("evt_exec-1_\u00b2", "evt_exec-1_\u0663", "evt_" + "9" * 290):
        why = run_events.record_report(state, report(webhook_id=hostile, attempts=2), now=AT)
        assert why == f"no delivery {hostile} of this run"
    # a flood of delivered entries pushes the failing one out... it stays; delivered go first
    for n in range(DELIVERIES_KEPT + 5):
        run_events.record_sending(state, f"e{n}", f"evt_exec-1_{n + 2}", asked, now=AT)
        state.webhook_deliveries[-1].status = "delivered"
    assert len(state.webhook_deliveries) == DELIVERIES_KEPT
    assert first in [d.webhook_id for d in state.webhook_deliveries]
    # one evicted anyway still comes back with its final report
    state.webhook_deliveries = []
    assert run_events.record_report(state, report(status="gave_up", attempts=2), now=AT) is None
    [back] = state.webhook_deliveries
    assert (back.status, back.attempts) == ("gave_up", 2)


def test_a_secret_may_come_from_a_mounted_file(tmp_path):
    mounted = tmp_path / "hook-secret"
    mounted.write_text(SECRET + "\n")
    [found] = parse(
        [GOOD], {"HOOK_FILE": str(mounted), "AGENT_WEBHOOK_ALLOW": "127.0.0.1"}
    ).values()
    assert found.secrets == (SECRET,)


def test_the_worker_s_startup_line_names_where_an_endpoint_points_not_its_secret_path():
    from durable_agents.webhooks import describe

    url = "https://hooks.example.com:8443/services/T0/B0/s3cr3t"
    line = describe({"chat": Endpoint("chat", url, ("run_finished",), (SECRET,))})
    assert line == "worker: webhooks: chat -> https://hooks.example.com:8443 (run_finished)"
    assert "s3cr3t" not in line and SECRET not in line


def _request() -> DeliveryRequest:
    return DeliveryRequest(
        endpoint="a",
        webhook_id="r:1",
        event={"type": "run_finished"},
        attempt=1,
        first_try_at=datetime.now(UTC),
    )


@pytest.mark.parametrize(
    ("host", "named"),
    [("hooks.invalid", "hooks.invalid"), ("bücher.invalid", "xn--bcher-kva.invalid")],
)
async def test_a_delivery_connects_to_the_address_checked_and_names_the_host(host, named):
    # The check's resolver says 127.0.0.1 for a name the system cannot resolve
    # (.invalid): delivered, so the connection went to the address checked, not to a
    # second lookup of the name (which may answer another address: DNS rebinding). An
    # internationalised name is named in its ASCII form.
    with WebhookReceiver(SECRET) as receiver:
        hook = Endpoint("a", f"http://{host}:{receiver.port}/h", ("x",), (SECRET,))
        allow = AllowList.parse("127.0.0.0/8")
        result = await deliver(hook, _request(), allow, resolve=lambda host: ["127.0.0.1"])
        assert (result.outcome, result.error) == ("delivered", None)
        [delivery] = receiver.deliveries
    assert delivery.headers["host"] == f"{named}:{receiver.port}"


async def test_an_address_that_refuses_is_skipped_and_a_refused_check_posts_nothing():
    with WebhookReceiver(SECRET) as receiver:
        hook = Endpoint("a", f"http://hooks.invalid:{receiver.port}/h", ("x",), (SECRET,))
        allow = AllowList.parse("127.0.0.0/8")
        # nothing listens on 127.0.0.2 (the receiver is bound to 127.0.0.1 only)
        both = await deliver(hook, _request(), allow, resolve=lambda h: ["127.0.0.2", "127.0.0.1"])
        assert both.outcome == "delivered" and len(receiver.deliveries) == 1
        none = await deliver(hook, _request(), allow, resolve=lambda h: ["127.0.0.2"])
        assert none.outcome == "retry" and "ConnectError" in (none.error or "")
        assert "/h" not in (none.error or "")  # the path may be a credential
        # one address of the name is not allowed: nothing is posted, to any of them
        mixed = await deliver(hook, _request(), allow, resolve=lambda h: ["127.0.0.1", "10.0.0.1"])
        assert mixed.outcome == "retry" and "10.0.0.1" in (mixed.error or "")
        assert len(receiver.deliveries) == 1


def test_a_pinned_url_keeps_port_path_query_and_brackets_ipv6():
    assert _pinned("https://h.example:8443/a?b=1", "10.0.0.1") == "https://10.0.0.1:8443/a?b=1"
    assert _pinned("http://h.example/a", "fe80::1%eth0") == "http://[fe80::1%25eth0]/a"
    assert _pinned("http://[::1]:9/a", "::1") == "http://[::1]:9/a"


async def test_an_https_delivery_to_the_address_checked_still_names_the_host_in_tls(tmp_path):
    # A TLS server that records the name the client asks for (SNI; Python checks the
    # certificate against the same name): the host's, not the address connected to.
    issued, _, _ = _issue(tmp_path, "ca")  # self-signed: the client refuses it after the hello
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(issued.cert, issued.key)
    asked: list[str | None] = []
    context.sni_callback = lambda _socket, name, _context: asked.append(name)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def serve_one() -> None:
            connection, _ = listener.accept()
            with contextlib.suppress(ssl.SSLError, OSError):
                context.wrap_socket(connection, server_side=True).close()
            connection.close()

        server = threading.Thread(target=serve_one, daemon=True)
        server.start()
        hook = Endpoint("a", f"https://hooks.invalid:{port}/h", ("x",), (SECRET,))
        allow = AllowList.parse("127.0.0.0/8")
        result = await deliver(hook, _request(), allow, resolve=lambda host: ["127.0.0.1"])
        server.join(timeout=10)
    assert asked == ["hooks.invalid"]
    assert result.outcome == "retry" and "CERTIFICATE_VERIFY_FAILED" in (result.error or "")
