"""The work queue and workers: dedup, no concurrent passes per key, delays, backoff, requeue."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from controllers.runtime import Controller, ControllerMetrics, Result
from kube.errors import Conflict


def wait(cond: Callable[[], bool], timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline
        time.sleep(0.005)


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

    ctl = Controller("t", reconcile, workers=4).start()
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
        time.sleep(0.05)
        assert runs == Counter({"a": 2, "b": 1}) and overlap == []
    finally:
        ctl.stop()


def test_requeue_after_and_enqueue_after_delay_the_key() -> None:
    times: list[float] = []
    start = time.monotonic()

    def reconcile(key: str) -> Result:
        times.append(time.monotonic() - start)
        return Result(requeue_after=0.1) if len(times) == 1 else Result()

    ctl = Controller("t", reconcile).start()
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
    ctl = Controller("t", reconcile, base_backoff=0.02, metrics=ControllerMetrics(registry)).start()
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


def test_a_bug_is_logged_and_retried_not_dropped(caplog: object) -> None:
    calls: list[int] = []

    def reconcile(key: str) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("bug")

    ctl = Controller("t", reconcile, base_backoff=0.01).start()
    try:
        ctl.enqueue("k")
        wait(lambda: len(calls) == 2)
    finally:
        ctl.stop()
