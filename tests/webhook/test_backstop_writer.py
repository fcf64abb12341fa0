"""The deletion backstop's writer on a real API server (kube-testserver): the record it creates
and keeps, what it refuses to write from stale or unproven knowledge, a conflicting write, a
shard too big, one writer among several.  The guard's knowledge comes from caches loaded through
``WatchCache.replace`` (``tests/webhook/test_deletion_guard_freshness.world``); the record is real.
The whole story with the chart's policy and a real webhook process: ``tests/e2e/test_deletion_backstop.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kustodian.kube.cache import WatchCache
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import BACKSTOP_RECORDS
from kustodian.policy.deletion import backstop
from kustodian.policy.deletion.backstop import CONFIRMED_ANNOTATION, RECORD_LABEL, RECORD_SHARDS, record_key
from kustodian.webhook.features.backstop import LeaseSpec, RecordStore, RecordWriter
from kustodian.webhook.features.deletion_guard import DeletionGuard
from tests.conftest import KubeApi
from tests.policy.deletion.builders import blockpool, rbd_pv
from tests.support import wait_for
from tests.webhook.test_deletion_guard_freshness import POOL, with_meta, world

RECORD = "kt-backstop"
PV = "PersistentVolume"


def pool_key(name: str) -> str:
    return record_key("ceph.rook.io", "cephblockpools", "rook-ceph", name) or ""


class Proof:
    """The guard's round-trip proof, answered by the test (dumb on purpose)."""

    def __init__(self, ok: bool) -> None:
        self.ok = ok

    def prove(self, since: float, timeout: float, *, attempts: int = 2) -> bool:
        return self.ok


def pools(*names: str) -> list[dict[str, Any]]:
    return [with_meta(blockpool(n)) for n in names]


def volumes(pool: str, n: int) -> list[dict[str, Any]]:
    return [with_meta(rbd_pv(f"pv-{pool}-{i}", pool=pool)) for i in range(n)]


@pytest.fixture(autouse=True)
def record_crd(kube_api: KubeApi) -> None:
    """The record's kind, as the chart's crds/ installs it."""
    kube_api.install_backstop_crd()


@pytest.fixture
def guarded() -> tuple[DeletionGuard, dict[str, WatchCache]]:
    return world({POOL: pools("a", "b"), PV: volumes("a", 2)})


def writer(kube_api: KubeApi, namespace: str, guard: DeletionGuard, *, lease: LeaseSpec | None = None,
           now: datetime | None = None) -> RecordWriter:
    return RecordWriter(guard, RecordStore(kube_api.client, namespace, RECORD), lease=lease, confirm_interval=60,
                        now=(lambda: now) if now is not None else lambda: datetime.now(UTC))


def shards(kube_api: KubeApi, namespace: str) -> list[dict[str, Any] | None]:
    out: list[dict[str, Any] | None] = []
    for i in range(RECORD_SHARDS):
        try:
            out.append(kube_api.client.get(BACKSTOP_RECORDS, f"{RECORD}-{i}", namespace))
        except NotFound:
            out.append(None)
    return out


def entries(kube_api: KubeApi, namespace: str) -> dict[str, str]:
    return backstop.read_record(shards(kube_api, namespace)).entries


def set_pvs(caches: dict[str, WatchCache], items: list[dict[str, Any]], *, fresh: bool = True) -> None:
    cache = caches[PV]
    cache.replace(items, "2")  # loaded offline: fresh from here
    if not fresh:
        cache.stop()  # stops following the API server: stale


def test_the_first_complete_pass_creates_every_shard_confirmed(
        kube_api: KubeApi, namespace: str, guarded: tuple[DeletionGuard, dict[str, WatchCache]]) -> None:
    guard, _ = guarded
    now = datetime.now(UTC).replace(microsecond=0)
    result = writer(kube_api, namespace, guard, now=now).pass_once()
    assert result.complete and result.proven and result.confirmed and result.written == RECORD_SHARDS
    stored = shards(kube_api, namespace)
    assert all(cm is not None for cm in stored)
    for cm in stored:
        assert cm is not None
        assert cm["metadata"]["labels"][RECORD_LABEL] == RECORD
        assert cm["metadata"]["annotations"][CONFIRMED_ANNOTATION] == now.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert entries(kube_api, namespace) == {pool_key("a"): "2", "_namespaces__rook-ceph": "2"}


def test_no_shard_is_created_from_incomplete_knowledge(
        kube_api: KubeApi, namespace: str, guarded: tuple[DeletionGuard, dict[str, WatchCache]]) -> None:
    """A shard is first published from complete knowledge only (once written it is what the policy
    knows, and it cannot be deleted)."""
    guard, caches = guarded
    caches[PV].stop()
    result = writer(kube_api, namespace, guard).pass_once()
    assert not result.complete and result.written == 0
    assert shards(kube_api, namespace) == [None] * RECORD_SHARDS


def test_an_entry_stays_while_its_kind_is_stale_and_goes_once_fresh_knowledge_says_so(
        kube_api: KubeApi, namespace: str, guarded: tuple[DeletionGuard, dict[str, WatchCache]]) -> None:
    guard, caches = guarded
    hook = writer(kube_api, namespace, guard)
    hook.pass_once()
    before = shards(kube_api, namespace)
    # pool a's volumes are gone, but the cache that says so is stale: nothing is removed
    set_pvs(caches, volumes("b", 1), fresh=False)
    result = hook.pass_once()
    assert not result.complete and not result.confirmed
    assert entries(kube_api, namespace) == {pool_key("a"): "2", "_namespaces__rook-ceph": "2"}
    assert [cm and cm["metadata"]["annotations"] for cm in shards(kube_api, namespace)] == \
        [cm and cm["metadata"]["annotations"] for cm in before]  # not confirmed by a partial pass
    # fresh again: a's entry goes, b's comes
    set_pvs(caches, volumes("b", 1))
    assert hook.pass_once().confirmed
    assert entries(kube_api, namespace) == {pool_key("b"): "1", "_namespaces__rook-ceph": "1"}


def test_without_a_proven_round_trip_a_pass_only_adds(
        kube_api: KubeApi, namespace: str, guarded: tuple[DeletionGuard, dict[str, WatchCache]]) -> None:
    guard, caches = guarded
    hook = writer(kube_api, namespace, guard)
    hook.pass_once()
    guard.liveness = Proof(False)  # type: ignore[assignment]
    set_pvs(caches, volumes("b", 3))  # a's volumes gone, b got three
    result = hook.pass_once()
    assert not result.proven and not result.confirmed
    assert entries(kube_api, namespace) == {pool_key("a"): "2", pool_key("b"): "3", "_namespaces__rook-ceph": "3"}
    guard.liveness = Proof(True)  # type: ignore[assignment]
    assert hook.pass_once().confirmed
    assert entries(kube_api, namespace) == {pool_key("b"): "3", "_namespaces__rook-ceph": "3"}


def test_a_write_that_lost_a_race_reads_the_record_again_and_converges(
        kube_api: KubeApi, namespace: str, guarded: tuple[DeletionGuard, dict[str, WatchCache]]) -> None:
    guard, caches = guarded
    hook = writer(kube_api, namespace, guard)
    hook.pass_once()
    index = backstop.shard_of(pool_key("a"))
    theirs = kube_api.client.get(BACKSTOP_RECORDS, f"{RECORD}-{index}", namespace)
    theirs["spec"] = {backstop.ENTRIES_KEY: backstop.pack(  # another writer's entry
        {**backstop.unpack(theirs["spec"][backstop.ENTRIES_KEY]), pool_key("zz"): "9"})}
    kube_api.client.replace(BACKSTOP_RECORDS, theirs)
    set_pvs(caches, volumes("a", 5))
    first = hook.pass_once()
    assert first.failed and hook.writes["conflict"] == 1
    second = hook.pass_once()
    assert second.confirmed
    # the entry it had not written stays (its scope is fresh: a pool that does not exist goes)
    assert entries(kube_api, namespace) == {pool_key("a"): "5", "_namespaces__rook-ceph": "5"}


def test_a_shard_too_big_for_its_limit_keeps_what_it_held(
        kube_api: KubeApi, namespace: str, guarded: tuple[DeletionGuard, dict[str, WatchCache]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    guard, caches = guarded
    hook = writer(kube_api, namespace, guard)
    hook.pass_once()
    monkeypatch.setattr(backstop, "SHARD_LIMIT", 10)
    set_pvs(caches, [])  # every dependent gone: the shards would shrink, but one would not fit
    set_pvs(caches, volumes("b", 2))
    hook.pass_once()
    a, b, ns = (backstop.shard_of(k) for k in (pool_key("a"), pool_key("b"), "_namespaces__rook-ceph"))
    assert hook.writes["oversize"] == len({b, ns})  # the shards that would hold data
    got = entries(kube_api, namespace)
    assert pool_key("b") not in got  # its shard could not be written: not recorded
    # pool a's entry goes with its shard when that one fits (empty), else stays protected
    assert (pool_key("a") in got) == (a in {b, ns})
    assert got.get("_namespaces__rook-ceph") == "2"  # the namespace's old entry, kept


def scrape(hook: RecordWriter) -> dict[str, float]:
    registry = CollectorRegistry()
    registry.register(hook)
    return {s.name + str(sorted(s.labels.items()) or ""): s.value
            for f in text_string_to_metric_families(generate_latest(registry).decode()) for s in f.samples}


def test_the_records_age_is_exported_from_what_was_read(
        kube_api: KubeApi, namespace: str, guarded: tuple[DeletionGuard, dict[str, WatchCache]]) -> None:
    guard, _ = guarded
    then = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=3)
    writer(kube_api, namespace, guard, now=then).pass_once()
    reader = writer(kube_api, namespace, guard, now=then + timedelta(minutes=5))
    assert scrape(reader) == {"kustodian_deletion_backstop_writer": 0.0,
                              "kustodian_deletion_backstop_pass_seconds": 0.0,
                              **{f"kustodian_deletion_backstop_writes_total[('result', '{r}')]": 0.0
                                 for r in ("written", "conflict", "failed", "fenced", "oversize")}}
    reader.reader.start()
    wait_for(lambda: reader.state is not None, "the reader's first read")
    reader.reader.stop()
    got = scrape(reader)
    assert got["kustodian_deletion_backstop_record_age_seconds"] == 300.0
    assert got["kustodian_deletion_backstop_record_entries"] == 2.0
    assert got["kustodian_deletion_backstop_record_bytes"] > 0


@pytest.fixture
def two_writers(kube_api: KubeApi, namespace: str) -> Iterator[tuple[list[RecordWriter], dict[str, WatchCache]]]:
    guard, caches = world({POOL: pools("a"), PV: volumes("a", 1)})
    hooks = [writer(kube_api, namespace, guard, lease=LeaseSpec(RECORD, f"replica-{i}", 4.0, 3.0, 0.5))
             for i in range(2)]
    for hook in hooks:
        hook.start()
    try:
        yield hooks, caches
    finally:
        for hook in hooks:
            hook.stop()


def test_one_replica_writes_and_another_takes_over_when_it_stops(
        kube_api: KubeApi, namespace: str, two_writers: tuple[list[RecordWriter], dict[str, WatchCache]]) -> None:
    hooks, caches = two_writers
    wait_for(lambda: entries(kube_api, namespace) == {pool_key("a"): "1", "_namespaces__rook-ceph": "1"},
             "the first record")
    leaders = [h for h in hooks if h.leading.is_set()]
    assert len(leaders) == 1
    other = next(h for h in hooks if h is not leaders[0])
    assert other.writes["written"] == 0
    leaders[0].stop()  # releases the Lease: the other need not wait for it to expire
    stopped = leaders[0].lease.identity if leaders[0].lease else None
    holder = kube_api.kubectl("get", "lease", RECORD, "-n", namespace, "-o", "jsonpath={.spec.holderIdentity}")
    assert stopped and holder.stdout != stopped, holder.stdout  # released ("") or already the other's
    wait_for(other.leading.is_set, "the other replica to lead", timeout=15)
    set_pvs(caches, volumes("a", 4))  # a watch event: the new writer's handler wakes it
    wait_for(lambda: entries(kube_api, namespace).get(pool_key("a")) == "4", "the new writer's record",
             timeout=10)


def test_a_change_is_recorded_by_the_running_writer_without_a_poll(
        kube_api: KubeApi, namespace: str, guarded: tuple[DeletionGuard, dict[str, WatchCache]]) -> None:
    guard, caches = guarded
    hook = writer(kube_api, namespace, guard)  # confirm_interval 60 s: only an event can wake it in time
    hook.start()
    try:
        wait_for(lambda: pool_key("a") in entries(kube_api, namespace), "the first record")
        done = threading.Event()
        caches[PV].add_handler(lambda *_: done.set())
        set_pvs(caches, [*volumes("a", 2), *volumes("b", 1)])
        assert done.is_set()
        wait_for(lambda: entries(kube_api, namespace).get(pool_key("b")) == "1", "pool b recorded", timeout=5)
    finally:
        hook.stop()
