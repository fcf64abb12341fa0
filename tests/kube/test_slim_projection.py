"""Cached objects keep only what the deletion rules read, and decide exactly as whole ones.

Every relationship table of the deletion tests (Rook parity, Kustodian's own
relationships, the Rook gaps) is decided twice: over the objects as the API server
sends them, and over the same objects cut down to ``cache_projections`` as the
webhook's caches keep them.  Dependents, verdict and message must be identical.
"""

from __future__ import annotations

import copy
import sys
from typing import Any

import pytest

from kustodian.kube.kinds import RETRY_MAX, FollowedKinds
from kustodian.kube.resources import PERSISTENT_VOLUMES
from kustodian.kube.slim import projection
from kustodian.policy.deletion import decide_delete, load_rules, rook_rules
from kustodian.policy.deletion.projection import IDENTITY, fields_read
from kustodian.policy.store import kind_key
from kustodian.webhook.features.deletion_guard import cache_projections, needed_kinds
from tests.policy.deletion import test_relationships, test_rook_gaps, test_rook_parity
from tests.policy.deletion.builders import key_of, rbd_pv, view

Obj = dict[str, Any]
SHAPES = {kind: projection(paths) for kind, paths in cache_projections(rook_rules()).items()}
TABLES: list[tuple[str, list[tuple[Any, ...]]]] = [("parity", test_rook_parity.CASES), ("relationships", test_relationships.CASES),
          ("gaps", test_rook_gaps.CASES)]
ALL_CASES = [(f"{table}/{case[0]}", case[1], case[2]) for table, cases in TABLES for case in cases]


def shaped(o: Obj) -> Obj:
    shape = SHAPES.get(kind_key(o["apiVersion"], o["kind"]))
    return shape(o) if shape else o


@pytest.mark.parametrize(("provider", "others"), [c[1:] for c in ALL_CASES], ids=[c[0] for c in ALL_CASES])
def test_projected_caches_decide_as_whole_objects(provider: Obj, others: list[Obj]) -> None:
    rules = rook_rules()
    whole = decide_delete(key_of(provider), provider, view(provider, *others), rules)
    cut = decide_delete(key_of(provider), shaped(provider), view(*(shaped(o) for o in (provider, *others))),
                        rules)
    assert (cut.allowed, cut.dependents, cut.message) == (whole.allowed, whole.dependents, whole.message)


def test_the_tables_cut_objects_down() -> None:
    """The comparison above means something: PersistentVolumes (most of a cluster) are projected."""
    cut = [o for _, p, others in ALL_CASES for o in (p, *others) if shaped(o) != o]
    assert any(o["kind"] == "PersistentVolume" for o in cut)


def test_a_persistent_volume_keeps_identity_and_what_the_rules_read() -> None:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume",
          "metadata": {"name": "pvc-1", "uid": "u1", "resourceVersion": "7", "labels": {"a": "b"},
                       "annotations": {"x": "y"}, "finalizers": ["kubernetes.io/pv-protection"]},
          "spec": {"capacity": {"storage": "1Gi"}, "storageClassName": "rbd", "claimRef": {"name": "data"},
                   "csi": {"driver": "rook-ceph.rbd.csi.ceph.com", "volumeHandle": "0001-abc",
                           "volumeAttributes": {"clusterID": "rook-ceph", "pool": "replicapool",
                                                "imageName": "csi-vol-1", "journalPool": "j"}}},
          "status": {"phase": "Bound"}}
    assert SHAPES["PersistentVolume"](pv) == {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": "pvc-1", "uid": "u1", "resourceVersion": "7"},
        "spec": {"storageClassName": "rbd",
                 "csi": {"driver": "rook-ceph.rbd.csi.ceph.com",
                         "volumeAttributes": {"clusterID": "rook-ceph", "pool": "replicapool", "journalPool": "j"}}}}


PROJECTION_CASES: list[tuple[str, list[tuple[str, ...]], Obj, Obj]] = [
    ("missing paths stay missing", [("spec", "a")], {"kind": "K", "metadata": {}}, {"kind": "K"}),
    ("a list on the way is kept whole", [("spec", "items", "name")],
     {"spec": {"items": [{"name": "a", "x": 1}], "y": 2}}, {"spec": {"items": [{"name": "a", "x": 1}]}}),
    ("a shorter path keeps its subtree whole", [("spec",), ("spec", "a")],
     {"spec": {"a": 1, "b": 2}, "status": {}}, {"spec": {"a": 1, "b": 2}}),
    ("the shorter path may come last", [("spec", "a"), ("spec",)],
     {"spec": {"a": 1, "b": 2}}, {"spec": {"a": 1, "b": 2}}),
    ("a scalar where a map was expected is kept", [("spec", "a", "b")], {"spec": {"a": "x"}},
     {"spec": {"a": "x"}}),
    ("deletionTimestamp is identity", list(IDENTITY),
     {"metadata": {"name": "n", "deletionTimestamp": "2026-01-01T00:00:00Z", "labels": {}}},
     {"metadata": {"name": "n", "deletionTimestamp": "2026-01-01T00:00:00Z"}}),
]


@pytest.mark.parametrize(("paths", "obj", "expected"), [c[1:] for c in PROJECTION_CASES],
                         ids=[c[0] for c in PROJECTION_CASES])
def test_projection(paths: list[tuple[str, ...]], obj: Obj, expected: Obj) -> None:
    assert projection(paths)(obj) == expected


def test_projected_strings_are_interned() -> None:
    make = projection([("spec", "storageClassName")])
    a = make({"spec": {"storageClassName": "".join(["rook-", "ceph"])}})
    b = make({"spec": {"storageClassName": "".join(["rook-c", "eph"])}})
    assert a["spec"]["storageClassName"] is b["spec"]["storageClassName"]


def test_what_names_one_object_is_kept_as_decoded_not_interned() -> None:
    """Nothing shares a name, uid or resourceVersion: interning them only grows the table."""
    make = projection(IDENTITY)
    meta = {"name": "".join(["pvc-", "0001"]), "uid": "".join(["u-", "1"]), "resourceVersion": "".join(["7", "7"]),
            "namespace": "".join(["app-", "1"])}
    kept = make({"metadata": dict(meta)})["metadata"]
    assert kept == meta
    for key in ("name", "uid", "resourceVersion"):
        assert kept[key] is meta[key]
        assert sys.intern("".join([meta[key], ""])) is not kept[key]
    assert kept["namespace"] is sys.intern("".join(["app", "-1"]))  # shared by many: interned


def test_what_is_kept_follows_the_rules() -> None:
    """An admin rule reading one more field keeps it; a matcher that cannot say what it reads,
    a provider and a kind another feature reads keep whole objects."""
    admin = load_rules([
        {"provider": "CephBlockPool.ceph.rook.io", "dependent": "PersistentVolume",
         "match": {"type": "field-ref", "field": "spec.claimRef.name", "scope": "cluster"}},
        {"provider": "CephBlockPool.ceph.rook.io", "dependent": "ConfigMap",
         "match": {"type": "pool-ref", "fields": ["data.pools.*"]}},
    ])
    kept = fields_read(rook_rules().merged(admin), keep_whole=["ObjectBucketClaim.objectbucket.io"])
    assert ("spec", "claimRef", "name") in kept["PersistentVolume"]
    assert ("spec", "csi", "driver") in kept["PersistentVolume"]
    for whole in ("ConfigMap", "CephBlockPool.ceph.rook.io", "StorageClass.storage.k8s.io",
                  "ObjectBucketClaim.objectbucket.io", "CephBlockPoolRadosNamespace.ceph.rook.io"):
        assert whole not in kept, whole
    assert not {"PersistentVolumeClaim", "Pod"} & set(needed_kinds(rook_rules()))  # no rule reads them
    guard = cache_projections(rook_rules(), ["StorageClass.storage.k8s.io"])
    assert "Namespace" not in guard and "CephCluster.ceph.rook.io" not in guard


def test_followed_caches_keep_the_projection_and_retry_soon() -> None:
    """The caches ``kustodian webhook`` builds (FollowedKinds) apply the per-kind shapes, index
    the projected objects exactly as whole ones, and retry a lost watch within RETRY_MAX."""
    rules = rook_rules()
    needs = needed_kinds(rules)
    kinds = FollowedKinds(None, needs, {"PersistentVolume": PERSISTENT_VOLUMES},
                          transforms={k: projection(p) for k, p in cache_projections(rules).items()})
    pvs = kinds.caches["PersistentVolume"]
    whole = rbd_pv("pv-1", storage_class="rook-ceph-block")
    whole["spec"]["claimRef"] = {"namespace": "app", "name": "data"}
    pvs.replace([copy.deepcopy(whole)], "1")
    kept = pvs.get(None, "pv-1")
    assert kept is not None and "claimRef" not in kept["spec"] and "volumeHandle" not in kept["spec"]["csi"]
    for name, fn in needs["PersistentVolume"].items():
        assert set(pvs.index_keys(name)) == set(fn(whole)), name
    assert pvs._backoff[1] == RETRY_MAX and kinds.crds._backoff[1] == RETRY_MAX


def _pv(i: int, pool: str, **attrs: str) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": f"pvc-{i}", "uid": f"u-{i}", "resourceVersion": str(i)},
            "spec": {"storageClassName": f"sc-{pool}", "claimRef": {"name": f"data-{i}"},
                     "csi": {"driver": "rook-ceph.rbd.csi.ceph.com", "volumeHandle": f"0001-{i}",
                             "volumeAttributes": {"clusterID": "rook-ceph", "pool": pool,
                                                  "imageName": f"csi-vol-{i}", **attrs}}}}


def test_volumes_of_one_pool_share_their_projected_spec() -> None:
    """What every PV of a pool holds alike is kept once (issue 46: 1.3 -> 0.75 KiB a PV in the
    webhook's cache); what names a PV is its own, and the copies decide as before (above)."""
    shape = SHAPES["PersistentVolume"]
    a, b, other = shape(_pv(1, "fast")), shape(_pv(2, "fast")), shape(_pv(3, "slow"))
    assert a["spec"] is b["spec"] and a["spec"]["csi"] is b["spec"]["csi"]
    assert other["spec"] is not a["spec"] and other["spec"]["csi"]["driver"] is a["spec"]["csi"]["driver"]
    assert a["metadata"] is not b["metadata"] and a is not b
    assert a == {"apiVersion": "v1", "kind": "PersistentVolume",
                 "metadata": {"name": "pvc-1", "uid": "u-1", "resourceVersion": "1"},
                 "spec": {"storageClassName": "sc-fast", "csi": {"driver": "rook-ceph.rbd.csi.ceph.com",
                                                                 "volumeAttributes": {"clusterID": "rook-ceph",
                                                                                      "pool": "fast"}}}}


def test_a_shared_part_cannot_be_changed_in_place_and_its_copies_can() -> None:
    shape = SHAPES["PersistentVolume"]
    spec = shape(_pv(1, "fast"))["spec"]
    changes = [lambda: spec.__setitem__("x", 1), lambda: spec.__delitem__("csi"), lambda: spec.update(x=1),
               lambda: spec.pop("csi"), lambda: spec.setdefault("x", 1), spec.clear, spec.popitem,
               lambda: spec["csi"]["volumeAttributes"].__setitem__("pool", "slow")]
    for change in changes:
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert shape(_pv(2, "fast"))["spec"]["csi"]["volumeAttributes"]["pool"] == "fast"
    for copied in (copy.deepcopy(spec), copy.copy(spec), dict(spec)):
        assert type(copied) is dict and copied == spec
    deep = copy.deepcopy(spec)
    deep["csi"]["volumeAttributes"]["pool"] = "mine"
    assert spec["csi"]["volumeAttributes"]["pool"] == "fast"


def test_equal_values_of_other_types_are_not_shared() -> None:
    make = projection([("metadata", "name"), ("spec", "a")])
    one, true, float_one = (make({"metadata": {"name": "x"}, "spec": {"a": v}})["spec"]["a"] for v in (1, True, 1.0))
    assert (type(one), type(true), type(float_one)) == (int, bool, float)


def test_unique_sub_objects_are_kept_as_they_are_and_the_table_stays_bounded() -> None:
    """A CephFS volume's subvolumePath names it: its attributes are its own.  Past SHARED_MAX
    different ones, what many hold alike is still shared."""
    from kustodian.kube.slim import SHARED_MAX

    shape = SHAPES["PersistentVolume"]
    unique = [shape(_pv(i, "fs", subvolumePath=f"/volumes/csi/csi-vol-{i}")) for i in range(SHARED_MAX + 10)]
    assert unique[0]["spec"]["csi"]["volumeAttributes"]["subvolumePath"] == "/volumes/csi/csi-vol-0"
    first, second = shape(_pv(1, "fast")), shape(_pv(2, "fast"))
    assert first["spec"] is second["spec"]
