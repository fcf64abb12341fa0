"""The deletion guard over watch caches: stale kinds refuse (503), decisions are memoised per
bucket version and computed off the event loop, a terminating Namespace lets its own go, and
kinds follow their CRDs.  Caches are loaded through ``WatchCache.replace`` (no API server);
the real-API behaviour is in ``tests/e2e/test_deletion_guard_freshness.py``."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from kustodian.kube.cache import WatchCache
from kustodian.kube.kinds import FollowedKinds
from kustodian.kube.resources import BUILTIN, CRDS, Resource
from kustodian.kube.view import CacheView
from kustodian.policy.deletion import rook_rules
from kustodian.runtime.health import Checks
from kustodian.testing.crds import crd
from kustodian.webhook.app import add_freshness, create_app, parse_review
from kustodian.webhook.features.deletion_guard import DeletionGuard, needed_kinds
from kustodian.webhook.metrics import WebhookMetrics
from kustodian.webhook.registry import PendingAnswer, Registry
from kustodian.webhook.review import AdmissionRequest, Answer, allowed
from tests.policy.deletion.builders import NS, blockpool, nfs, rbd_pv, storage_class
from tests.support import eventually, wait_for
from tests.webhook.conftest import serve

POOL = "CephBlockPool.ceph.rook.io"
NFS = "CephNFS.ceph.rook.io"
_BUILTIN = {r.key: r for r in BUILTIN}


def resource(key: str) -> Resource:
    if key in _BUILTIN:
        return _BUILTIN[key]
    kind, _, group = key.partition(".")
    return Resource(group, "v1", kind.lower() + "s", kind, kind not in ("PersistentVolume", "StorageClass"))


def loaded(key: str, items: Iterable[dict[str, Any]], indexers: Any) -> WatchCache:
    cache = WatchCache(None, resource(key), indexers=indexers)
    cache.replace([dict(o) for o in items], "1")
    return cache


def with_meta(o: dict[str, Any], rv: str = "1") -> dict[str, Any]:
    o["metadata"].setdefault("uid", f"uid-{o['metadata']['name']}")
    o["metadata"].setdefault("resourceVersion", rv)
    return o


def world(objects: dict[str, list[dict[str, Any]]], *, stale: Iterable[str] = (),
          unloaded: Iterable[str] = ()) -> tuple[DeletionGuard, dict[str, WatchCache]]:
    rules = rook_rules()
    caches: dict[str, WatchCache] = {}
    for key, idx in needed_kinds(rules).items():
        if key in unloaded:
            caches[key] = WatchCache(None, resource(key), indexers=idx)  # never listed
            continue
        caches[key] = loaded(key, objects.get(key, []), idx)
        if key in stale:
            caches[key].stop()  # a cache that stopped following the API server
    return DeletionGuard(rules, CacheView(caches), None), caches


def review(kind: str, obj: dict[str, Any], group: str = "ceph.rook.io") -> AdmissionRequest:
    meta = obj["metadata"]
    return parse_review(orjson.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": str(uuid.uuid4()), "kind": {"group": group, "version": "v1", "kind": kind},
                    "resource": {"group": group, "version": "v1", "resource": kind.lower() + "s"},
                    "operation": "DELETE", "name": meta["name"], "namespace": meta.get("namespace", ""),
                    "userInfo": {"username": "u"}, "oldObject": obj, "dryRun": True}}))


def decide(guard: DeletionGuard, req: AdmissionRequest) -> Answer:
    reg = Registry()
    guard.register(reg)
    return reg.validate_now(req)


def ready(guard: DeletionGuard, req: AdmissionRequest) -> Answer:
    """The guard's answer on the event loop: from the memo, with nothing left for a worker thread."""
    answer = guard.on_delete(req)
    assert isinstance(answer, Answer), "no answer ready: the request would go to a worker thread"
    return answer


POOL_OBJ = with_meta(blockpool())


@pytest.mark.parametrize("stale, unloaded, want_code, want_in", [
    ((), (), 403, "nfs-a"),
    ((NFS,), (), 503, NFS),
    (("PersistentVolume",), (), 503, "PersistentVolume for "),
    (("StorageClass.storage.k8s.io",), (), 503, "StorageClass.storage.k8s.io"),
    ((), (NFS,), 503, NFS),
    (("CephCluster.ceph.rook.io",), (), 503, "CephCluster"),  # its skipIf (allowUninstallWithVolumes)
    (("CephObjectStoreUser.ceph.rook.io",), (), 403, "nfs-a"),  # not read by a pool decision
], ids=["fresh-denied", "stale-dependent", "stale-pv", "stale-hop", "never-listed", "stale-skipif",
        "unrelated-stale"])
def test_a_decision_that_reads_a_stale_kind_is_refused_with_503(
        stale: tuple[str, ...], unloaded: tuple[str, ...], want_code: int, want_in: str) -> None:
    guard, _ = world({POOL: [POOL_OBJ], NFS: [nfs("nfs-a", "replicapool")]}, stale=stale, unloaded=unloaded)
    answer = decide(guard, review("CephBlockPool", POOL_OBJ))
    assert not answer.allowed
    assert answer.code == want_code and want_in in answer.message, answer.message
    if want_code == 503:
        assert "retry in a few seconds" in answer.message and answer.reason == "ServiceUnavailable"


def test_a_stale_kind_never_lets_a_delete_through_even_without_dependents() -> None:
    empty = with_meta(blockpool("emptypool"))
    guard, _ = world({POOL: [empty]}, stale=("PersistentVolume",))
    answer = decide(guard, review("CephBlockPool", empty))
    assert (answer.allowed, answer.code) == (False, 503)


def test_namespace_delete_is_refused_while_any_guarded_kind_is_stale() -> None:
    guard, _ = world({}, stale=(NFS,))
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    answer = decide(guard, review("Namespace", ns, group=""))
    assert (answer.allowed, answer.code) == (False, 503) and NFS in answer.message


def test_memoised_decision_is_reused_until_a_bucket_it_read_changes() -> None:
    guard, caches = world({POOL: [POOL_OBJ], "PersistentVolume": [rbd_pv(f"pv-{i}") for i in range(50)]})
    req = review("CephBlockPool", POOL_OBJ)
    first = decide(guard, req)
    assert not first.allowed and "pv-0" in first.message
    assert guard.memo_misses == 1
    # the memo answers on the event loop, nothing left for a worker thread: a dict read
    again = ready(guard, req)
    assert again.message == first.message and guard.memo_hits == 1
    # a PV of another pool does not invalidate this pool's memo
    caches["PersistentVolume"]._apply("ADDED", caches["PersistentVolume"]._prepare(rbd_pv("other", "bigpool")))
    assert ready(guard, req).message == first.message and guard.memo_hits == 2
    # a new dependent of this pool is applied to the memo by the watch event (a leaf): still a
    # dict read, and nothing was computed again (tests/webhook/test_deletion_guard_live.py)
    caches["PersistentVolume"]._apply("ADDED", caches["PersistentVolume"]._prepare(rbd_pv("pv-new")))
    assert "pv-new" in ready(guard, req).message and guard.memo_misses == 1
    # a change to a hop it read (a StorageClass naming this pool) does: computed in a worker thread
    scs = caches["StorageClass.storage.k8s.io"]
    scs._apply("ADDED", scs._prepare(storage_class("fast", "rook-ceph.rbd.csi.ceph.com", clusterID=NS,
                                                   pool="replicapool")))
    assert isinstance(guard.on_delete(req), PendingAnswer)
    assert "pv-new" in decide(guard, req).message and guard.memo_misses == 2


def test_a_terminating_namespace_lets_its_own_dependents_go_but_not_outside_ones() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": NS, "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    inside = {POOL: [POOL_OBJ], NFS: [nfs("nfs-a", "replicapool")], "Namespace": [ns]}
    guard, _ = world(inside)
    assert decide(guard, review("CephBlockPool", POOL_OBJ)).allowed
    guard, _ = world({**inside, "PersistentVolume": [rbd_pv("pv-out")]})
    answer = decide(guard, review("CephBlockPool", POOL_OBJ))
    assert not answer.allowed and "pv-out" in answer.message and "nfs-a" not in answer.message
    live = {**inside, "Namespace": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]}
    guard, _ = world(live)
    assert not decide(guard, review("CephBlockPool", POOL_OBJ)).allowed


def test_slow_work_runs_in_a_worker_thread_not_on_the_event_loop(tls_dir: Path) -> None:
    registry = Registry()
    seen: list[str] = []

    def slow(req: AdmissionRequest) -> PendingAnswer:
        def compute() -> Answer:
            seen.append(threading.current_thread().name)
            return allowed()
        return PendingAnswer(compute)

    registry.validate("ConfigMap", ["DELETE"], slow)
    srv = serve(create_app(registry), tls_dir)
    try:
        with srv.client() as http:
            body = orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
                "uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                "resource": {"group": "", "version": "v1", "resource": "configmaps"}, "operation": "DELETE",
                "name": "x", "namespace": "d", "userInfo": {"username": "u"}}})
            resp = http.post("/validate", content=body).json()["response"]
    finally:
        srv.stop()
    assert resp["allowed"] is True and resp["uid"] == "u-1"
    assert seen and seen[0] != srv.thread.name


# --- kinds follow their CRDs ----------------------------------------------------------------


def established(doc: dict[str, Any], ok: bool = True) -> dict[str, Any]:
    doc = dict(doc)
    doc["metadata"] = {**doc["metadata"], "resourceVersion": "2" if ok else "1"}
    doc["status"] = {"conditions": [{"type": "Established", "status": "True" if ok else "False"}]}
    return doc


def followed(settle: float = 0.0) -> tuple[FollowedKinds, DeletionGuard, WatchCache]:
    rules = rook_rules()
    needs = needed_kinds(rules)
    resolved = {k: _BUILTIN[k] for k in needs if k in _BUILTIN}
    crds = WatchCache(None, CRDS)
    kinds = FollowedKinds(None, needs, resolved, crd_cache=crds, settle_timeout=settle,
                          factory=lambda res, idx: WatchCache(None, res, indexers=idx))
    for cache in kinds.caches.values():
        cache.replace([], "1")
    return kinds, DeletionGuard(rules, CacheView(kinds.caches, kinds), None), crds


def test_a_rook_kind_installed_after_start_is_refused_until_its_cache_is_fresh_then_guarded() -> None:
    kinds, guard, crds = followed()
    cluster = with_meta({"apiVersion": "ceph.rook.io/v1", "kind": "CephCluster",
                         "metadata": {"name": "c", "namespace": NS}})
    req = review("CephCluster", cluster)
    # the CRD watch has not listed yet: whether Rook kinds exist is unknown
    answer = decide(guard, req)
    assert answer.code == 503 and "CustomResourceDefinition" in answer.message
    crds.replace([], "1")
    assert POOL in kinds.unserved()
    assert decide(guard, req).allowed  # no Rook CRD: no Rook object can exist
    pool_crd = crd("ceph.rook.io", "v1", "CephBlockPool")
    crds.replace([established(pool_crd, ok=False)], "2")
    assert POOL not in kinds.caches  # not Established: not served yet
    crds.replace([established(pool_crd)], "3")
    assert POOL in kinds.caches and POOL not in kinds.unserved()
    answer = decide(guard, req)  # served, cache not listed yet
    assert answer.code == 503 and POOL in answer.message
    kinds.caches[POOL].replace([blockpool("p1")], "4")
    answer = decide(guard, req)
    assert answer.code == 403 and "p1" in answer.message


def test_a_crd_that_vanishes_under_cached_objects_leaves_a_stale_ghost() -> None:
    kinds, guard, crds = followed()
    nfs_crd = established(crd("ceph.rook.io", "v1", "CephNFS"))
    crds.replace([nfs_crd], "1")
    kinds.caches[NFS].replace([nfs("nfs-a", "replicapool")], "2")
    req = review("CephBlockPool", POOL_OBJ)
    assert decide(guard, req).code == 403
    crds.replace([], "3")  # the CRD is gone but nfs-a was never seen deleted
    assert kinds.caches[NFS].ghost and NFS in kinds.unserved()
    assert NFS in kinds.stale() and NFS not in kinds.stale(ghosts=False)  # refused, but replica ready
    answer = decide(guard, req)
    assert answer.code == 503 and NFS in answer.message
    crds.replace([nfs_crd], "4")  # served again: a new cache, refused until it has listed
    assert not kinds.caches[NFS].ghost
    assert decide(guard, req).code == 503
    kinds.caches[NFS].replace([nfs("nfs-a", "replicapool")], "5")
    assert decide(guard, req).code == 403


def test_a_crd_removed_after_its_objects_were_deleted_is_simply_unserved() -> None:
    kinds, guard, crds = followed()
    nfs_crd = established(crd("ceph.rook.io", "v1", "CephNFS"))
    crds.replace([nfs_crd], "1")
    kinds.caches[NFS].replace([], "2")
    crds.replace([], "3")
    assert NFS not in kinds.caches and NFS in kinds.unserved()
    empty = with_meta(blockpool("emptypool"))
    assert decide(guard, review("CephBlockPool", empty)).allowed


def test_readyz_lists_stale_and_unserved_kinds_and_metrics_show_freshness(tls_dir: Path) -> None:
    kinds, _, crds = followed()
    readiness = Checks()
    add_freshness(readiness, kinds)
    srv = serve(create_app(Registry(), readiness=readiness,
                           metrics=WebhookMetrics(lambda: kinds.caches, kinds=kinds)), tls_dir)
    try:
        with srv.client() as http:
            resp = http.get("/readyz")
            assert resp.status_code == 503 and "caches-fresh" in resp.text
            assert "stale kinds: CustomResourceDefinition.apiextensions.k8s.io (" in resp.text
            crds.replace([], "1")
            resp = http.get("/readyz")
            assert resp.status_code == 200 and "unserved rule kinds:" in resp.text and POOL in resp.text
            kinds.caches["PersistentVolume"].stop()
            resp = http.get("/readyz")
            assert resp.status_code == 503 and "stale kinds: PersistentVolume (" in resp.text
            metrics = http.get("/metrics").text
    finally:
        srv.stop()
    assert 'kustodian_cache_fresh{kind="PersistentVolume"} 0.0' in metrics
    assert 'kustodian_cache_fresh{kind="Namespace"} 1.0' in metrics
    assert 'kustodian_cache_stale_seconds{kind="PersistentVolume"}' in metrics
    assert 'kustodian_cache_last_event_age_seconds{kind="Namespace"}' in metrics
    assert f'kustodian_rule_kind_served{{kind="{POOL}"}} 0.0' in metrics


def test_one_warning_per_change_of_a_rule_kind_served_state(caplog: pytest.LogCaptureFixture) -> None:
    kinds, _, crds = followed()
    nfs_crd = established(crd("ceph.rook.io", "v1", "CephNFS"))

    def warnings_about_nfs() -> list[str]:
        return [r.getMessage() for r in caplog.records
                if r.levelname == "WARNING" and r.getMessage().startswith(NFS)]

    with caplog.at_level("WARNING", logger="kustodian.kube.kinds"):
        crds.replace([nfs_crd], "1")
        kinds.caches[NFS].replace([], "2")
        assert warnings_about_nfs() == []  # served from the first look: nothing to warn about
        crds.replace([], "3")
        crds.replace([], "4")  # no change: no second warning
        assert len(warnings_about_nfs()) == 1 and "not served" in warnings_about_nfs()[0]
        crds.replace([nfs_crd], "5")
        assert len(warnings_about_nfs()) == 2 and "served again" in warnings_about_nfs()[1]


@pytest.mark.parametrize("deleted_before_the_watch_ends, ghost", [(True, False), (False, True)],
                         ids=["uninstall-objects-deleted-first", "objects-left-behind"])
def test_a_vanished_crd_is_judged_after_its_own_watch_has_ended(
        deleted_before_the_watch_ends: bool, ghost: bool) -> None:
    kinds, guard, crds = followed(settle=10.0)
    nfs_crd = established(crd("ceph.rook.io", "v1", "CephNFS"))
    crds.replace([nfs_crd], "1")
    cache = kinds.caches[NFS]
    cache.replace([nfs("nfs-a", "replicapool")], "2")
    crds.replace([], "3")  # the CRD watch hears first; the kind's watch is still delivering
    assert kinds.caches.get(NFS) is cache and not cache.ghost
    if deleted_before_the_watch_ends:
        cache._apply("DELETED", cache._prepare(nfs("nfs-a", "replicapool")))
    cache.stop()  # the API server ends the kind's watch once the CRD is gone
    eventually(lambda: bool(kinds.changes) and (NFS not in kinds.caches or kinds.caches[NFS].ghost),
               timeout=5, poll=0.05)
    assert (NFS in kinds.caches) is ghost and NFS in kinds.unserved()
    empty = with_meta(blockpool("emptypool"))
    answer = decide(guard, review("CephBlockPool", empty))
    assert (answer.code == 503) is ghost and (answer.allowed is not ghost)


def test_warm_decisions_answer_the_first_delete_after_a_change_on_the_event_loop() -> None:
    """The warmer computes ahead of requests: a DELETE never waits for a decision, even the first
    one after a dependent was added, and the warmed answer is the one a request would compute."""
    guard, caches = world({POOL: [POOL_OBJ], "PersistentVolume": [rbd_pv(f"pv-{i}") for i in range(50)]})
    req = review("CephBlockPool", POOL_OBJ)
    assert guard.warm() == 1 and guard.warm() == 0  # nothing changed: nothing recomputed
    first = ready(guard, req)  # on the loop, nothing left for a worker thread
    assert not first.allowed and "pv-0" in first.message
    # a hop changes (a StorageClass naming the pool): the memo must be computed whole again
    scs = caches["StorageClass.storage.k8s.io"]
    scs._apply("ADDED", scs._prepare(storage_class("fast", "rook-ceph.rbd.csi.ceph.com", clusterID=NS,
                                                   pool="replicapool")))
    pvs = caches["PersistentVolume"]
    pvs._apply("ADDED", pvs._prepare(rbd_pv("pv-new")))
    # not warmed yet: the request would go to a worker thread
    assert isinstance(guard.on_delete(req), PendingAnswer)
    guard.start(interval=0.01)
    try:
        wait_for(lambda: guard.warmed >= 2, "the warmer to recompute the changed decision")
        warmed = ready(guard, req)  # on the loop again
    finally:
        guard.stop()
    fresh_guard, _ = world({POOL: [POOL_OBJ], "PersistentVolume": [
        *(rbd_pv(f"pv-{i}") for i in range(50)), rbd_pv("pv-new")]})
    assert warmed.message == decide(fresh_guard, req).message and "pv-new" in warmed.message


def test_warming_skips_kinds_that_are_not_fresh() -> None:
    guard, _ = world({POOL: [POOL_OBJ], "PersistentVolume": [rbd_pv("pv-0")]}, stale=("PersistentVolume",))
    assert guard.warm() == 0
    assert decide(guard, review("CephBlockPool", POOL_OBJ)).code == 503
