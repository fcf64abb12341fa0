"""ApiLiveness: a round trip that started after the caller arrived proves the API server alive;
concurrent callers share one; a silent server restarts every cache it feeds (issue 32)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kustodian.kube.liveness import ApiLiveness
from kustodian.runtime import Periodic
from kustodian.testing.clock import ManualTimer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class RoundTrips:
    """Answers (or fails) at the test's command; counts the round trips made."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.calls = 0
        self.fail: Exception | None = None
        self.gate: threading.Event | None = None  # set: a round trip waits for it
        self.entered = threading.Event()

    def __call__(self, timeout: float) -> None:
        self.calls += 1
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(10)
        if self.fail is not None:
            raise self.fail


class FakeCache:
    def __init__(self) -> None:
        self.fresh = True
        self.restarted: list[str] = []
        self.woken = 0

    def restart(self, reason: str) -> None:
        self.fresh = False
        self.restarted.append(reason)

    def retry_now(self) -> None:
        self.woken += 1


def is_silent(live: ApiLiveness) -> bool:
    return live.silent


def liveness(caches: list[Any] | None = None) -> tuple[ApiLiveness, RoundTrips, Clock]:
    clock = Clock()
    trips = RoundTrips(clock)
    return ApiLiveness(trips, caches=lambda: caches or [], clock=clock, silence_limit=6.0), trips, clock


def test_a_round_trip_started_before_the_caller_arrived_does_not_prove_anything() -> None:
    live, trips, clock = liveness()
    assert live.prove(clock.now, 1.0)
    assert trips.calls == 1
    assert live.prove(clock.now, 1.0)  # the same instant: that round trip started at or after it
    assert trips.calls == 1
    clock.now += 0.001
    assert live.prove(clock.now, 1.0)  # later: a new round trip is needed
    assert trips.calls == 2


def test_a_failed_round_trip_is_no_proof_and_says_why() -> None:
    live, trips, clock = liveness()
    trips.fail = OSError("connection refused")
    assert not live.prove(clock.now, 1.0)
    assert "connection refused" in live.last_error
    assert trips.calls == 2  # one that fails at once leaves time for a second
    assert not live.prove(clock.now, 0.0)  # no time left: not proven, and no round trip tried
    assert trips.calls == 2


def test_a_second_round_trip_proves_after_one_that_failed_at_once() -> None:
    live, trips, clock = liveness()
    failures = iter([OSError("server closed the pooled connection")])

    def once(timeout: float) -> None:
        trips.calls += 1
        error = next(failures, None)
        if error is not None:
            raise error

    live._round_trip = once
    assert live.prove(clock.now, 1.0)
    assert trips.calls == 2


def test_concurrent_callers_that_arrived_before_a_round_trip_started_share_it() -> None:
    live, trips, clock = liveness()
    trips.gate = threading.Event()
    arrived = clock.now
    results: list[bool] = []
    first = threading.Thread(target=lambda: results.append(live.prove(arrived, 5.0)))
    first.start()
    assert trips.entered.wait(5)
    others = [threading.Thread(target=lambda: results.append(live.prove(arrived, 5.0))) for _ in range(5)]
    for t in others:
        t.start()
    trips.gate.set()
    for t in (first, *others):
        t.join(5)
    assert results == [True] * 6
    assert trips.calls == 1  # single flight


def test_a_caller_that_arrives_while_an_older_round_trip_is_in_flight_waits_for_its_own() -> None:
    live, trips, clock = liveness()
    trips.gate = threading.Event()
    results: list[bool] = []
    first = threading.Thread(target=lambda: results.append(live.prove(clock.now, 5.0)))
    first.start()
    assert trips.entered.wait(5)
    clock.now += 1.0  # arrives after the first round trip started: that one cannot vouch for it
    trips.gate.set()
    assert live.prove(clock.now, 5.0)
    first.join(5)
    assert trips.calls == 2


def test_a_silent_server_restarts_every_cache_once_and_wakes_them_when_it_answers() -> None:
    caches = [FakeCache(), FakeCache()]
    live, trips, clock = liveness(caches)
    assert live.check() and live.problem() is None
    trips.fail = TimeoutError("timed out")
    clock.now += 5.0
    assert not live.check()
    assert not is_silent(live) and all(c.fresh for c in caches)  # 5 s: not yet
    clock.now += 1.5
    live.check()
    assert is_silent(live)
    assert all(len(c.restarted) == 1 and "6.5s" in c.restarted[0] for c in caches)
    problem = live.problem()
    assert problem is not None and "timed out" in problem
    clock.now += 2.0
    live.check()
    assert all(len(c.restarted) == 1 for c in caches)  # once per silence
    trips.fail = None
    assert live.check()
    assert not is_silent(live) and live.problem() is None
    assert all(c.woken == 1 for c in caches)


@pytest.mark.parametrize("ok", [True, False])
def test_the_periodic_probe_checks_every_interval_until_stopped(ok: bool) -> None:
    """As the webhook runs it: ``check`` every ``interval`` from one start to the next."""
    live, trips, clock = liveness()
    if not ok:
        trips.fail = OSError("down")
    timer = ManualTimer()
    probe = Periodic("api-liveness", live.check, live.interval, sliding=False, timer=timer)
    probe.start()
    timer.wait_for_waits(1)
    clock.now += live.interval  # the probe's own clock: a round trip from before counts no more
    timer.advance(live.interval)
    timer.wait_for_waits(2)
    probe.stop()
    assert not probe.alive() and trips.calls == (2 if ok else 4)  # a failing check tries twice
