"""A DELETE that comes while a watch is being renewed waits for it rather than failing.

A watch the API server ends on its own timer is resumed from the same resourceVersion: no event
is missed, and the cache is stale only for the one request that opens the next watch. A review
in that window used to be answered 503 at once (4 of 2,000 DELETEs in the backstop bench, where
several watches renewed together). It now waits, in a worker thread, up to ``renewal_wait`` and
is judged on the fresh caches; a kind stale for any other reason is still refused at once, and
nothing is ever decided on a stale cache. The real watch's renewal is in
``test_a_watch_ended_on_the_servers_timer_is_renewed_without_a_list`` (kube-testserver)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kustodian.kube.cache import WatchCache
from kustodian.kube.resources import CONFIG_MAPS
from kustodian.webhook.registry import PendingAnswer
from kustodian.webhook.review import Answer
from tests.conftest import KubeApi
from tests.policy.deletion.builders import blockpool, nfs
from tests.support import wait_for
from tests.webhook.test_deletion_guard_freshness import NFS, POOL, POOL_OBJ, review, with_meta, world

NS_OBJ = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "rook-ceph"}}


def _in_thread(compute: Any) -> tuple[threading.Thread, list[Answer]]:
    out: list[Answer] = []
    t = threading.Thread(target=lambda: out.append(compute()), daemon=True)
    t.start()
    return t, out


def test_a_delete_during_a_watch_renewal_waits_and_is_judged_on_the_fresh_cache() -> None:
    guard, caches = world({POOL: [POOL_OBJ], NFS: [nfs("nfs-a", "replicapool")]})
    caches[NFS]._mark_stale(renewing=True)
    pending = guard.on_delete(review("CephBlockPool", POOL_OBJ))
    assert isinstance(pending, PendingAnswer), "a renewing kind is waited for, not a 503 at once"
    worker, out = _in_thread(pending.compute)
    caches[NFS]._mark_fresh()  # the next watch is established
    worker.join(10)
    (answer,) = out
    assert (answer.allowed, answer.code) == (False, 403) and "nfs-a" in answer.message


def test_a_namespace_delete_during_a_watch_renewal_waits_too() -> None:
    guard, caches = world({POOL: [with_meta(blockpool())]})
    caches["PersistentVolume"]._mark_stale(renewing=True)
    pending = guard.on_namespace_delete(review("Namespace", NS_OBJ, group=""))
    assert isinstance(pending, PendingAnswer)
    worker, out = _in_thread(pending.compute)
    caches["PersistentVolume"]._mark_fresh()
    worker.join(10)
    (answer,) = out
    assert (answer.allowed, answer.code) == (True, 200)  # a pool nobody uses: judged, not the 503


def test_a_renewal_that_does_not_come_back_in_time_is_the_503() -> None:
    guard, caches = world({POOL: [POOL_OBJ], NFS: [nfs("nfs-a", "replicapool")]})
    guard.renewal_wait = 0.2
    caches[NFS]._mark_stale(renewing=True)
    pending = guard.on_delete(review("CephBlockPool", POOL_OBJ))
    assert isinstance(pending, PendingAnswer)
    answer = pending.compute()
    assert (answer.allowed, answer.code) == (False, 503) and NFS in answer.message
    assert caches[NFS].stale_for() >= 0.2


def test_a_renewal_whose_next_watch_fails_ends_the_wait_with_the_503_at_once() -> None:
    guard, caches = world({POOL: [POOL_OBJ], NFS: [nfs("nfs-a", "replicapool")]})
    guard.renewal_wait = 60.0  # far longer than the test may take: the failure must end the wait
    caches[NFS]._mark_stale(renewing=True)
    pending = guard.on_delete(review("CephBlockPool", POOL_OBJ))
    assert isinstance(pending, PendingAnswer)
    started = time.monotonic()
    worker, out = _in_thread(pending.compute)
    caches[NFS]._mark_stale()  # the next watch failed: a re-list comes, not a renewal
    worker.join(30)
    (answer,) = out
    assert (answer.allowed, answer.code) == (False, 503)
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("how", ["stopped", "renewing for too long"])
def test_a_kind_stale_for_another_reason_is_refused_at_once(how: str) -> None:
    guard, caches = world({POOL: [POOL_OBJ], NFS: [nfs("nfs-a", "replicapool")]})
    if how == "stopped":
        caches[NFS].stop()
    else:
        guard.renewal_wait = 0.05
        caches[NFS]._mark_stale(renewing=True)
        wait_for(lambda: caches[NFS].stale_for() >= 0.05, "the renewal to outlast the wait")
    answer = guard.on_delete(review("CephBlockPool", POOL_OBJ))
    assert isinstance(answer, Answer) and (answer.allowed, answer.code) == (False, 503)


@pytest.mark.api
def test_a_watch_ended_on_the_servers_timer_is_renewed_without_a_list(kube_api: KubeApi, namespace: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    cache = WatchCache(kube_api.client, CONFIG_MAPS, namespace=namespace, watch_timeout=1)
    seen: list[tuple[bool, bool]] = []  # (fresh, renewing) as each watch is opened
    watch = kube_api.client.watch

    def opening(*args: Any, **kwargs: Any) -> Any:
        seen.append((cache.fresh, cache.renewing))
        return watch(*args, **kwargs)

    monkeypatch.setattr(kube_api.client, "watch", opening)
    lists = kube_api.client.list_pages
    listed: list[int] = []

    def listing(*args: Any, **kwargs: Any) -> Any:
        listed.append(1)
        return lists(*args, **kwargs)

    monkeypatch.setattr(kube_api.client, "list_pages", listing)
    cache.start()
    try:
        wait_for(lambda: len(seen) >= 3 and cache.fresh, "two renewals of the watch", 15)
        assert seen[0] == (False, False)  # after the list: not a renewal
        assert all(s == (False, True) for s in seen[1:])  # each later one: stale only as it renews
        assert len(listed) == 1  # resumed from its resourceVersion, never listed again
    finally:
        cache.stop(timeout=5)
    assert not cache.renewing
