"""An allow is sent only once a round trip that started after the review arrived succeeded, and is
then decided again from the caches as they are (issue 32); a refusal needs no round trip.  The
round trips here are a fake (``ApiLiveness`` over a callable); the real API server, behind a
proxy that drops every byte, is in ``tests/e2e/test_deletion_guard_blackhole.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from kustodian.kube.cache import WatchCache
from kustodian.kube.liveness import ApiLiveness
from kustodian.webhook.features.deletion_guard import DeletionGuard
from kustodian.webhook.registry import PendingAnswer
from kustodian.webhook.review import Answer
from tests.policy.deletion.builders import blockpool, rbd_pv
from tests.webhook.test_deletion_guard_freshness import POOL, review, with_meta, world


class RoundTrips:
    def __init__(self) -> None:
        self.calls = 0
        self.fail = False
        self.during: list[Callable[[], object]] = []  # run inside the next round trip (a watch event)

    def __call__(self, timeout: float) -> None:
        self.calls += 1
        for step in self.during:
            step()
        self.during.clear()
        if self.fail:
            raise OSError("no route to host")


def answer_of(got: Answer | PendingAnswer) -> Answer:
    return got.compute() if isinstance(got, PendingAnswer) else got


class Guarded(NamedTuple):
    guard: DeletionGuard
    caches: dict[str, WatchCache]
    trips: RoundTrips
    pool: dict[str, Any]  # CephBlockPool "empty": no dependents


@pytest.fixture
def guarded() -> Guarded:
    pool = with_meta(blockpool("empty"))
    guard, caches = world({POOL: [pool], "PersistentVolume": [with_meta(rbd_pv("pv-1"))]})
    trips = RoundTrips()
    guard.liveness = ApiLiveness(trips)
    return Guarded(guard, caches, trips, pool)


def test_an_allow_waits_for_a_round_trip_even_when_memoised(guarded: Guarded) -> None:
    guard, _, trips, pool = guarded
    first = guard.on_delete(review("CephBlockPool", pool))
    assert isinstance(first, PendingAnswer) and trips.calls == 0  # never on the event loop
    assert first.compute().allowed and trips.calls == 1
    again = guard.on_delete(review("CephBlockPool", pool))
    assert isinstance(again, PendingAnswer)  # memoised, and still not sent without a new round trip
    assert again.compute().allowed and trips.calls == 2


def test_an_allow_without_a_round_trip_is_the_503_naming_the_kinds(guarded: Guarded) -> None:
    guard, _, trips, pool = guarded
    trips.fail = True
    answer = answer_of(guard.on_delete(review("CephBlockPool", pool)))
    assert not answer.allowed and answer.code == 503
    assert "PersistentVolume" in answer.message and "no round trip" in answer.message


def test_a_refusal_needs_no_round_trip(guarded: Guarded) -> None:
    guard, _, trips, _ = guarded
    used = with_meta(blockpool())  # replicapool: pv-1 is on it
    trips.fail = True
    answer = answer_of(guard.on_delete(review("CephBlockPool", used)))
    assert not answer.allowed and answer.code == 403 and "pv-1" in answer.message
    assert trips.calls == 0


def test_the_caches_are_asked_again_after_the_round_trip(guarded: Guarded) -> None:
    """A PV that reached the cache while the round trip was under way is seen: the round trip
    proves the route alive *after* it, so the answer is the one the caches give after it."""
    guard, caches, trips, pool = guarded
    pvs = caches["PersistentVolume"]
    trips.during.append(lambda: pvs._apply("ADDED", pvs._prepare(rbd_pv("pv-late", "empty"))))
    answer = answer_of(guard.on_delete(review("CephBlockPool", pool)))
    assert not answer.allowed and answer.code == 403 and "pv-late" in answer.message
