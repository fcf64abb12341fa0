"""The second look, written once: after the round trip that proves the API server reachable, a
provider's DELETE and a Namespace's DELETE are decided again against the same clock as the
first look, and an allow by an override gets the same warning and Event either way.

The clock the guard is handed is set *before* the override's deadline while the wall clock is
long past it: a look that used no clock (an override with a deadline then never applies) or
the wall clock (expired) would refuse, so only a look against the guard's own clock allows.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from kustodian.kube.liveness import ApiLiveness
from kustodian.policy.deletion import ALLOW_ANNOTATION
from kustodian.policy.deletion.verdict import ALLOW_UNTIL_ANNOTATION
from kustodian.webhook.features.deletion_guard import DeletionGuard
from kustodian.webhook.registry import PendingAnswer
from kustodian.webhook.review import AdmissionRequest, Answer
from tests.policy.deletion.builders import NS, blockpool, rbd_pv
from tests.webhook.test_deletion_guard_freshness import POOL, review, with_meta, world
from tests.webhook.test_deletion_guard_overrides import Recorded, overrides_metric
from tests.webhook.test_deletion_guard_proof import RoundTrips

NOW = datetime(2019, 12, 31, 23, 0, tzinfo=UTC)  # the guard's clock: an hour before the deadline
DEADLINE = "2020-01-01T00:00:00Z"  # long past by the wall clock
NAMESPACE: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "uid": "uid-ns",
                                                                   "resourceVersion": "7"}}


def guarded(*, proven: bool, terminating: bool = False) -> tuple[DeletionGuard, Recorded, RoundTrips,
                                                                  dict[str, Any]]:
    """A pool in ``NS`` with an expiring override and a PV (cluster-wide: outside ``NS``) on it."""
    pool = with_meta(blockpool())
    pool["metadata"]["annotations"] = {ALLOW_ANNOTATION: "true", ALLOW_UNTIL_ANNOTATION: DEADLINE}
    namespace = copy.deepcopy(NAMESPACE)
    if terminating:
        namespace["metadata"]["deletionTimestamp"] = "2019-12-31T22:59:00Z"
    guard, _ = world({POOL: [pool], "PersistentVolume": [rbd_pv("pv-1")], "Namespace": [namespace]})
    recorded = Recorded()
    guard.recorder = recorded  # type: ignore[assignment]
    guard.now = lambda: NOW  # one clock for the guard: the memo reads the same
    trips = RoundTrips()
    if proven:
        guard.liveness = ApiLiveness(trips)
    return guard, recorded, trips, pool


def answered(got: Answer | PendingAnswer) -> Answer:
    return got.compute() if isinstance(got, PendingAnswer) else got


def live(kind: str, obj: dict[str, Any], group: str = "ceph.rook.io") -> AdmissionRequest:
    """A DELETE that is no dry run: its Events are written."""
    return review(kind, obj, group).model_copy(update={"dry_run": False})


@pytest.mark.parametrize("proven", [True, False], ids=["with-round-trips", "without-an-api-server"])
def test_a_namespace_teardown_waived_by_an_expiring_override_is_judged_on_the_guards_clock_both_times(
        proven: bool) -> None:
    guard, recorded, trips, _ = guarded(proven=proven)
    answer = answered(guard.on_namespace_delete(live("Namespace", NAMESPACE, group="")))
    assert answer.allowed, answer.message
    assert trips.calls == (1 if proven else 0)  # the waiver is sent once the API server answered
    [warning] = answer.warnings
    assert warning.startswith(f'kustodian: Namespace "{NS}" is being deleted although providers in it')
    assert "pv-1" in warning and "(by u)" in warning
    assert [(t, r) for t, r, _ in recorded.events] == [("Warning", "DeletionOverridden")]
    assert overrides_metric(guard) == {("Namespace", ALLOW_ANNOTATION): 1.0}


def test_the_providers_own_delete_once_its_namespace_is_terminating_says_the_same() -> None:
    guard, recorded, _, pool = guarded(proven=True, terminating=True)
    answer = answered(guard.on_delete(live("CephBlockPool", pool)))
    assert answer.allowed, answer.message
    assert answer.warnings and "(by u)" in answer.warnings[0]
    assert [(t, r) for t, r, _ in recorded.events] == [("Warning", "DeletionOverridden")]


def test_past_the_deadline_on_the_guards_clock_the_teardown_is_refused_on_both_looks() -> None:
    guard, recorded, _, _ = guarded(proven=True)
    guard.now = lambda: datetime(2020, 1, 1, 0, 1, tzinfo=UTC)
    answer = answered(guard.on_namespace_delete(live("Namespace", NAMESPACE, group="")))
    assert not answer.allowed and answer.code == 403 and "pv-1" in answer.message
    assert [r for _, r, _ in recorded.events] == ["DeletionBlocked"]
