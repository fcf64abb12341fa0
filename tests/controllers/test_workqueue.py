"""The work queue and workers: dedup, no concurrent passes per key, delays, backoff, requeue."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest
from prometheus_client import CollectorRegistry

from kustodian.errors import Terminal
from kustodian.kube.errors import Conflict, Forbidden, Invalid, Unavailable
from kustodian.runtime.workqueue import ControllerMetrics, Result, WorkQueue
from tests.support import wait_for


def wait(cond: Callable[[], bool], timeout: float = 5) -> None:
    wait_for(cond, "the work queue to reach the expected state", timeout, poll=0.005)


def test_keys_queued_many_times_run_once_and_never_concurrently() -> None:
    runs: Counter[str] = Counter()
    running: set[str] = set()
    overlap: list[str] = []
    gate = threading.Event()
    lock = threading.Lock()

    def reconcile(key: str) -> None:
        with lock:
            if key in running:
                overlap.append(key)
            running.add(key)
        gate.wait(2)
        with lock:
            running.discard(key)
            runs[key] += 1

    ctl = WorkQueue("t", reconcile, workers=4).start()
    try:
        for _ in range(50):
            ctl.enqueue("a")
        wait(lambda: "a" in running)
        for _ in range(50):
            ctl.enqueue("a")  # while a is running: one more pass afterwards, not 50, not in parallel
        ctl.enqueue("b")
        gate.set()
        wait(lambda: runs["a"] == 2 and runs["b"] == 1)
        assert ctl.wait_idle(2)
        wait(lambda: ctl.pending() == 0)  # nothing ready, delayed or running: no pass can follow
        assert runs == Counter({"a": 2, "b": 1}) and overlap == []
    finally:
        ctl.stop()


def test_requeue_after_and_enqueue_after_delay_the_key() -> None:
    times: list[float] = []
    start = time.monotonic()

    def reconcile(key: str) -> Result:
        times.append(time.monotonic() - start)
        return Result(requeue_after=0.1) if len(times) == 1 else Result()

    ctl = WorkQueue("t", reconcile).start()
    try:
        ctl.enqueue_after("k", 0.05)
        wait(lambda: len(times) == 2)
        assert 0.05 <= times[0] < 0.5 and times[1] - times[0] >= 0.1
    finally:
        ctl.stop()


def test_temporary_errors_retry_with_growing_backoff_and_metrics_count_them() -> None:
    attempts: list[float] = []

    def reconcile(key: str) -> None:
        attempts.append(time.monotonic())
        if len(attempts) < 4:
            raise Conflict(409, "Conflict", "stale")

    registry = CollectorRegistry()
    ctl = WorkQueue("t", reconcile, base_backoff=0.02, metrics=ControllerMetrics(registry)).start()
    try:
        ctl.enqueue("k")
        wait(lambda: len(attempts) == 4)
        gaps = [b - a for a, b in itertools.pairwise(attempts)]
        assert gaps[0] >= 0.02 and gaps[1] >= 0.04 and gaps[2] >= 0.08
        assert registry.get_sample_value("kustodian_controller_reconcile_total",
                                         {"controller": "t", "result": "retry"}) == 3.0
        wait(lambda: registry.get_sample_value("kustodian_controller_reconcile_total",
                                               {"controller": "t", "result": "success"}) == 1.0)
    finally:
        ctl.stop()


@pytest.mark.parametrize("error", [RuntimeError("bug"), Forbidden(403, "Forbidden", "no"),
                                   Invalid(422, "Invalid", "bad"), KeyError("oops")],
                         ids=["bug", "forbidden", "invalid", "key-error"])
def test_any_error_is_retried_with_backoff_until_it_succeeds(error: Exception) -> None:
    """controller-runtime's contract (issue 13): an unexpected error, a 422 or a 403 seen once
    requeues the key; nothing is lost because one pass failed."""
    calls: list[float] = []

    def reconcile(key: str) -> None:
        calls.append(time.monotonic())
        if len(calls) <= 2:
            raise error

    registry = CollectorRegistry()
    ctl = WorkQueue("t", reconcile, base_backoff=0.02, metrics=ControllerMetrics(registry)).start()
    try:
        ctl.enqueue("k")
        wait(lambda: len(calls) == 3)
        gaps = [b - a for a, b in itertools.pairwise(calls)]
        assert gaps[0] >= 0.02 and gaps[1] >= 0.04  # backoff, not a hot loop
        assert registry.get_sample_value("kustodian_controller_reconcile_total",
                                         {"controller": "t", "result": "retry"}) == 2.0
        wait(lambda: registry.get_sample_value("kustodian_controller_reconcile_total",
                                               {"controller": "t", "result": "success"}) == 1.0)
        assert registry.get_sample_value("kustodian_controller_terminal_errors_total", {"controller": "t"}) is None
    finally:
        ctl.stop()


@pytest.mark.parametrize("error", [Terminal("the object can never be made valid")], ids=["terminal"])
def test_a_terminal_error_is_logged_once_counted_and_dropped_until_enqueued_again(
        error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def reconcile(key: str) -> None:
        calls.append(key)
        if len(calls) == 1:
            raise error

    registry = CollectorRegistry()
    ctl = WorkQueue("t", reconcile, base_backoff=0.01, metrics=ControllerMetrics(registry)).start()
    try:
        ctl.enqueue("k")
        wait(lambda: registry.get_sample_value("kustodian_controller_reconcile_total",
                                               {"controller": "t", "result": "error"}) == 1.0)
        wait(lambda: ctl.pending() == 0)  # no retry planned: none can ever run without a new enqueue
        assert calls == ["k"] and ctl.pending() == 0
        assert "failed permanently" in caplog.text and caplog.text.count("failed permanently") == 1
        assert registry.get_sample_value("kustodian_controller_terminal_errors_total", {"controller": "t"}) == 1.0
        ctl.enqueue("k")  # level-based: the next event or resync brings it back
        wait(lambda: len(calls) == 2)
    finally:
        ctl.stop()


@pytest.mark.parametrize("error", [Forbidden(403, "Forbidden", "no"), Invalid(422, "Invalid", "bad")],
                         ids=["forbidden", "invalid"])
def test_a_persistent_forbidden_or_invalid_is_given_up_after_a_few_attempts(
        error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def reconcile(key: str) -> None:
        calls.append(key)
        raise error

    registry = CollectorRegistry()
    ctl = WorkQueue("t", reconcile, base_backoff=0.005, give_up_after=4,
                     metrics=ControllerMetrics(registry)).start()
    try:
        ctl.enqueue("k")
        wait(lambda: registry.get_sample_value("kustodian_controller_terminal_errors_total",
                                               {"controller": "t"}) == 1.0)
        wait(lambda: ctl.pending() == 0)  # no retry planned: none can ever run without a new enqueue
        assert len(calls) == 4 and ctl.pending() == 0
        assert caplog.text.count("failed permanently") == 1
    finally:
        ctl.stop()


def test_delayed_adds_keep_one_timer_per_key_the_earliest() -> None:
    runs: list[float] = []
    start = time.monotonic()
    ctl = WorkQueue("t", lambda key: runs.append(time.monotonic() - start), workers=2).start()
    try:
        for _ in range(100):
            ctl.enqueue_after("k", 5)
        ctl.enqueue_after("k", 0.05)  # earlier: replaces the 5 s timer
        ctl.enqueue_after("k", 3)  # later: ignored, the 0.05 s pass re-decides
        assert ctl.pending() == 1
        wait(lambda: len(runs) == 1)
        assert 0.05 <= runs[0] < 1
        wait(lambda: ctl.pending() == 0)  # the pass is over and no other timer is left for "k"
        assert len(runs) == 1 and ctl.pending() == 0
    finally:
        ctl.stop()


def test_replaced_timers_never_fire_when_their_time_comes() -> None:
    """The same story on the queue's injected clock, moved by hand past every timer it dropped:
    the real-time test above cannot wait 5 s to see the replaced timers stay silent."""
    now = [0.0]
    runs: list[tuple[str, float]] = []
    ctl = WorkQueue("t", lambda key: runs.append((key, now[0])), workers=1, clock=lambda: now[0]).start()
    try:
        for _ in range(100):
            ctl.enqueue_after("k", 5)
        ctl.enqueue_after("k", 0.05)
        ctl.enqueue_after("k", 3)
        assert ctl.wait_idle(5) and runs == []  # not due on the queue's clock
        now[0] = 0.05
        wait(lambda: ctl.pending() == 0)
        assert runs == [("k", 0.05)]
        now[0] = 10.0  # past the 3 s and 5 s timers that were replaced
        ctl.enqueue("other")  # wakes the worker: it looks at its timers with the new time first
        wait(lambda: ctl.pending() == 0)
        assert runs == [("k", 0.05), ("other", 10.0)]
    finally:
        ctl.stop()


def test_enqueue_now_runs_a_delayed_key_at_once_and_the_timer_does_not_run_it_twice() -> None:
    runs: list[str] = []
    ctl = WorkQueue("t", runs.append).start()
    try:
        ctl.enqueue_after("k", 0.1)
        ctl.enqueue("k")
        wait(lambda: len(runs) >= 1)
        wait(lambda: ctl.pending() == 0)  # the planned pass has run too, and nothing is left to run
        assert runs == ["k", "k"]  # the immediate pass, then the planned one (it may re-decide)
    finally:
        ctl.stop()


def test_temporary_backoff_is_capped_and_reset_by_a_success() -> None:
    attempts: list[float] = []

    def reconcile(key: str) -> None:
        attempts.append(time.monotonic())
        if len(attempts) < 6:
            raise Unavailable("503 try later", 503)

    ctl = WorkQueue("t", reconcile, base_backoff=0.01, max_backoff=0.02).start()
    try:
        ctl.enqueue("k")
        wait(lambda: len(attempts) == 6)
        gaps = [b - a for a, b in itertools.pairwise(attempts)]
        assert max(gaps) < 0.2  # 0.01, 0.02, 0.02, ...: never 0.16
    finally:
        ctl.stop()


def test_stop_ends_every_worker_and_leaves_queued_keys_alone() -> None:
    runs: list[str] = []
    ctl = WorkQueue("t", runs.append, workers=3).start()
    ctl.stop()
    assert not any(t.is_alive() for t in threading.enumerate() if t.name.startswith("t-"))
    ctl.enqueue("k")
    assert ctl.pending() == 1  # queued and left alone: no worker is alive to take it
    assert runs == []


def test_queue_depth_and_wait_are_measured_per_controller() -> None:
    registry = CollectorRegistry()
    gate = threading.Event()

    def reconcile(key: str) -> None:
        gate.wait(5)

    ctl = WorkQueue("depth", reconcile, workers=1, metrics=ControllerMetrics(registry))

    def sample(name: str) -> float | None:
        return registry.get_sample_value(name, {"controller": "depth"})

    for key in ("a", "b", "c"):
        ctl.enqueue(key)
    assert sample("kustodian_workqueue_depth") == 3.0
    ctl.start()
    try:
        wait(lambda: sample("kustodian_workqueue_depth") == 2.0)  # "a" taken, blocked in reconcile
        assert sample("kustodian_workqueue_queue_duration_seconds_count") == 1.0
        gate.set()
        assert ctl.wait_idle(5)
        assert sample("kustodian_workqueue_depth") == 0.0
        assert sample("kustodian_workqueue_queue_duration_seconds_count") == 3.0
        assert (sample("kustodian_workqueue_queue_duration_seconds_sum") or 0) > 0
    finally:
        ctl.stop()
