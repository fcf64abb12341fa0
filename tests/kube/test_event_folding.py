"""EventRecorder's spam filter folds what it holds back into the next event's count, so a
reader summing ``count`` (``kustodian report --since``) sees every occurrence."""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.kube.events import EventRecorder


class Client:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    def create(self, _res: object, obj: dict[str, Any]) -> dict[str, Any]:
        self.created.append(obj)
        return obj


def pool(name: str) -> dict[str, Any]:
    return {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
            "metadata": {"name": name, "namespace": "rook-ceph", "uid": f"uid-{name}"}}


POOL, OTHER = pool("replicapool"), pool("other")


@pytest.mark.parametrize(("records", "want"), [
    # (seconds, object, reason) -> counts of the events written, in order
    ([(0, POOL, "DeletionWarned")], [1]),
    ([(0, POOL, "DeletionWarned"), (1, POOL, "DeletionWarned"), (2, POOL, "DeletionWarned"),
      (11, POOL, "DeletionWarned")], [1, 3]),
    # another object or another reason is its own series
    ([(0, POOL, "DeletionWarned"), (1, OTHER, "DeletionWarned"), (2, POOL, "DeletionAudited"),
      (3, POOL, "DeletionWarned"), (20, POOL, "DeletionWarned")], [1, 1, 1, 2]),
    # held back and never followed: not written (the last min_interval before a quiet spell)
    ([(0, POOL, "DeletionWarned"), (5, POOL, "DeletionWarned")], [1]),
], ids=["one", "folded", "separate-series", "trailing"])
def test_held_back_occurrences_are_counted_on_the_next_event(
        records: list[tuple[float, dict[str, Any], str]], want: list[int]) -> None:
    now = [0.0]
    client = Client()
    recorder = EventRecorder(client, "kustodian-test", min_interval=10, clock=lambda: now[0])  # type: ignore[arg-type]
    try:
        for at, obj, reason in records:
            now[0] = at
            recorder.record(obj, "Warning", reason, "m")
        recorder.flush()
    finally:
        recorder.close()
    assert [e["count"] for e in client.created] == want
    for event in client.created:
        assert event["firstTimestamp"] <= event["lastTimestamp"]


def test_events_a_full_queue_refuses_are_counted_and_said_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    import threading

    from tests.support import wait_for

    entered, release = threading.Event(), threading.Event()

    class Blocking(Client):
        def create(self, _res: object, obj: dict[str, Any]) -> dict[str, Any]:
            entered.set()
            assert release.wait(10)
            return super().create(_res, obj)

    now = [0.0]
    client = Blocking()
    recorder = EventRecorder(client, "kustodian-test", min_interval=0, queue_size=1,  # type: ignore[arg-type]
                             clock=lambda: now[0])
    try:
        with caplog.at_level("WARNING", logger="kustodian.kube.events"):
            assert recorder.record(pool("a"), "Warning", "R", "m")  # taken by the writer, which blocks
            wait_for(entered.is_set, "the writer blocked in create")
            assert recorder.record(pool("b"), "Warning", "R", "m")  # fills the queue of one
            assert not recorder.record(pool("c"), "Warning", "R", "m")  # lost, said at once
            now[0] = 30.0
            assert not recorder.record(pool("d"), "Warning", "R", "m")  # lost, said later
            now[0] = 61.0
            assert not recorder.record(pool("e"), "Warning", "R", "m")
        release.set()
        recorder.flush()
    finally:
        release.set()
        recorder.close()
    assert recorder.lost == 3
    said = [r.getMessage() for r in caplog.records if "not written" in r.getMessage()]
    assert said == [
        "1 Event(s) not written: the queue of 1 is full (the API server takes them slower than they come); what "
        "they say is not recorded, the decisions themselves are not affected",
        "2 Event(s) not written: the queue of 1 is full (the API server takes them slower than they come); what "
        "they say is not recorded, the decisions themselves are not affected",
    ]
    assert [e["involvedObject"]["name"] for e in client.created] == ["a", "b"]
