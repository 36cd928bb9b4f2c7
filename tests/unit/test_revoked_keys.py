"""The check a worker makes of the keys that signed a call's approvals before the call
acts (`activities.revoked_keys`), here on an MCP call's request as `temporalio-mcp`
hands it to its `call-tool` activity."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from durable_agents.activities import revoked_keys
from durable_agents.workflows import contract
from temporalio.exceptions import ApplicationError

from durable_agents.signing import Trust
from tests.support.approver_keys import ALICE, BOB

TRUSTED = f"{ALICE.key_id} {ALICE.public().public_key}"
EXPIRED = ALICE.public().model_copy(update={"not_after": datetime(2000, 1, 1, tzinfo=UTC)})


def request(keys: object) -> dict:
    meta = {contract.MCP_IDEMPOTENCY_KEY: "run:c1", contract.MCP_APPROVAL_KEYS: keys}
    return {"name": "delete_ticket", "arguments": {}, "meta": meta}


def test_trusted_keys_are_taken_out_before_the_server_sees_the_request():
    sent = request([TRUSTED])
    revoked_keys.check_mcp_call(Trust(approver_keys=[ALICE.public()]), [sent])
    assert sent["meta"] == {contract.MCP_IDEMPOTENCY_KEY: "run:c1"}


@pytest.mark.parametrize(
    "trust, keys, named",
    [
        (Trust(approver_keys=[BOB.public()]), [TRUSTED], ALICE.key_id),  # removed
        (  # past its not_after
            Trust(
                approver_keys=[
                    ALICE.public().model_copy(
                        update={"not_after": datetime(2000, 1, 1, tzinfo=UTC)}
                    )
                ]
            ),
            [TRUSTED],
            ALICE.key_id,
        ),
        (Trust(approver_keys=[ALICE.public()]), [f"{ALICE.key_id} {'A' * 43}"], ALICE.key_id),
        (Trust(approver_keys=[ALICE.public()]), "alice-test", "alice-test"),  # not a list
        (Trust(approver_keys=[ALICE.public()]), [7], "[7]"),
        (None, [TRUSTED], ALICE.key_id),  # a worker with nothing to check against
    ],
)
def test_a_key_not_trusted_now_refuses_the_call_for_good(trust, keys, named):
    with pytest.raises(ApplicationError) as refused:
        revoked_keys.check_mcp_call(trust, [request(keys)])
    assert refused.value.type == contract.ERROR_APPROVAL_KEY_REVOKED
    assert refused.value.non_retryable and named in refused.value.message


def test_a_request_without_keys_is_left_as_it_is():
    sent = {"name": "lookup", "arguments": {}, "meta": {contract.MCP_IDEMPOTENCY_KEY: "k"}}
    revoked_keys.check_mcp_call(None, [sent])
    assert sent["meta"] == {contract.MCP_IDEMPOTENCY_KEY: "k"}
    revoked_keys.check_mcp_call(None, [{"name": "lookup", "meta": None}])
    revoked_keys.check_mcp_call(None, [])
