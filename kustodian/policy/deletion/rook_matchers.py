"""Matchers that need Rook knowledge: pools, Ceph caps, CSI volumes, bucket provisioners.

They are still declarative (the built-in rules pass driver suffixes and attribute
names as data) but each relies on a derivation only Rook defines: which pools a
provider owns (``pools.py``), how Ceph capability strings name pools, how Rook's
COSI driver names its user secrets.  Each matcher is an indexer/lookup pair as
described in ``indexing.py``; pool references are keyed ``<scope>/pool:<name>``
(scope: the namespace, or a CSI ``clusterID``), names ``<scope>/name:<name>``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kustodian.policy.deletion.indexing import (
    IndexSpec,
    Leaf,
    Provider,
    cluster_field_index,
    field_index,
    namespace_index,
    path,
    reads_spec_only,
    spec_keyed,
    strings,
)
from kustodian.policy.deletion.pools import pool_index_keys, values_at
from kustodian.policy.deletion.schema import (
    CapsPool,
    CosiBucket,
    CsiVolume,
    FieldRef,
    MultisitePeerZones,
    PoolRef,
    Rule,
    StorageClassRef,
)
from kustodian.policy.objects import RawObject, field, map_field, name, namespace, str_field
from kustodian.policy.store import ClusterView

STORAGE_CLASS = "StorageClass.storage.k8s.io"
CEPH_CLUSTER = "CephCluster.ceph.rook.io"
BLOCK_POOL = "CephBlockPool.ceph.rook.io"
FILESYSTEM = "CephFilesystem.ceph.rook.io"
NFS = "CephNFS.ceph.rook.io"
RADOS_NAMESPACE = "CephBlockPoolRadosNamespace.ceph.rook.io"
SUBVOLUME_GROUP = "CephFilesystemSubVolumeGroup.ceph.rook.io"
IMPLICIT_RADOS_NAMESPACE = "<implicit>"  # Rook's ImplicitNamespaceKey: the pool's default namespace
BUCKET_CLASS = "BucketClass.objectstorage.k8s.io"
COSI_INDEX = "kustodian.io/cosi-store"
CEPH_COSI_DRIVER_SUFFIX = "ceph.objectstorage.k8s.io"
ROOK_USER_SECRET_PREFIX = "rook-ceph-object-user-"  # noqa: S105 - a Secret *name* prefix
# "allow rw pool=foo", "profile rbd pool=foo", and the older "allow rw pool foo".
_CAPS_POOL = re.compile(r"\bpool(?:=|\s+)[\"']?([^\s,;\"']+)")


def _pool_keys(provider: Provider) -> list[str]:
    return provider.pools.lookup_keys(provider.namespace) if provider.pools else []


# --- CSI cluster IDs -----------------------------------------------------------------------


def _rook_hash(text: str) -> str:
    # k8sutil.Hash: the first 16 bytes of SHA-256, hex.  An identifier, not a secret.
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def own_cluster_ids(kind: str, obj: RawObject) -> list[str]:
    """The clusterIDs a RADOS namespace or subvolume group is known by (empty for other kinds)."""
    ns = namespace(obj)
    if kind == RADOS_NAMESPACE:
        rns = str_field(obj, "spec", "name") or name(obj)
        rns = "" if rns == IMPLICIT_RADOS_NAMESPACE else rns
        derived = f"{ns}-{str_field(obj, 'spec', 'blockPoolName')}-block-{rns}"
    elif kind == SUBVOLUME_GROUP:
        svg = str_field(obj, "spec", "name") or name(obj)
        derived = f"{ns}-{str_field(obj, 'spec', 'filesystemName')}-file-{svg}"
    else:
        return []
    given = (str_field(obj, "spec", "clusterID"), str_field(obj, "status", "info", "clusterID"))
    return sorted({v for v in given if v} | {_rook_hash(derived)})


# provider kind -> (kind whose clusterIDs it also answers for, field naming the provider or None: all)
_CHILD_CLUSTER_IDS: Mapping[str, tuple[tuple[str, str | None], ...]] = {
    CEPH_CLUSTER: ((RADOS_NAMESPACE, None), (SUBVOLUME_GROUP, None)),
    BLOCK_POOL: ((RADOS_NAMESPACE, "spec.blockPoolName"),),
    FILESYSTEM: ((SUBVOLUME_GROUP, "spec.filesystemName"),),
    NFS: ((SUBVOLUME_GROUP, None),),
}


def _child_index(kind: str, ref: str | None) -> IndexSpec:
    return namespace_index(kind) if ref is None else field_index(kind, FieldRef(type="field-ref", field=ref))


# --- volumes whose RADOS namespace or subvolume group CR is gone ------------------------------
#
# A PV in a RADOS namespace or subvolume group names the group's hashed clusterID, not the pool
# or filesystem's, and the CR that publishes that hash may be deleted while the PV remains (Rook
# still refuses: IsPoolEmpty sees the images, the filesystem sees its subvolumes).  The PV's own
# attributes name the rest of the hash's input: rbd's ``pool`` + ``radosNamespace``, cephfs's
# ``fsName`` + the group in ``subvolumePath`` (``/volumes/<group>/<subvolume>/<uuid>``); with
# the provider's namespace they give Rook's buildClusterID again.  Read as a hop: the PVs that
# name such a group are looked up by pool (or filesystem), their groups hashed into clusterIDs,
# and the volumes are then found under those clusterIDs like any other.

PERSISTENT_VOLUME = "PersistentVolume"
ANY = "*"


def _rbd_group_keys(obj: RawObject) -> list[str]:
    if not _driver_matches(str_field(obj, "spec", "csi", "driver"), ".rbd.csi.ceph.com"):
        return []
    attributes = map_field(obj, "spec", "csi", "volumeAttributes")
    pool, rns = attributes.get("pool"), attributes.get("radosNamespace")
    if not isinstance(pool, str) or not pool or not isinstance(rns, str) or not rns:
        return []
    return [f"pool:{pool}", ANY]


def _subvolume_group(attributes: Mapping[str, Any]) -> str:
    """The group of ``/volumes/<group>/<subvolume>/<uuid>`` (ceph-csi's subvolumePath), or ""."""
    path_ = attributes.get("subvolumePath")
    if not isinstance(path_, str):
        return ""
    parts = path_.split("/")
    return parts[2] if len(parts) > 3 and parts[0] == "" and parts[1] == "volumes" else ""


def _cephfs_group_keys(obj: RawObject) -> list[str]:
    driver = str_field(obj, "spec", "csi", "driver")
    if not (_driver_matches(driver, ".cephfs.csi.ceph.com") or _driver_matches(driver, ".nfs.csi.ceph.com")):
        return []
    attributes = map_field(obj, "spec", "csi", "volumeAttributes")
    fs = attributes.get("fsName")
    if not isinstance(fs, str) or not fs or not _subvolume_group(attributes):
        return []
    return [f"fs:{fs}", ANY]


RBD_GROUP_VOLUMES = IndexSpec(PERSISTENT_VOLUME, "kustodian.io/rbd-rados-namespace",
                              spec_keyed(_rbd_group_keys))
CEPHFS_GROUP_VOLUMES = IndexSpec(PERSISTENT_VOLUME, "kustodian.io/cephfs-subvolume-group",
                                 spec_keyed(_cephfs_group_keys))
#: the fields these indexes (and ``group_cluster_ids``) read: all a PV cache must keep for them
GROUP_VOLUME_READS: dict[str, frozenset[tuple[str, ...]]] = {
    spec.name: frozenset({("spec", "csi", "driver"),
                          *(("spec", "csi", "volumeAttributes", a) for a in attrs)})
    for spec, attrs in ((RBD_GROUP_VOLUMES, ("pool", "radosNamespace")),
                        (CEPHFS_GROUP_VOLUMES, ("fsName", "subvolumePath")))
}


def _attributes(pv: RawObject) -> Mapping[str, Any]:
    return map_field(pv, "spec", "csi", "volumeAttributes")


def group_cluster_ids(provider: Provider, view: ClusterView) -> set[str]:
    """The clusterIDs of the RADOS namespaces / subvolume groups the provider's PVs name, whether
    or not their CRs exist, hashed from the PVs' attributes as Rook's buildClusterID does."""
    ns = provider.namespace
    if not ns or not view.has_kind(PERSISTENT_VOLUME):
        return set()
    ids: set[str] = set()
    if provider.kind == BLOCK_POOL:
        # the hash names the CephBlockPool CR (spec.blockPoolName); the PV names the Ceph pool
        pools = sorted(provider.pools.exact) if provider.pools else []
        for pv in RBD_GROUP_VOLUMES.lookup(view, [f"pool:{p}" for p in pools]):
            ids.add(_rook_hash(f"{ns}-{provider.name}-block-{_attributes(pv).get('radosNamespace')}"))
    elif provider.kind == FILESYSTEM:
        for pv in CEPHFS_GROUP_VOLUMES.lookup(view, [f"fs:{provider.name}"]):
            ids.add(_rook_hash(f"{ns}-{provider.name}-file-{_subvolume_group(_attributes(pv))}"))
    if provider.kind in (CEPH_CLUSTER, NFS):
        # every group of the cluster: its pools and filesystems may be gone too (a pool CR is
        # taken to be named as its Ceph pool, Rook's default)
        if provider.kind == CEPH_CLUSTER:
            for pv in RBD_GROUP_VOLUMES.lookup(view, [ANY]):
                a = _attributes(pv)
                ids.add(_rook_hash(f"{ns}-{a.get('pool')}-block-{a.get('radosNamespace')}"))
        for pv in CEPHFS_GROUP_VOLUMES.lookup(view, [ANY]):
            a = _attributes(pv)
            ids.add(_rook_hash(f"{ns}-{a.get('fsName')}-file-{_subvolume_group(a)}"))
    return ids


def cluster_id_indexes() -> list[IndexSpec]:
    """Indexes ``provider_cluster_ids`` reads."""
    children = [_child_index(kind, ref) for children in _CHILD_CLUSTER_IDS.values() for kind, ref in children]
    return [*children, RBD_GROUP_VOLUMES, CEPHFS_GROUP_VOLUMES]


def provider_cluster_ids(provider: Provider, view: ClusterView) -> list[str]:
    """Every CSI clusterID under which volumes of ``provider`` may be found (read once per view)."""
    kept = provider.derived.get("cluster-ids")
    if kept is not None and kept[0] is view:
        return list(kept[1])
    ids = _provider_cluster_ids(provider, view)
    provider.derived["cluster-ids"] = (view, tuple(ids))
    return ids


def _provider_cluster_ids(provider: Provider, view: ClusterView) -> list[str]:
    own = own_cluster_ids(provider.kind, provider.obj)
    if own:
        return own
    ns = provider.namespace
    ids = {ns} if ns else set()
    for kind, ref in _CHILD_CLUSTER_IDS.get(provider.kind, ()):
        if not ns or not view.has_kind(kind):
            continue
        key = ns if ref is None else f"{ns}/{provider.name}"
        for child in _child_index(kind, ref).lookup(view, [key]):
            ids.update(own_cluster_ids(kind, child))
    if provider.kind in _CHILD_CLUSTER_IDS:
        ids |= group_cluster_ids(provider, view)
    return sorted(ids)


def _driver_matches(driver: str, suffix: str) -> bool:
    # "<operator-ns>.rbd.csi.ceph.com", or a plain "rbd.csi.ceph.com" install: prefer blocking.
    return driver.endswith(suffix) or driver == suffix.lstrip(".")


# --- pool-ref and caps-pool ----------------------------------------------------------------


def _pool_ref_index(kind: str, m: PoolRef) -> IndexSpec:
    def fn(obj: RawObject) -> list[str]:
        ns = namespace(obj)
        pools = {pool for f in m.fields for pool in values_at(obj, f)} | set(m.implicit)
        return [key for pool in sorted(pools) for key in pool_index_keys(ns, pool)]

    implicit = f"+{','.join(m.implicit)}" if m.implicit else ""
    return IndexSpec(kind, "kustodian.io/pool-ref:" + ",".join(m.fields) + implicit, fn)


def pool_ref_indexes(rule: Rule, m: PoolRef) -> list[IndexSpec]:
    return [_pool_ref_index(rule.dependent, m)]


def leaves_pool_ref(rule: Rule, m: PoolRef, provider: Provider, view: ClusterView) -> list[Leaf]:
    return [(_pool_ref_index(rule.dependent, m), _pool_keys(provider))]


def _caps_pool_index(kind: str, m: CapsPool) -> IndexSpec:
    caps_path = path(m.field)

    def fn(obj: RawObject) -> list[str]:
        ns = namespace(obj)
        caps = map_field(obj, *caps_path)
        pools = {p for cap in caps.values() if isinstance(cap, str) for p in _CAPS_POOL.findall(cap)}
        return [key for pool in sorted(pools) for key in pool_index_keys(ns, pool)]

    return IndexSpec(kind, f"kustodian.io/caps-pool:{m.field}", fn)


def caps_pool_indexes(rule: Rule, m: CapsPool) -> list[IndexSpec]:
    return [_caps_pool_index(rule.dependent, m)]


def leaves_caps_pool(rule: Rule, m: CapsPool, provider: Provider, view: ClusterView) -> list[Leaf]:
    return [(_caps_pool_index(rule.dependent, m), _pool_keys(provider))]


# --- csi-volume and storage-class-ref: a map naming a clusterID and a pool or a name -------


ALL = "all"


def _attribute_keys(
    values: Mapping[str, Any],
    scope_key: str,
    pool_keys: Iterable[str],
    name_keys: Iterable[str],
    match_all: bool = False,
) -> list[str]:
    scope = values.get(scope_key)
    if not isinstance(scope, str) or not scope:
        return []
    keys = [k for a in pool_keys for pool in strings(values.get(a)) for k in pool_index_keys(scope, pool)]
    keys += [f"{scope}/name:{v}" for a in name_keys for v in strings(values.get(a))]
    if match_all:
        keys.append(f"{scope}/{ALL}")
    # each key once: ceph-csi names a volume's pool as ``pool`` and again as ``journalPool``
    return list(dict.fromkeys(keys)) if len(keys) > 1 else keys


def _provider_attribute_keys(
    provider: Provider,
    view: ClusterView,
    pool_keys: Sequence[str],
    name_keys: Sequence[str],
    match_all: bool = False,
) -> list[str]:
    keys: list[str] = []
    for scope in provider_cluster_ids(provider, view):
        if pool_keys and provider.pools:
            keys += provider.pools.lookup_keys(scope)
        if name_keys:
            keys.append(f"{scope}/name:{provider.name}")
        if match_all:
            keys.append(f"{scope}/{ALL}")
    return keys


def _csi_volume_index(kind: str, m: CsiVolume) -> IndexSpec:
    def fn(obj: RawObject) -> list[str]:
        if not _driver_matches(str_field(obj, "spec", "csi", "driver"), m.driver_suffix):
            return []
        attributes = map_field(obj, "spec", "csi", "volumeAttributes")
        return _attribute_keys(
            attributes, m.cluster_id_attribute, m.pool_attributes, m.name_attributes, m.match_all
        )

    pools, names = ",".join(m.pool_attributes), ",".join(m.name_attributes)
    every = ";all" if m.match_all else ""
    return IndexSpec(
        kind, f"kustodian.io/csi-volume:{m.driver_suffix};{m.cluster_id_attribute};{pools};{names}{every}",
        spec_keyed(fn),
    )


def csi_volume_indexes(rule: Rule, m: CsiVolume) -> list[IndexSpec]:
    return [_csi_volume_index(rule.dependent, m), *cluster_id_indexes()]


def leaves_csi_volume(rule: Rule, m: CsiVolume, provider: Provider, view: ClusterView) -> list[Leaf]:
    keys = _provider_attribute_keys(provider, view, m.pool_attributes, m.name_attributes, m.match_all)
    return [(_csi_volume_index(rule.dependent, m), keys)]


def _storage_class_index(m: StorageClassRef) -> IndexSpec:
    def fn(obj: RawObject) -> list[str]:
        if not _driver_matches(str_field(obj, "provisioner"), m.provisioner_suffix):
            return []
        parameters = map_field(obj, "parameters")
        return _attribute_keys(parameters, m.namespace_parameter, m.pool_parameters, m.name_parameters)

    pools, names = ",".join(m.pool_parameters), ",".join(m.name_parameters)
    described = f"{m.provisioner_suffix};{m.namespace_parameter};{pools};{names}"
    return IndexSpec(STORAGE_CLASS, f"kustodian.io/storage-class:{described}", fn)


def _class_users_index(kind: str, m: StorageClassRef) -> IndexSpec:
    """Objects of ``kind`` by the class they name, leaving out those that say where they live
    themselves (``unlessSet``): filtered when filed, so a lookup never walks the class's users."""
    if not m.unless_set:
        return cluster_field_index(kind, m.field)
    value_path = path(m.field)
    placed = [path(f) for f in m.unless_set]

    def fn(obj: RawObject) -> list[str]:
        if any(field(obj, *p) for p in placed):
            return []
        return list(strings(field(obj, *value_path)))

    name_ = f"kustodian.io/field:{m.field}[unset:{','.join(m.unless_set)}]"
    return IndexSpec(kind, name_, spec_keyed(fn) if reads_spec_only([value_path, *placed]) else fn)


def storage_class_ref_indexes(rule: Rule, m: StorageClassRef) -> list[IndexSpec]:
    return [_storage_class_index(m), _class_users_index(rule.dependent, m), *cluster_id_indexes()]


def leaves_storage_class_ref(
    rule: Rule, m: StorageClassRef, provider: Provider, view: ClusterView
) -> list[Leaf]:
    """Two hops, both indexed: the StorageClasses pointing at the provider, then their users.

    Users that say where they live themselves (``unlessSet``) are left to the rules that read it.
    """
    if not view.has_kind(STORAGE_CLASS):
        return []
    keys = _provider_attribute_keys(provider, view, m.pool_parameters, m.name_parameters)
    classes = sorted({name(sc) for sc in _storage_class_index(m).lookup(view, keys)})
    return [(_class_users_index(rule.dependent, m), classes)]


# --- cosi-bucket ---------------------------------------------------------------------------


def cosi_store_keys(driver: str, parameters: Mapping[str, Any]) -> list[str]:
    """``<namespace>/<store>`` keys a COSI Bucket or BucketClass may belong to; ``*`` when unknown.

    Rook's COSI parameters name the store (``objectStoreName``) or, more often, only the
    user secret ``rook-ceph-object-user-<store>-<user>``; store names may contain dashes, so
    every split is a candidate.  A Ceph-driver bucket we cannot attribute blocks every store.
    """
    store = str_field(parameters, "objectStoreName")
    secret = str_field(parameters, "objectStoreUserSecretName")
    secret_ns = str_field(parameters, "objectStoreUserSecretNamespace") or "*"
    store_ns = str_field(parameters, "objectStoreNamespace") or secret_ns
    keys = [f"{store_ns}/{store}"] if store else []
    if secret.startswith(ROOK_USER_SECRET_PREFIX):
        rest = secret[len(ROOK_USER_SECRET_PREFIX) :]
        keys += [f"{secret_ns}/{rest[:i]}" for i, ch in enumerate(rest) if ch == "-" and i > 0]
    if not keys and (driver.endswith(CEPH_COSI_DRIVER_SUFFIX) or secret):
        keys.append(f"{secret_ns}/*")
    return keys


def _bucket_keys(obj: RawObject) -> list[str]:
    return cosi_store_keys(str_field(obj, "spec", "driverName"), map_field(obj, "spec", "parameters"))


def _bucket_class_keys(obj: RawObject) -> list[str]:
    return cosi_store_keys(str_field(obj, "driverName"), map_field(obj, "parameters"))


def cosi_bucket_indexes(rule: Rule, m: CosiBucket) -> list[IndexSpec]:
    return [
        IndexSpec(rule.dependent, COSI_INDEX, _bucket_keys),
        IndexSpec(BUCKET_CLASS, COSI_INDEX, _bucket_class_keys),
        cluster_field_index(rule.dependent, "spec.bucketClassName"),
    ]


def leaves_cosi_bucket(rule: Rule, m: CosiBucket, provider: Provider, view: ClusterView) -> list[Leaf]:
    """Buckets attributed to the store by their own parameters, or by their BucketClass's."""
    ns, store = provider.namespace, provider.name
    keys = [f"{ns}/{store}", f"*/{store}", f"{ns}/*", "*/*"]
    by_bucket, by_class_param, by_class = cosi_bucket_indexes(rule, m)
    leaves: list[Leaf] = [(by_bucket, keys)]
    if view.has_kind(BUCKET_CLASS):
        classes = sorted({name(c) for c in by_class_param.lookup(view, keys)})
        leaves.append((by_class, classes))
    return leaves


# --- multisite: is the store's zone the master, and who are its peers? ----------------------
#
# Rook asks radosgw-admin (CheckZoneIsMaster, "zonegroup get").  The Kubernetes objects say as
# much as this: Rook creates a zone with --master only when its zone group has no master yet
# (zone/controller.go), so in a realm *pulled* from another cluster (CephObjectRealm
# spec.pull.endpoint) every local zone is a peer, and in a realm created here the oldest zone of
# the zone group is the master.  Peers are the other zones of that zone group, in any namespace
# (a second Rook cluster in the same Kubernetes pulls the realm under the same names).  Anything
# missing along the way (zone, zone group, realm not found) is treated as a master: prefer blocking.

OBJECT_ZONE = "CephObjectZone.ceph.rook.io"
OBJECT_ZONE_GROUP = "CephObjectZoneGroup.ceph.rook.io"
OBJECT_REALM = "CephObjectRealm.ceph.rook.io"


def _by_name(kind: str) -> IndexSpec:
    return field_index(kind, FieldRef(type="field-ref", field="metadata.name"))


def _zones_by_group() -> IndexSpec:
    return cluster_field_index(OBJECT_ZONE, "spec.zoneGroup")


def multisite_indexes() -> list[IndexSpec]:
    return [_by_name(OBJECT_ZONE), _by_name(OBJECT_ZONE_GROUP), _by_name(OBJECT_REALM), _zones_by_group()]


def _one(view: ClusterView, kind: str, ns: str, obj_name: str) -> RawObject | None:
    if not obj_name or not view.has_kind(kind):
        return None
    found = _by_name(kind).lookup(view, [f"{ns}/{obj_name}"])
    return found[0] if found else None


def _age(obj: RawObject) -> tuple[str, str]:
    return (str_field(obj, "metadata", "creationTimestamp"), name(obj))


def _zone_role(provider: Provider, view: ClusterView) -> tuple[RawObject, bool] | None:
    """``(zone, is_master)`` for a multisite store, ``None`` for a plain one."""
    ns = provider.namespace
    zone = _one(view, OBJECT_ZONE, ns, str_field(provider.obj, "spec", "zone", "name"))
    if zone is None:
        return None
    group_name = str_field(zone, "spec", "zoneGroup")
    group = _one(view, OBJECT_ZONE_GROUP, ns, group_name)
    realm = _one(view, OBJECT_REALM, ns, str_field(group, "spec", "realm")) if group else None
    if realm is not None and str_field(realm, "spec", "pull", "endpoint"):
        return zone, False
    local = [z for z in _zones_by_group().lookup(view, [group_name]) if namespace(z) == ns]
    return zone, name(min(local, key=_age, default=zone)) == name(zone)


def serves_peer_zone(provider: Provider, view: ClusterView) -> bool:
    """True when ``provider`` (a CephObjectStore) serves a zone that is not its zone group's master."""
    role = _zone_role(provider, view)
    return role is not None and not role[1]


def multisite_peer_zones_indexes(rule: Rule, m: MultisitePeerZones) -> list[IndexSpec]:
    return multisite_indexes()


#: on a CephObjectZoneGroup: the admin's word that none of its zones is outside this Kubernetes
#: cluster (``radosgw-admin zonegroup get`` lists them all); exactly this value, nothing looser
ZONES_OUTSIDE_ANNOTATION = "kustodian.io/zones-outside-cluster"
ZONES_OUTSIDE_NONE = "none"


def find_multisite_peer_zones(
    rule: Rule, m: MultisitePeerZones, provider: Provider, view: ClusterView
) -> list[RawObject]:
    role = _zone_role(provider, view)
    if role is None or not role[1]:
        return []
    zone = role[0]
    if m.outside_cluster:
        # Rook asks radosgw-admin, which sees the zones of every cluster; Kubernetes shows only
        # ours, so a master zone's store waits for the admin's word that there are no others
        group_name = str_field(zone, "spec", "zoneGroup")
        zone_group = _one(view, OBJECT_ZONE_GROUP, namespace(zone), group_name)
        if zone_group is None:  # gone (or never here): nobody said anything, so it still blocks
            return [{"apiVersion": "ceph.rook.io/v1", "kind": "CephObjectZoneGroup",
                     "metadata": {"name": group_name or "<unnamed>", "namespace": namespace(zone)}}]
        said = map_field(zone_group, "metadata", "annotations").get(ZONES_OUTSIDE_ANNOTATION)
        return [] if said == ZONES_OUTSIDE_NONE else [zone_group]
    me = (namespace(zone), name(zone))
    group = str_field(zone, "spec", "zoneGroup")
    return [z for z in _zones_by_group().lookup(view, [group]) if (namespace(z), name(z)) != me]
