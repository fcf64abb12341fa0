"""Synthetic cluster objects for the benchmarks: slim, realistic shapes, deterministic."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

Obj = dict[str, Any]
POOL_NS = "rook-ceph"
SC_NAME = "rook-ceph-block"  # pool replicapool: the one the bench deletes
BIG_SC = "rook-ceph-big"  # pool bigpool: where most volumes live


def pv(i: int, *, pool: str = "replicapool") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"pvc-{i:08d}", "uid": f"uid-pv-{i}", "resourceVersion": str(i)},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": pool_storage_class(pool),
            "claimRef": {"namespace": f"app-{i % 500}", "name": f"data-{i}"},
            "csi": {
                "driver": "rook-ceph.rbd.csi.ceph.com",
                "volumeHandle": f"0001-{i}",
                "volumeAttributes": {"clusterID": POOL_NS, "pool": pool},
            },
        },
        "status": {"phase": "Bound"},
    }


def pvc(i: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": f"data-{i}",
            "namespace": f"app-{i % 500}",
            "uid": f"uid-pvc-{i}",
            "resourceVersion": str(i),
        },
        "spec": {
            "storageClassName": SC_NAME,
            "volumeName": f"pvc-{i:08d}",
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "10Gi"}},
        },
        "status": {"phase": "Bound"},
    }


def pod(i: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"app-{i}",
            "namespace": f"app-{i % 500}",
            "uid": f"uid-pod-{i}",
            "resourceVersion": str(i),
            "labels": {"app": f"app-{i % 1000}"},
        },
        "spec": {
            "nodeName": f"node-{i % 1000}",
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{i % 50_000}"}}],
        },
        "status": {"phase": "Running"},
    }


def namespace(i: int) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"app-{i}", "resourceVersion": "1"}}


def pool_storage_class(pool: str) -> str:
    """Each pool has its own StorageClass, so a PV depends on one pool by both rules."""
    return {"replicapool": SC_NAME, "bigpool": BIG_SC}.get(pool, f"sc-{pool}")


def storage_class(name: str = SC_NAME, pool: str = "replicapool") -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "provisioner": "rook-ceph.rbd.csi.ceph.com",
        "metadata": {
            "name": name,
            "resourceVersion": "1",
            "annotations": {"reclaimspace.csiaddons.openshift.io/schedule": "@daily"},
        },
        "parameters": {"clusterID": POOL_NS, "pool": pool},
    }


def pool(name: str) -> Obj:
    return {
        "apiVersion": "ceph.rook.io/v1",
        "kind": "CephBlockPool",
        "metadata": {"name": name, "namespace": POOL_NS, "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {"replicated": {"size": 3}},
    }


def client_profile(name: str = POOL_NS) -> Obj:
    """The ClientProfile Rook writes for a CephCluster (ceph-csi-operator, Rook v1.18+): every PV's clusterID."""
    return {"apiVersion": "csi.ceph.io/v1", "kind": "ClientProfile",
            "metadata": {"name": name, "namespace": POOL_NS, "uid": f"uid-cp-{name}", "resourceVersion": "1"},
            "spec": {"cephConnectionRef": {"name": POOL_NS}}}


def ceph_csi_objects(kind: str) -> list[Obj]:
    """Rook v1.20's CSI objects: the cluster's CephConnection and ClientProfile, the two Drivers of its
    operator.yaml (the rbd one is every PV's driver)."""
    meta = {"namespace": POOL_NS, "resourceVersion": "1"}
    if kind == "ClientProfile":
        return [client_profile()]
    if kind == "CephConnection":
        return [{"apiVersion": "csi.ceph.io/v1", "kind": kind, "metadata": {"name": POOL_NS, **meta},
                 "spec": {"monitors": ["10.0.0.1:6789"]}}]
    return [{"apiVersion": "csi.ceph.io/v1", "kind": "Driver", "metadata": {"name": name, **meta},
             "spec": {"fsGroupPolicy": "File"}}
            for name in ("rook-ceph.rbd.csi.ceph.com", "rook-ceph.cephfs.csi.ceph.com")]


def cluster_objects(pvs: int, pvcs: int, pods: int, *, dependents_of_pool: int = 300,
                    extra_pools: Mapping[str, int] | None = None) -> dict[str, list[Obj]]:
    """Most PVs sit on ``bigpool``; ``dependents_of_pool`` of them on ``replicapool``, the one deleted.

    ``extra_pools`` (name -> PV count) take the next PVs, each pool with its own StorageClass.
    """
    return {key: list(make()) for key, make in cluster_kinds(
        pvs, pvcs, pods, dependents_of_pool=dependents_of_pool, extra_pools=extra_pools).items()}


def cluster_kinds(pvs: int, pvcs: int, pods: int, *, dependents_of_pool: int = 300,
                  extra_pools: Mapping[str, int] | None = None) -> dict[str, Callable[[], Iterator[Obj]]]:
    """``cluster_objects`` as one generator per kind: objects made one at a time, as a list's
    pages arrive, so a process that caches a kind never holds its raw objects all at once."""
    owners = ["replicapool"] * dependents_of_pool
    for name, count in (extra_pools or {}).items():
        owners += [name] * count
    extra = [storage_class(pool_storage_class(n), n) for n in extra_pools or {}]
    return {
        "PersistentVolume": lambda: (pv(i, pool=owners[i] if i < len(owners) else "bigpool")
                                     for i in range(pvs)),
        "PersistentVolumeClaim": lambda: (pvc(i) for i in range(pvcs)),
        "Pod": lambda: (pod(i) for i in range(pods)),
        "Namespace": lambda: (namespace(i) for i in range(500)),
        "StorageClass.storage.k8s.io": lambda: iter([storage_class(), storage_class(BIG_SC, "bigpool"), *extra]),
        "CephBlockPool.ceph.rook.io": lambda: iter([pool("replicapool"), pool("bigpool"), pool("emptypool"),
                                                    *(pool(n) for n in extra_pools or {})]),
        **{f"{kind}.csi.ceph.io": functools.partial(_iterate, ceph_csi_objects, kind)
           for kind in ("ClientProfile", "CephConnection", "Driver")},
    }


def _iterate(make: Callable[[str], list[Obj]], kind: str) -> Iterator[Obj]:
    return iter(make(kind))


def _uid(kind: int, i: int) -> str:
    return f"{i:08x}-{kind:04x}-4{i % 4096:03x}-8{(i * 7) % 4096:03x}-{(i * 2654435761) % 2**48:012x}"


def _managed(manager: str, stamp: str, fields: Obj, *, subresource: str | None = None) -> Obj:
    entry: Obj = {"manager": manager, "operation": "Update", "apiVersion": "v1", "time": stamp,
                  "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        entry["subresource"] = subresource
    return entry


def api_pv(i: int, *, pool: str = "replicapool") -> Obj:
    """``pv(i)`` as an API server lists a ceph-csi RBD volume: uids, timestamps, provisioner
    annotations, finalizers, the whole CSI source and the managed fields of its writers."""
    obj = pv(i, pool=pool)
    stamp = f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}Z"
    image = _uid(3, i)
    meta, spec = obj["metadata"], obj["spec"]
    meta.update({
        "uid": _uid(1, i), "resourceVersion": str(1_000_000 + i), "creationTimestamp": stamp,
        "annotations": {"pv.kubernetes.io/provisioned-by": "rook-ceph.rbd.csi.ceph.com",
                        "volume.kubernetes.io/provisioner-deletion-secret-name": "rook-csi-rbd-provisioner",
                        "volume.kubernetes.io/provisioner-deletion-secret-namespace": POOL_NS},
        "finalizers": ["external-provisioner.volume.kubernetes.io/finalizer", "kubernetes.io/pv-protection"],
        "managedFields": [
            _managed("csi-provisioner", stamp, {
                "f:metadata": {"f:annotations": {".": {}, "f:pv.kubernetes.io/provisioned-by": {},
                                                 "f:volume.kubernetes.io/provisioner-deletion-secret-name": {},
                                                 "f:volume.kubernetes.io/provisioner-deletion-secret-namespace": {}},
                               "f:finalizers": {"v:\"external-provisioner.volume.kubernetes.io/finalizer\"": {}}},
                "f:spec": {"f:accessModes": {}, "f:capacity": {".": {}, "f:storage": {}},
                           "f:claimRef": {".": {}, "f:apiVersion": {}, "f:kind": {}, "f:name": {},
                                          "f:namespace": {}, "f:resourceVersion": {}, "f:uid": {}},
                           "f:csi": {".": {}, "f:controllerExpandSecretRef": {".": {}, "f:name": {},
                                                                               "f:namespace": {}},
                                     "f:driver": {}, "f:fsType": {},
                                     "f:nodeStageSecretRef": {".": {}, "f:name": {}, "f:namespace": {}},
                                     "f:volumeAttributes": {".": {}, "f:clusterID": {}, "f:imageFeatures": {},
                                                            "f:imageFormat": {}, "f:imageName": {},
                                                            "f:journalPool": {}, "f:pool": {},
                                                            "f:storage.kubernetes.io/csiProvisionerIdentity": {}},
                                     "f:volumeHandle": {}},
                           "f:persistentVolumeReclaimPolicy": {}, "f:storageClassName": {}, "f:volumeMode": {}}}),
            _managed("kube-controller-manager", stamp, {"f:status": {"f:phase": {}}}, subresource="status"),
        ],
    })
    claim = spec["claimRef"]
    claim.update({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "uid": _uid(2, i),
                  "resourceVersion": str(900_000 + i)})
    spec["volumeMode"] = "Filesystem"
    spec["csi"] = {
        "controllerExpandSecretRef": {"name": "rook-csi-rbd-provisioner", "namespace": POOL_NS},
        "driver": "rook-ceph.rbd.csi.ceph.com",
        "fsType": "ext4",
        "nodeStageSecretRef": {"name": "rook-csi-rbd-node", "namespace": POOL_NS},
        "volumeAttributes": {"clusterID": POOL_NS, "imageFeatures": "layering", "imageFormat": "2",
                             "imageName": f"csi-vol-{image}", "journalPool": pool, "pool": pool,
                             "storage.kubernetes.io/csiProvisionerIdentity":
                                 "1763000000000-8081-rook-ceph.rbd.csi.ceph.com"},
        "volumeHandle": f"0001-0009-{POOL_NS}-0000000000000002-{image}",
    }
    obj["status"] = {"phase": "Bound", "lastPhaseTransitionTime": stamp}
    return obj


def api_pvc(i: int) -> Obj:
    """``pvc(i)`` as an API server lists a bound claim made with ``kubectl apply``."""
    obj = pvc(i)
    stamp = f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 3) % 60:02d}Z"
    meta, spec = obj["metadata"], obj["spec"]
    applied = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"annotations": {}, "name": meta["name"], "namespace": meta["namespace"]},
               "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}},
                        "storageClassName": spec["storageClassName"]}}
    meta.update({
        "uid": _uid(2, i), "resourceVersion": str(900_000 + i), "creationTimestamp": stamp,
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                            json.dumps(applied, separators=(",", ":")) + "\n",
                        "pv.kubernetes.io/bind-completed": "yes",
                        "pv.kubernetes.io/bound-by-controller": "yes",
                        "volume.beta.kubernetes.io/storage-provisioner": "rook-ceph.rbd.csi.ceph.com",
                        "volume.kubernetes.io/storage-provisioner": "rook-ceph.rbd.csi.ceph.com"},
        "finalizers": ["kubernetes.io/pvc-protection"],
        "managedFields": [
            _managed("kubectl-client-side-apply", stamp, {
                "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}}},
                "f:spec": {"f:accessModes": {}, "f:resources": {"f:requests": {".": {}, "f:storage": {}}},
                           "f:storageClassName": {}, "f:volumeMode": {}}}),
            _managed("kube-controller-manager", stamp, {
                "f:metadata": {"f:annotations": {"f:pv.kubernetes.io/bind-completed": {},
                                                 "f:pv.kubernetes.io/bound-by-controller": {},
                                                 "f:volume.beta.kubernetes.io/storage-provisioner": {},
                                                 "f:volume.kubernetes.io/storage-provisioner": {}}},
                "f:spec": {"f:volumeName": {}}}),
            _managed("kube-controller-manager", stamp, {
                "f:status": {"f:accessModes": {}, "f:capacity": {".": {}, "f:storage": {}}, "f:phase": {}}},
                subresource="status"),
        ],
    })
    spec["volumeMode"] = "Filesystem"
    obj["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}
    return obj
