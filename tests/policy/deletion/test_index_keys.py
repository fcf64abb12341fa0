"""A PV's index keys, computed once per shared ``spec`` (issue 46: 47 -> ~5 µs a PV on a re-list).

The webhook's PV cache keeps a pool's PVs' ``spec`` as one read-only part
(``kube.slim.Shared``, a ``policy.objects.Frozen``); the PV indexes read nothing else, so
their keys are kept per part.  They must be exactly the keys the plain object gives, and a
plain ``spec`` (which may change in place) must never be answered from what was kept.
"""

from __future__ import annotations

import pytest

from kustodian.kube.slim import projection
from kustodian.policy.deletion import rook_rules
from kustodian.policy.deletion.indexing import spec_keyed
from kustodian.policy.objects import Frozen, RawObject
from kustodian.webhook.features.deletion_guard import cache_projections, needed_kinds

from .builders import Obj, csi_pv, rbd_pv

PV_INDEXES = needed_kinds(rook_rules())["PersistentVolume"]
SHAPE = projection(cache_projections(rook_rules())["PersistentVolume"])

VOLUMES: list[Obj] = [
    rbd_pv("rbd", pool="replicapool", journalPool="replicapool"),
    rbd_pv("rbd-ec", pool="ec-data", dataPool="ec-data", journalPool="replicapool"),
    rbd_pv("rbd-rns", pool="replicapool", radosNamespace="tenant-a", cluster_id="0123abcd"),
    csi_pv("fs", "rook-ceph.cephfs.csi.ceph.com", clusterID="rook-ceph", fsName="myfs", pool="myfs-data0",
           subvolumePath="/volumes/csi/csi-vol-1/uuid"),
    csi_pv("nfs", "rook-ceph.nfs.csi.ceph.com", clusterID="rook-ceph", fsName="myfs", nfsCluster="my-nfs"),
    csi_pv("classed", "rbd.csi.ceph.com", storage_class="rook-ceph-block"),
    csi_pv("foreign", "ebs.csi.aws.com", storage_class="gp3"),
]


@pytest.mark.parametrize("pv", VOLUMES, ids=[v["metadata"]["name"] for v in VOLUMES])
def test_every_pv_index_files_a_cached_volume_as_the_whole_volume(pv: Obj) -> None:
    cached, twin = SHAPE(pv), SHAPE(pv)
    assert isinstance(cached["spec"], Frozen) and twin["spec"] is cached["spec"]
    for name, fn in PV_INDEXES.items():
        whole = list(fn(pv))
        assert list(fn(cached)) == whole, name
        assert list(fn(twin)) == whole, name  # the second holder of the part: the kept keys


def test_the_rbd_pool_index_files_a_volume_once_under_its_pool() -> None:
    """ceph-csi names an RBD volume's pool as ``pool`` and again as ``journalPool``."""
    name = next(n for n in PV_INDEXES if n.startswith("kustodian.io/csi-volume:.rbd") and ";pool," in n)
    assert list(PV_INDEXES[name](rbd_pv("v", pool="bigpool", journalPool="bigpool"))) == ["rook-ceph/pool:bigpool"]


def _counting() -> tuple[list[RawObject], object]:
    seen: list[RawObject] = []

    def fn(obj: RawObject) -> list[str]:
        seen.append(obj)
        return [str(obj["spec"]["pool"])]

    return seen, spec_keyed(fn)


def test_keys_are_computed_once_per_shared_part_and_by_its_identity() -> None:
    seen, keys = _counting()
    part = Frozen({"pool": "a"})
    assert keys({"metadata": {"name": "1"}, "spec": part}) == ("a",)  # type: ignore[operator]
    assert keys({"metadata": {"name": "2"}, "spec": part}) == ("a",)  # type: ignore[operator]
    assert len(seen) == 1
    assert keys({"metadata": {"name": "3"}, "spec": Frozen({"pool": "a"})}) == ("a",)  # type: ignore[operator]
    assert len(seen) == 2  # an equal part that is another object: its own computation


def test_a_plain_spec_is_indexed_anew_every_time_so_a_change_in_place_is_seen() -> None:
    seen, keys = _counting()
    pv: Obj = {"metadata": {"name": "1"}, "spec": {"pool": "a"}}
    assert keys(pv) == ("a",)  # type: ignore[operator]
    pv["spec"]["pool"] = "b"
    assert keys(pv) == ("b",)  # type: ignore[operator]
    assert len(seen) == 2
