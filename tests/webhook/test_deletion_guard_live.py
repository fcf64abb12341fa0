"""Live decisions: watch events on a provider's dependents are applied to its memoised decision,
so the DELETE after a change reads a ready answer without walking the dependents again.

The oracle is the whole computation (``decide_delete`` over the same caches): after every
event of a seeded random history (PVs and CephNFSes come, go and move between pools;
StorageClasses and the CephCluster's skip rule change, which are hops), a memo that is
still valid must say exactly what a fresh decision says, and events that touch only
dependents must keep it valid without a recomputation.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from kustodian.kube.view import CacheView
from kustodian.policy.deletion import decide_delete
from kustodian.webhook.features.deletion_guard import DeletionGuard, memo_key
from tests.policy.deletion.builders import NS, blockpool, cluster, csi_pv, nfs, rbd_pv, storage_class
from tests.webhook.test_deletion_guard_freshness import POOL, ready, review, with_meta, world

PV = "PersistentVolume"
NFS = "CephNFS.ceph.rook.io"
SC = "StorageClass.storage.k8s.io"
CLUSTER = "CephCluster.ceph.rook.io"
POOLS = ("replicapool", "otherpool", "nopool")


def _memo_answer(guard: DeletionGuard, kind: str, provider: dict[str, Any]) -> Any:
    return guard.memo.cached(memo_key(kind, provider, None), count=False)


def _same(a: Any, b: Any) -> bool:
    return (a.allowed, a.message, a.overridden, a.providers, {t: tuple(r) for t, r in a.dependents.items()}) == (
        b.allowed, b.message, b.overridden, b.providers, {t: tuple(r) for t, r in b.dependents.items()})


class History:
    """A seeded random stream of watch events, applied through each cache's watch path."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pools = [with_meta(blockpool("replicapool")), with_meta(blockpool("otherpool"))]
        self.guard, self.caches = world({
            POOL: self.pools, CLUSTER: [with_meta(cluster())],
            SC: [storage_class("fast", "rook-ceph.rbd.csi.ceph.com", clusterID=NS, pool="replicapool")],
            PV: [rbd_pv(f"pv-{i}", pool=self.rng.choice(POOLS)) for i in range(40)],
        })
        self.view = CacheView(self.caches)
        self.serial = 100

    def _event(self, kind: str, etype: str, obj: dict[str, Any]) -> None:
        cache = self.caches[kind]
        cache._apply(etype, cache._prepare(obj))  # exactly what the watch loop does with an event

    def _some(self, kind: str) -> dict[str, Any] | None:
        items = self.caches[kind].list()
        return dict(self.rng.choice(items)) if items else None

    def step(self) -> bool:
        """One event; True when it touched only dependents (a leaf), False for a hop."""
        self.serial += 1
        roll = self.rng.random()
        if roll < 0.35:
            driver = self.rng.choice(["rook-ceph.rbd.csi.ceph.com", "rook-ceph.rbd.csi.ceph.com", "other.csi"])
            pv = csi_pv(f"pv-{self.serial}", driver=driver, storage_class=self.rng.choice(["", "fast", "slow"]),
                        clusterID=self.rng.choice([NS, NS, "elsewhere"]), pool=self.rng.choice(POOLS))
            if self.rng.random() < 0.3:  # a statically provisioned PV named only by its class
                pv["spec"]["csi"]["volumeAttributes"] = {}
                pv["spec"]["storageClassName"] = "fast"
            self._event(PV, "ADDED", pv)
        elif roll < 0.55:
            if (gone := self._some(PV)) is not None:
                self._event(PV, "DELETED", gone)
        elif roll < 0.75:
            if (old := self._some(PV)) is not None:
                moved = {**old, "spec": {**old["spec"], "csi": {**old["spec"]["csi"], "volumeAttributes": {
                    "clusterID": NS, "pool": self.rng.choice(POOLS)}}}}
                self._event(PV, "MODIFIED", moved)
        elif roll < 0.85:
            name = f"nfs-{self.rng.randrange(5)}"
            if self.caches[NFS].get(NS, name) is not None and self.rng.random() < 0.5:
                self._event(NFS, "DELETED", nfs(name, "replicapool"))
            else:
                self._event(NFS, "ADDED", nfs(name, self.rng.choice(POOLS)))
        elif roll < 0.93:
            self._event(SC, "ADDED", storage_class("slow", "rook-ceph.rbd.csi.ceph.com", clusterID=NS,
                                                   pool=self.rng.choice(POOLS)))
            return False
        else:
            changed = cluster(allow_uninstall_with_volumes=self.rng.random() < 0.5)
            self._event(CLUSTER, "MODIFIED", with_meta(changed, rv=str(self.serial)))
            return False
        return True


@pytest.mark.parametrize("seed", range(6))
def test_live_decisions_match_a_fresh_decision_after_every_event(seed: int) -> None:
    h = History(seed)
    guard = h.guard
    assert guard.warm() == len(h.pools) + 1  # and the CephCluster
    kept_live = recomputed = 0
    for _ in range(250):
        leaf_only = h.step()
        misses = guard.memo_misses
        providers = [(POOL, p) for p in h.pools] + [(CLUSTER, c) for c in h.caches[CLUSTER].list()]
        for kind, provider in providers:
            fresh = decide_delete(kind, provider, h.view, guard.rules)
            memo = _memo_answer(guard, kind, provider)
            if memo is None:
                guard.warm()
                memo = _memo_answer(guard, kind, provider)
                recomputed += 1
            else:
                kept_live += leaf_only
            assert memo is not None and _same(memo, fresh), f"seed {seed}: live decision of {kind} drifted"
        if leaf_only:  # a dependent came, went or moved: applied to the memo, nothing recomputed
            assert guard.memo_misses == misses
    assert guard.applied > 0 and kept_live > 200 and recomputed > 0  # both paths were exercised


def test_the_first_delete_after_a_dependent_changes_is_answered_on_the_event_loop() -> None:
    """No warmer needed: the watch event updates the memo before any DELETE asks."""
    pool = with_meta(blockpool())
    guard, caches = world({POOL: [pool], PV: [rbd_pv(f"pv-{i}") for i in range(50)]})
    req = review("CephBlockPool", pool)
    assert guard.warm() == 1  # computed once, ahead of any request
    assert not ready(guard, req).allowed
    pvs = caches[PV]
    for i in range(50):
        pvs._apply("DELETED", pvs._prepare(rbd_pv(f"pv-{i}")))
        answer = ready(guard, req)  # never left to a worker thread: the memo is current
        assert answer.allowed is (i == 49)
    pvs._apply("ADDED", pvs._prepare(rbd_pv("pv-late")))
    late = ready(guard, req)
    assert not late.allowed and "pv-late" in late.message
    assert guard.memo_misses == 1 and guard.applied == 51


def test_a_memo_whose_leaf_changed_while_it_was_computed_is_never_updated_live() -> None:
    """An event between reading a bucket and installing the memo may have gone by unheard: such a
    memo answers for the versions it read, but a later event must not make it current again."""
    pool = with_meta(blockpool())
    guard, caches = world({POOL: [pool], PV: [rbd_pv("pv-0")]})
    guard.warm()
    key = memo_key(POOL, pool, None)
    memo = guard.memo.entries[key]
    assert memo.live is not None
    pvs = caches[PV]
    pvs._apply("ADDED", pvs._prepare(rbd_pv("pv-1")))  # heard, applied
    guard.memo.install(key, memo)  # as if computed before pv-1 and installed after it
    assert guard.memo.entries[key].live is None
    pvs._apply("ADDED", pvs._prepare(rbd_pv("pv-2")))
    assert _memo_answer(guard, POOL, pool) is None  # stale by version: computed whole next time


def test_a_kind_read_as_a_hop_too_is_not_marked_unchanged_by_a_leaf_event() -> None:
    """The one-check-per-kind fast path moves a kind on only when every bucket of it the memo
    read is current: a leaf event must not hide a change to a hop of the same kind."""
    pool = with_meta(blockpool())
    guard, caches = world({POOL: [pool], PV: [rbd_pv("pv-0")]})
    guard.warm()
    key = memo_key(POOL, pool, None)
    memo = guard.memo.entries[key]
    assert memo.kinds is not None and guard.memo.cached(key, count=False) is not None
    # a PV bucket the memo read as a hop, since changed (its version no longer matches)
    guard.memo.entries[key] = replace(memo, reads=(*memo.reads, (PV, "kustodian.io/namespace", "", ("gone", 0))))
    pvs = caches[PV]
    pvs._apply("ADDED", pvs._prepare(rbd_pv("pv-1")))  # a leaf event of the same kind, applied
    assert guard.applied == 1
    assert guard.memo.cached(key, count=False) is None  # still out of date: computed whole next time


class _EventDuringRead(CacheView):
    """A view whose first read of a PV bucket is followed, at once, by a new PV of the pool: a
    watch event landing while a decision is being computed."""

    def __init__(self, caches: dict[str, Any]) -> None:
        super().__init__(caches)
        self.fired = False

    def by_index(self, kind: str, index: str, key: str) -> Any:
        found = super().by_index(kind, index, key)
        if kind == PV and not self.fired:
            self.fired = True
            pvs = self.caches[PV]
            pvs._apply("ADDED", pvs._prepare(rbd_pv("pv-during")))
        return found


def test_an_event_during_a_computation_never_leaves_a_memo_that_looks_current() -> None:
    pool = with_meta(blockpool())
    _, caches = world({POOL: [pool], PV: [rbd_pv("pv-0")]})
    from kustodian.policy.deletion import rook_rules

    view = _EventDuringRead(caches)
    guard = DeletionGuard(rook_rules(), view, None)
    guard.warm()
    assert view.fired
    answer = guard.memo.cached(memo_key(POOL, pool, None), count=False)
    fresh = decide_delete(POOL, pool, CacheView(caches), guard.rules)
    assert "pv-during" in fresh.message
    assert answer is None or _same(answer, fresh)  # out of date, or right: never stale and current
