"""A PV in a RADOS namespace or subvolume group counts for its pool, filesystem and cluster
whether or not the CephBlockPoolRadosNamespace / CephFilesystemSubVolumeGroup still exists.

The PV names the group's hashed clusterID (Rook's buildClusterID: sha256 of
``<namespace>-<pool>-block-<rados namespace>`` or ``<namespace>-<fs>-file-<group>``, first 16
bytes); its own attributes give the rest of the hash's input.
"""

from __future__ import annotations

import hashlib

from kustodian.policy.deletion import decide_delete, rook_rules
from tests.ceph_csi import CEPHFS_CLASS, RBD_CLASS, cephfs_pv, nfs_pv, rbd_pv

from .builders import NS, Obj, blockpool, ceph, cluster, filesystem, key_of, view


def rook_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


RNS_ID = rook_hash(f"{NS}-replicapool-block-namespace-a")
SVG_ID = rook_hash(f"{NS}-myfs-file-group-a")
RNS_PV = rbd_pv("pvc-rns", {**RBD_CLASS, "clusterID": RNS_ID}, rados_namespace="namespace-a")
SVG_PV = cephfs_pv("pvc-svg", {**CEPHFS_CLASS, "clusterID": SVG_ID}, subvolume_group="group-a")


def decide(provider: Obj, *others: Obj) -> list[str]:
    decision = decide_delete(key_of(provider), provider, view(provider, *others), rook_rules())
    return sorted(r.name for refs in decision.dependents.values() for r in refs if not decision.allowed)


def test_a_pool_is_refused_for_a_volume_in_a_rados_namespace_whose_cr_is_gone() -> None:
    assert decide(blockpool(), RNS_PV) == ["pvc-rns"]


def test_a_filesystem_is_refused_for_a_volume_in_a_subvolume_group_whose_cr_is_gone() -> None:
    assert decide(filesystem("myfs"), SVG_PV) == ["pvc-svg"]


def test_the_cluster_is_refused_for_both() -> None:
    assert decide(cluster(), RNS_PV, SVG_PV) == ["pvc-rns", "pvc-svg"]


def test_a_group_of_another_pool_filesystem_or_cluster_does_not_count() -> None:
    other_pool = rbd_pv("pvc-x", {**RBD_CLASS, "pool": "otherpool",
                                  "clusterID": rook_hash(f"{NS}-otherpool-block-namespace-a")},
                        rados_namespace="namespace-a")
    assert decide(blockpool(), other_pool) == []
    elsewhere = rbd_pv("pvc-y", {**RBD_CLASS, "clusterID": rook_hash("other-ns-replicapool-block-namespace-a")},
                       rados_namespace="namespace-a")
    assert decide(blockpool(), elsewhere) == []
    other_fs = cephfs_pv("pvc-z", {**CEPHFS_CLASS, "fsName": "otherfs",
                                   "clusterID": rook_hash(f"{NS}-otherfs-file-group-a")}, subvolume_group="group-a")
    assert decide(filesystem("myfs"), other_fs) == []


def test_a_pool_named_apart_from_its_cr_is_hashed_by_its_cr_name() -> None:
    pool = blockpool("replicapool", pool_name="ceph-pool")
    pv = rbd_pv("pvc-named", {**RBD_CLASS, "pool": "ceph-pool", "clusterID": RNS_ID}, rados_namespace="namespace-a")
    assert decide(pool, pv) == ["pvc-named"]


def test_with_the_cr_still_there_the_answer_is_unchanged() -> None:
    rns = ceph("CephBlockPoolRadosNamespace", "namespace-a", blockPoolName="replicapool")
    assert decide(blockpool(), rns, RNS_PV) == ["namespace-a", "pvc-rns"]


def test_an_nfs_export_in_a_gone_subvolume_group_counts_for_the_cluster() -> None:
    pv = nfs_pv("pvc-nfs", {"nfsCluster": "my-nfs", "server": "s", "fsName": "myfs", "pool": "myfs-replicated",
                            "clusterID": SVG_ID})
    pv["spec"]["csi"]["volumeAttributes"]["subvolumePath"] = "/volumes/group-a/nfs-export-pvc-nfs/0c0c"
    assert decide(cluster(), pv) == ["pvc-nfs"]
