"""Small factories for the raw objects the deletion tests need, and views over them.

Objects are the plain dicts the API server sends; ``view()`` files them by kind key
and builds a ``ListView`` with the RuleSet's own indexers, so every test exercises
the indexes exactly as the watch cache would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kustodian.policy.deletion import RuleSet, rook_rules
from kustodian.policy.deletion.rook_matchers import BUCKET_CLASS, STORAGE_CLASS
from kustodian.policy.objects import RawObject
from kustodian.policy.store import ClusterView, ListView, kind_key

Obj = dict[str, Any]
NS = "rook-ceph"
CEPH = "ceph.rook.io/v1"


def obj(
    api_version: str,
    kind: str,
    name: str,
    namespace: str = "",
    spec: Mapping[str, Any] | None = None,
    annotations: Mapping[str, str] | None = None,
    **top: Any,
) -> Obj:
    meta: Obj = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if annotations:
        meta["annotations"] = dict(annotations)
    out: Obj = {"apiVersion": api_version, "kind": kind, "metadata": meta, **top}
    if spec is not None:
        out["spec"] = dict(spec)
    return out


def ceph(kind: str, name: str, namespace: str = NS, /, **spec: Any) -> Obj:
    return obj(CEPH, kind, name, namespace, spec)


def cluster(namespace: str = NS, *, allow_uninstall_with_volumes: bool | None = None) -> Obj:
    spec: Obj = {}
    if allow_uninstall_with_volumes is not None:
        spec["cleanupPolicy"] = {"allowUninstallWithVolumes": allow_uninstall_with_volumes}
    return ceph("CephCluster", namespace, namespace, **spec)


def blockpool(name: str = "replicapool", namespace: str = NS, *, pool_name: str = "", **spec: Any) -> Obj:
    if pool_name:
        spec["name"] = pool_name  # Rook's spec.name: the Ceph pool name when it differs from the CR's
    return ceph("CephBlockPool", name, namespace, **spec)


def filesystem(
    name: str = "myfs", namespace: str = NS, data_pools: Sequence[str] = ("",), **spec: Any
) -> Obj:
    pools = [{"name": p} if p else {"replicated": {"size": 3}} for p in data_pools]
    return ceph("CephFilesystem", name, namespace, dataPools=pools, **spec)


def object_store(name: str = "my-store", namespace: str = NS, **spec: Any) -> Obj:
    return ceph("CephObjectStore", name, namespace, **spec)


def nfs(name: str, pool: str, namespace: str = NS, *, rados: bool = True) -> Obj:
    return ceph("CephNFS", name, namespace, **({"rados": {"pool": pool}} if rados else {"pool": pool}))


def client(name: str, caps: Mapping[str, str], namespace: str = NS) -> Obj:
    return ceph("CephClient", name, namespace, caps=dict(caps))


def csi_pv(
    name: str, driver: str = "rook-ceph.rbd.csi.ceph.com", storage_class: str = "", **attributes: str
) -> Obj:
    spec: Obj = {
        "csi": {"driver": driver, "volumeHandle": f"0001-{name}", "volumeAttributes": dict(attributes)}
    }
    if storage_class:
        spec["storageClassName"] = storage_class
    return obj("v1", "PersistentVolume", name, spec=spec)


def rbd_pv(name: str, pool: str = "replicapool", cluster_id: str = NS, **extra: str) -> Obj:
    return csi_pv(name, clusterID=cluster_id, pool=pool, **extra)


def storage_class(name: str, provisioner: str, **parameters: str) -> Obj:
    return obj(
        "storage.k8s.io/v1", "StorageClass", name, provisioner=provisioner, parameters=dict(parameters)
    )


def view(*objects: RawObject, rules: RuleSet | None = None, missing: Iterable[str] = ()) -> ListView:
    """A ListView over ``objects`` where every kind the rules read exists (minus ``missing``)."""
    rules = rules or rook_rules()
    kinds = set(rules.dependent_kinds()) | set(rules.provider_kinds()) | {STORAGE_CLASS, BUCKET_CLASS}
    kinds |= {skip.kind for rule in rules.rules if (skip := rule.skip_if) is not None}
    by_kind: dict[str, list[RawObject]] = {k: [] for k in kinds}
    for o in objects:
        by_kind.setdefault(kind_key(o["apiVersion"], o["kind"]), []).append(o)
    for k in missing:
        by_kind.pop(k, None)
    return ListView(by_kind, rules.indexers())


def key_of(o: RawObject) -> str:
    return kind_key(o["apiVersion"], o["kind"])


class IndexOnlyView:
    """Wraps a view, refusing ``list``/``get`` and counting ``by_index`` calls."""

    def __init__(self, inner: ClusterView) -> None:
        self.inner = inner
        self.lookups: list[tuple[str, str, str]] = []

    def has_kind(self, kind: str) -> bool:
        return self.inner.has_kind(kind)

    def get(self, kind: str, namespace: str, name: str) -> RawObject | None:
        raise AssertionError(f"get({kind}, {namespace}, {name}) on the hot path")

    def list(self, kind: str, namespace: str | None = None) -> Sequence[RawObject]:
        raise AssertionError(f"list({kind}, {namespace}) on the hot path")

    def by_index(self, kind: str, index: str, key: str) -> Sequence[RawObject]:
        self.lookups.append((kind, index, key))
        return self.inner.by_index(kind, index, key)
