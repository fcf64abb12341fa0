"""policy.deletion.refusals: the guard's Events read back over a window (table-driven)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kustodian.policy.deletion.decision import ObjectRef
from kustodian.policy.deletion.refusals import Window, by_mode, event_span, refused_deletes, summary
from kustodian.policy.modes import Mode

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
POOL = ObjectRef("CephBlockPool.ceph.rook.io", "rook-ceph", "replicapool")


def stamp(minutes_ago: float) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def core_event(reason: str, first: float, last: float | None = None, count: int = 1,
               name: str = "replicapool", message: str = "has dependents") -> dict[str, Any]:
    """A core/v1 Event as the guard's recorder writes it (minutes ago)."""
    return {"reason": reason, "message": message, "count": count,
            "firstTimestamp": stamp(first), "lastTimestamp": stamp(first if last is None else last),
            "involvedObject": {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
                               "namespace": "rook-ceph", "name": name}}


def series_event(reason: str, first: float, last: float, count: int) -> dict[str, Any]:
    """An events.k8s.io Event read through core/v1: eventTime plus series, no legacy stamps."""
    return {"reason": reason, "eventTime": stamp(first) .replace("Z", ".000000Z"), "firstTimestamp": None,
            "lastTimestamp": None, "series": {"count": count, "lastObservedTime": stamp(last)},
            "involvedObject": {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
                               "namespace": "rook-ceph", "name": "replicapool"}}


WIN = Window(timedelta(hours=1), NOW, timedelta(hours=1))


@pytest.mark.parametrize(("events", "want"), [
    ([], []),
    ([core_event("DeletionWarned", 10)], [(POOL, Mode.WARN, 1, False)]),
    ([core_event("DeletionAudited", 10), core_event("DeletionAudited", 5)], [(POOL, Mode.AUDIT, 2, False)]),
    # an aggregated Event stands for all its refusals
    ([core_event("DeletionBlocked", 30, 5, count=7)], [(POOL, Mode.ENFORCE, 7, False)]),
    # ended before the window: not counted
    ([core_event("DeletionWarned", 90, 61, count=4)], []),
    # began before the window, ended in it: counted whole, marked approximate
    ([core_event("DeletionWarned", 90, 30, count=4)], [(POOL, Mode.WARN, 4, True)]),
    # events.k8s.io series
    ([series_event("DeletionAudited", 20, 2, 5)], [(POOL, Mode.AUDIT, 5, False)]),
    # two modes over the window (the guard was flipped): one row each, most refusals first
    ([core_event("DeletionWarned", 50), core_event("DeletionBlocked", 10, 1, count=3)],
     [(POOL, Mode.ENFORCE, 3, False), (POOL, Mode.WARN, 1, False)]),
    # someone else's reasons are not the guard's
    ([core_event("FailedMount", 1), core_event("DeletionOverridden", 1)], []),
], ids=["none", "one-warned", "two-audited", "aggregated", "ended-before", "straddling", "series",
        "flipped-mode", "other-reasons"])
def test_refused_deletes(events: list[dict[str, Any]], want: list[tuple[ObjectRef, Mode, int, bool]]) -> None:
    got = refused_deletes(events, WIN)
    assert [(r.provider, r.mode, r.refusals, r.approximate) for r in got] == want


def test_the_latest_message_and_the_span_are_kept() -> None:
    got = refused_deletes([core_event("DeletionWarned", 40, message="old"),
                           core_event("DeletionWarned", 3, message="new")], WIN)
    assert len(got) == 1
    row = got[0]
    assert row.message == "new" and row.effect == "allowed with a warning"
    assert row.first_seen == NOW - timedelta(minutes=40) and row.last_seen == NOW - timedelta(minutes=3)
    assert row.as_dict()["mode"] == "warn" and row.as_dict()["inEnforce"] == "denied"


def test_a_namespace_refusal_is_keyed_by_the_namespace() -> None:
    event = {"reason": "DeletionAudited", "lastTimestamp": stamp(1), "firstTimestamp": stamp(1), "count": 1,
             "involvedObject": {"apiVersion": "v1", "kind": "Namespace", "name": "rook-ceph"}}
    assert [r.provider for r in refused_deletes([event], WIN)] == [ObjectRef("Namespace", "", "rook-ceph")]


@pytest.mark.parametrize(("event", "want"), [
    ({"count": 2, "firstTimestamp": "2026-11-23T11:00:00Z", "lastTimestamp": "2026-11-23T11:30:00Z"},
     (datetime(2026, 11, 23, 11, 0, tzinfo=UTC), datetime(2026, 11, 23, 11, 30, tzinfo=UTC), 2)),
    ({"eventTime": "2026-11-23T11:00:00.000000Z"},
     (datetime(2026, 11, 23, 11, 0, tzinfo=UTC), datetime(2026, 11, 23, 11, 0, tzinfo=UTC), 1)),
    ({"metadata": {"creationTimestamp": "2026-11-23T11:00:00Z"}, "count": 0},
     (datetime(2026, 11, 23, 11, 0, tzinfo=UTC), datetime(2026, 11, 23, 11, 0, tzinfo=UTC), 1)),
    ({"firstTimestamp": "yesterday"}, None),
], ids=["legacy", "event-time-only", "creation-only", "no-time"])
def test_event_span(event: dict[str, Any], want: tuple[datetime, datetime, int] | None) -> None:
    assert event_span(event) == want


@pytest.mark.parametrize(("since", "ttl", "truncated", "covered_minutes"), [
    (timedelta(minutes=30), timedelta(hours=1), False, 30),
    (timedelta(hours=1), timedelta(hours=1), False, 60),
    (timedelta(hours=6), timedelta(hours=1), True, 60),
    (timedelta(hours=6), timedelta(hours=24), False, 360),
], ids=["inside-ttl", "equal", "beyond-ttl", "long-ttl"])
def test_window_coverage(since: timedelta, ttl: timedelta, truncated: bool, covered_minutes: int) -> None:
    win = Window(since, NOW, ttl)
    assert win.truncated is truncated
    assert NOW - win.covered_from == timedelta(minutes=covered_minutes)
    assert win.as_dict()["truncated"] is truncated



def test_what_each_mode_did_and_what_enforce_would_have() -> None:
    rows = refused_deletes([core_event("DeletionWarned", 50, count=3), core_event("DeletionAudited", 5),
                            core_event("DeletionWarned", 4, name="other")], WIN)
    assert by_mode(rows) == {Mode.ENFORCE: 0, Mode.WARN: 4, Mode.AUDIT: 1}
    assert summary(rows) == ("5 refused: 0 denied (enforce), 4 allowed with a warning (warn), 1 allowed silently "
                             "(audit); in enforce mode all 5 would have been denied")
