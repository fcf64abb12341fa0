"""PersistentVolumes exactly as ceph-csi (via the external-provisioner) writes them.

Used by the policy tables and by the real-API Rook story, so both see the same objects.
From ceph-csi (github.com/ceph/ceph-csi):

* every driver copies the StorageClass parameters into the volume context, minus the
  ``csi.storage.k8s.io/`` ones and ``topologyPools`` (``util.GetVolumeContext``);
* rbd adds ``pool``, ``journalPool`` (the pool unless the class names one), ``imageName``,
  ``radosNamespace`` when the clusterID's config names one, and ``dataPool`` when set
  (``rbdVolume.ToCSI``);
* cephfs adds ``subvolumeName`` and ``subvolumePath`` (``controllerserver.go``);
* nfs is a cephfs volume plus ``share`` (``nfs/controller``), with the class's ``nfsCluster``
  and ``server``.

The external-provisioner adds ``storage.kubernetes.io/csiProvisionerIdentity``.  RADOS
namespaces and subvolume groups do not appear in the class: their StorageClass names the
*hashed* ``clusterID`` Rook publishes in the CR's ``status.info.clusterID``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PROVISIONER_IDENTITY = "storage.kubernetes.io/csiProvisionerIdentity"


def _context(parameters: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in parameters.items() if not k.startswith("csi.storage.k8s.io/") and k != "topologyPools"}


def _pv(name: str, driver: str, handle: str, attributes: Mapping[str, str], storage_class: str,
        claim: tuple[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Delete",
        "storageClassName": storage_class,
        "volumeMode": "Filesystem",
        "csi": {"driver": driver, "volumeHandle": handle, "fsType": "ext4",
                "volumeAttributes": {**attributes, PROVISIONER_IDENTITY: f"1700000000000-1234-{driver}"}},
    }
    if claim:
        spec["claimRef"] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": claim[0],
                            "name": claim[1]}
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": driver}},
            "spec": spec}


def rbd_pv(name: str, parameters: Mapping[str, str], *, storage_class: str = "rook-ceph-block",
           rados_namespace: str = "", operator_namespace: str = "rook-ceph",
           claim: tuple[str, str] | None = None) -> dict[str, Any]:
    """A volume of ``<operator_namespace>.rbd.csi.ceph.com`` made from a class with ``parameters``."""
    ctx = _context(parameters)
    pool = ctx["pool"]
    ctx.update({"pool": pool, "journalPool": ctx.get("journalPool", pool),
                "imageName": f"csi-vol-{name}"})
    if rados_namespace:
        ctx["radosNamespace"] = rados_namespace
    return _pv(name, f"{operator_namespace}.rbd.csi.ceph.com", f"0001-0009-{ctx['clusterID']}-{name}", ctx,
               storage_class, claim)


def cephfs_pv(name: str, parameters: Mapping[str, str], *, storage_class: str = "rook-cephfs",
              subvolume_group: str = "csi", operator_namespace: str = "rook-ceph",
              claim: tuple[str, str] | None = None) -> dict[str, Any]:
    ctx = _context(parameters)
    ctx.update({"subvolumeName": f"csi-vol-{name}",
                "subvolumePath": f"/volumes/{subvolume_group}/csi-vol-{name}/0c0c"})
    return _pv(name, f"{operator_namespace}.cephfs.csi.ceph.com", f"0001-0009-{ctx['clusterID']}-{name}", ctx,
               storage_class, claim)


def nfs_pv(name: str, parameters: Mapping[str, str], *, storage_class: str = "rook-nfs",
           operator_namespace: str = "rook-ceph", claim: tuple[str, str] | None = None) -> dict[str, Any]:
    ctx = _context(parameters)
    ctx.update({"subvolumeName": f"nfs-export-{name}",
                "subvolumePath": f"/volumes/csi/nfs-export-{name}/0c0c",
                "share": f"/0001-0009-{ctx['clusterID']}-{name}"})
    return _pv(name, f"{operator_namespace}.nfs.csi.ceph.com", f"0001-0009-{ctx['clusterID']}-{name}", ctx,
               storage_class, claim)


# The classes of Rook's deploy/examples/csi/*/storageclass.yaml (parameters as written there).
RBD_CLASS = {"clusterID": "rook-ceph", "pool": "replicapool", "imageFormat": "2", "imageFeatures": "layering",
             "csi.storage.k8s.io/provisioner-secret-name": "rook-csi-rbd-provisioner",
             "csi.storage.k8s.io/fstype": "ext4"}
CEPHFS_CLASS = {"clusterID": "rook-ceph", "fsName": "myfs", "pool": "myfs-replicated",
                "csi.storage.k8s.io/provisioner-secret-name": "rook-csi-cephfs-provisioner"}
NFS_CLASS = {"nfsCluster": "my-nfs", "server": "rook-ceph-nfs-my-nfs-a", "clusterID": "rook-ceph",
             "fsName": "myfs", "pool": "myfs-replicated",
             "csi.storage.k8s.io/provisioner-secret-name": "rook-csi-cephfs-provisioner"}
