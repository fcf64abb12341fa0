"""Synthetic cluster objects for the benchmarks: slim, realistic shapes, deterministic."""

from __future__ import annotations

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
    }
