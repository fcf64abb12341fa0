"""The one periodic runnable (``runtime.periodic.Periodic``), driven by a manual timer: no test sleeps.

Every "every N seconds" loop of the package is one of these; a test here moves the timer and
watches the passes, so intervals of minutes are checked in milliseconds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from kustodian.runtime import Manager, Periodic
from kustodian.testing.clock import ManualTimer
from tests.support import wait_for


class Passes:
    """A body that counts its passes and can be told to fail."""

    def __init__(self) -> None:
        self.count = 0
        self.fail_next = False
        self.ran = threading.Event()

    def __call__(self) -> None:
        self.count += 1
        self.ran.set()
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("a bad pass")


@pytest.fixture
def timer() -> ManualTimer:
    return ManualTimer()


@pytest.fixture
def running() -> Iterator[list[Periodic]]:
    loops: list[Periodic] = []
    yield loops
    for loop in loops:
        loop.stop()


def start(running: list[Periodic], loop: Periodic) -> Periodic:
    running.append(loop)
    loop.start()
    return loop


def test_passes_come_every_interval_and_only_when_the_timer_has_moved_that_far(
        timer: ManualTimer, running: list[Periodic]) -> None:
    body = Passes()
    start(running, Periodic("beat", body, interval=60.0, timer=timer))
    timer.wait_for_waits(1)
    assert body.count == 1  # immediate: the first pass at once
    timer.advance(59.0)
    timer.wait_for_waits(1)
    assert body.count == 1 and timer.sleepers == 1  # not due yet: still the same wait
    timer.advance(1.0)
    timer.wait_for_waits(2)
    assert body.count == 2
    assert timer.waits == [60.0, 60.0]


def test_not_immediate_waits_one_interval_first(timer: ManualTimer, running: list[Periodic]) -> None:
    body = Passes()
    start(running, Periodic("resync", body, interval=600.0, immediate=False, timer=timer))
    timer.wait_for_waits(1)
    assert body.count == 0
    timer.advance(600.0)
    timer.wait_for_waits(2)
    assert body.count == 1


def test_a_failing_pass_is_logged_and_the_loop_goes_on(timer: ManualTimer, running: list[Periodic],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    body = Passes()
    body.fail_next = True
    start(running, Periodic("monitor", body, interval=1.0, timer=timer))
    timer.wait_for_waits(1)
    assert "monitor: a pass failed" in caplog.text and "RuntimeError: a bad pass" in caplog.text
    timer.advance(1.0)
    timer.wait_for_waits(2)
    assert body.count == 2


def test_wake_runs_the_next_pass_now(timer: ManualTimer, running: list[Periodic]) -> None:
    body = Passes()
    loop = start(running, Periodic("monitor", body, interval=3600.0, timer=timer))
    timer.wait_for_waits(1)
    loop.wake()
    timer.wait_for_waits(2)
    assert body.count == 2 and timer.monotonic() == 1000.0  # no time passed


def test_jitter_stretches_each_wait_within_its_share(timer: ManualTimer, running: list[Periodic]) -> None:
    start(running, Periodic("spread", lambda: None, interval=10.0, jitter=0.5, timer=timer))
    for n in range(2, 7):
        timer.advance(15.0)
        timer.wait_for_waits(n)
    assert all(10.0 <= w <= 15.0 for w in timer.waits), timer.waits
    assert len(set(timer.waits)) > 1  # jittered, not one fixed stretch


def test_an_interval_function_is_asked_after_each_pass(timer: ManualTimer, running: list[Periodic]) -> None:
    complete = [False]
    start(running, Periodic("metrics", lambda: None, interval=lambda: 30.0 if complete[0] else 1.0,
                            timer=timer))
    timer.wait_for_waits(1)
    complete[0] = True
    timer.advance(1.0)
    timer.wait_for_waits(2)
    assert timer.waits == [1.0, 30.0]


def test_a_fixed_rate_loop_counts_its_interval_from_the_start_of_a_pass(
        timer: ManualTimer, running: list[Periodic]) -> None:
    def slow() -> None:
        timer.advance(2.0)  # the pass itself took two seconds

    start(running, Periodic("probe", slow, interval=5.0, sliding=False, timer=timer))
    timer.wait_for_waits(1)
    assert timer.waits == [3.0]


def test_stop_ends_the_wait_at_once_and_a_long_pass_sees_it(timer: ManualTimer) -> None:
    seen: list[bool] = []
    inside = threading.Event()
    release = threading.Event()
    loop: Periodic

    def long_pass() -> None:
        inside.set()
        release.wait(10)
        seen.append(loop.stopping.is_set())

    loop = Periodic("long", long_pass, interval=3600.0, timer=timer, join_timeout=10)
    loop.start()
    assert inside.wait(10)
    stopper = threading.Thread(target=loop.stop)
    stopper.start()
    wait_for(loop.stopping.is_set, "stop() to be told")
    release.set()
    stopper.join(10)
    assert seen == [True] and not loop.alive()


@pytest.mark.parametrize(("interval", "jitter"), [(0.0, 0.0), (-1.0, 0.0), (1.0, 1.5)],
                         ids=["zero-interval", "negative-interval", "jitter-over-one"])
def test_a_loop_that_would_spin_or_stretch_without_bound_is_refused(interval: float, jitter: float) -> None:
    with pytest.raises(ValueError, match=r"interval must be positive|jitter is a share"):
        Periodic("bad", lambda: None, interval=interval, jitter=jitter)


def test_the_manager_starts_a_leader_periodic_after_the_caches_and_stops_it(timer: ManualTimer) -> None:
    body = Passes()
    manager = Manager(None, name="periodic")
    manager.add_runnable(Periodic("timer", body, interval=60.0, timer=timer))
    assert manager.describe() == [("timer", True)]
    assert manager.start()
    assert body.ran.wait(10)
    manager.stop_acting()
    assert not manager.runnables[0].alive()  # type: ignore[attr-defined]
