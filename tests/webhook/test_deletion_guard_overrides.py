"""Overrides through the webhook: Rook's annotation gets the same Warning event and metric as
Kustodian's, and a memoised "allowed" of an override with a deadline is void once it passes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kustodian.policy.deletion import ALLOW_ANNOTATION
from kustodian.policy.deletion.verdict import ALLOW_UNTIL_ANNOTATION, ROOK_FORCE_ANNOTATION
from kustodian.webhook.features.deletion_guard import DeletionGuard
from kustodian.webhook.registry import PendingAnswer
from kustodian.webhook.review import Answer
from tests.policy.deletion.builders import blockpool, cluster, rbd_pv
from tests.webhook.test_deletion_guard_freshness import POOL, review, with_meta, world

CLUSTER = "CephCluster.ceph.rook.io"


class Recorded:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, obj: Any, event_type: str, reason: str, message: str) -> bool:
        self.events.append((event_type, reason, message))
        return True


def annotated(**annotations: str) -> dict[str, Any]:
    pool = with_meta(blockpool())
    pool["metadata"]["annotations"] = annotations
    return pool


def guard_of(pool: dict[str, Any], clock: list[datetime]) -> tuple[DeletionGuard, Recorded]:
    guard, _ = world({POOL: [pool], CLUSTER: [with_meta(cluster())], "PersistentVolume": [rbd_pv("pv-1")]})
    recorded = Recorded()
    guard.recorder = recorded  # type: ignore[assignment]
    guard.now = guard.memo.now = lambda: clock[0]
    return guard, recorded


def answer(guard: DeletionGuard, pool: dict[str, Any], dry_run: bool = False) -> Answer:
    req = review("CephBlockPool", pool)
    req = req.model_copy(update={"dry_run": dry_run})
    got = guard.on_delete(req)
    return got.compute() if isinstance(got, PendingAnswer) else got


def overrides_metric(guard: DeletionGuard) -> dict[tuple[str, ...], float]:
    family = next(f for f in guard.collect() if f.name == "kustodian_deletion_guard_overrides")
    return {tuple(s.labels.values()): s.value for s in family.samples}


def test_rooks_annotation_gets_the_same_event_and_metric_as_kustodians() -> None:
    for annotation in (ALLOW_ANNOTATION, ROOK_FORCE_ANNOTATION):
        pool = annotated(**{annotation: "true"})
        guard, recorded = guard_of(pool, [datetime(2026, 11, 26, tzinfo=UTC)])
        got = answer(guard, pool)
        assert got.allowed and got.warnings and f"({annotation}=true)" in got.warnings[0]
        assert [(t, r) for t, r, _ in recorded.events] == [("Warning", "DeletionOverridden")]
        assert overrides_metric(guard) == {(POOL, annotation): 1.0}


def test_a_memoised_override_expires_with_its_deadline() -> None:
    clock = [datetime(2026, 11, 30, 23, 59, tzinfo=UTC)]
    pool = annotated(**{ALLOW_ANNOTATION: "true", ALLOW_UNTIL_ANNOTATION: "2026-12-01T00:00:00Z"})
    guard, _ = guard_of(pool, clock)
    assert answer(guard, pool, dry_run=True).allowed
    assert answer(guard, pool, dry_run=True).allowed  # from the memo
    clock[0] += timedelta(minutes=1)
    late = answer(guard, pool, dry_run=True)
    assert not late.allowed and "expired at 2026-12-01T00:00:00+00:00" in late.message
    assert overrides_metric(guard) == {}  # dry runs are not counted
