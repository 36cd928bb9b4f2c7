"""bench.overhead: activity tasks counted from a worker's Prometheus metrics."""

from __future__ import annotations

import pytest

from bench.overhead import activity_tasks

METRICS = """\
# HELP temporal_activity_task_received Activity tasks received
# TYPE temporal_activity_task_received counter
temporal_activity_task_received{eager="true",namespace="default",task_queue="q"} 18
temporal_activity_task_received{eager="false",namespace="default",task_queue="q"} 2
temporal_activity_task_received_total{eager="true",task_queue="other"} 3
temporal_activity_task_received_extra{eager="true"} 100
temporal_workflow_task_queue_poll_succeed{namespace="default"} 40
"""


def test_counts_eager_and_all_activity_tasks_of_every_queue() -> None:
    assert activity_tasks(METRICS) == (21, 23)


def test_no_such_metric_is_none_received() -> None:
    assert activity_tasks('temporal_request{x="y"} 5\n') == (0, 0)


def test_a_garbled_value_is_an_error_not_a_zero() -> None:
    with pytest.raises(ValueError):
        activity_tasks('temporal_activity_task_received{eager="true"} many\n')


def test_every_variant_names_an_option_a_worker_process_knows() -> None:
    from bench import overhead, pollers, tuned_worker

    for variants in (overhead.VARIANTS, pollers.VARIANTS):
        for label, variant in variants.items():
            assert variant.option is None or variant.option in tuned_worker.OPTIONS, label


def test_ours_and_the_floor_run_back_to_back_taking_turns_at_going_first():
    """Their ratio is the judged one: each repetition's pair runs moments apart, and
    every kind still moves through the order."""
    from bench.overhead import FLOOR, LOCAL, OURS, schedule

    kinds = [OURS, LOCAL, FLOOR, "cache-0", "pollers-20"]
    orders = [schedule(kinds, rep) for rep in range(6)]
    for rep, order in enumerate(orders):
        assert sorted(order) == sorted(kinds)
        first = order.index(OURS if rep % 2 == 0 else FLOOR)
        assert order[first + 1] == (FLOOR if rep % 2 == 0 else OURS), order
    assert [order[0] for order in orders[:4]] == [OURS, LOCAL, "cache-0", "pollers-20"]
