"""kill -9 of the worker delivering a webhook: the attempt times out, another worker
delivers the event again with the same `webhook-id` (receivers deduplicate by it)."""

from __future__ import annotations

import json
import time

import pytest
from durable_agents.workflows.webhook_payloads import DeliveryReport

from tests.chaos.harness import wait_until
from tests.chaos.runs import start
from tests.support.runs import state_of
from tests.support.webhook_receiver import Answer, WebhookReceiver

SECRET = "whsec_" + "Y2hhb3Mtd2ViaG9vay1zZWNyZXQtMDEyMzQ1Njc4"


@pytest.mark.chaos_slow
async def test_a_delivery_cut_by_kill_9_is_delivered_by_another_worker_with_the_same_id(
    client, workers, monkeypatch, tmp_path, report
):
    with WebhookReceiver(SECRET) as receiver:
        receiver.answer(Answer(200, delay=8.0))  # held while its worker is killed
        hooks = tmp_path / "webhooks.json"
        hooks.write_text(
            json.dumps(
                [
                    {
                        "name": "hooks",
                        "url": receiver.url,
                        "events": ["run_finished"],
                        "secret_env": "CHAOS_HOOK_SECRET",
                    }
                ]
            )
        )
        monkeypatch.setenv("AGENT_WEBHOOKS", str(hooks))
        monkeypatch.setenv("AGENT_WEBHOOK_ALLOW", "127.0.0.1")
        monkeypatch.setenv("CHAOS_HOOK_SECRET", SECRET)
        first = await workers.start("a")
        handle = await start(client, workers.task_queue, "no plan")
        await handle.result()
        await wait_until(lambda: receiver.arrived, 30, "the delivery's first attempt")
        killed_at = await first.kill()
        await workers.start("b")
        await wait_until(lambda: len(receiver.arrived) >= 2, 90, "the attempt on worker b")
        again = time.time() - killed_at
        state_id = receiver.arrived[0]
        assert receiver.arrived[:2] == [state_id, state_id]  # the same webhook-id
        # The delivery's workflow id has a part only the workers' gate keys make
        # (workflows.secret_ids): the run's state records it.
        [delivery] = (await state_of(handle)).webhook_deliveries
        assert delivery.workflow_id.startswith(f"{state_id}_hooks~")
        child = client.get_workflow_handle(delivery.workflow_id, result_type=DeliveryReport)
        done = await child.result()
        assert (done.status, done.attempts) == ("delivered", 2)
        report.add(
            "kill -9 of the worker delivering a webhook",
            "delivered again by the other worker, same webhook-id",
            f"second attempt {again:.0f} s after the kill (no heartbeat: the "
            "30 s attempt timeout, then 5 s)",
        )
