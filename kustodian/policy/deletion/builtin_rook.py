"""Rook-Ceph's resource-dependency rules, as data.

This is Rook's design ("Resource dependency relationships", v1.7) plus the
relationships Rook's operator code added since (bucket topics and notifications,
subvolume groups, RADOS namespaces), written in exactly the shape an admin
writes in Helm values and loaded through the same ``load_rules``: if the
built-ins need a matcher, admins have it too.

Where Rook's operator asks Ceph ("does the store still hold buckets?", "is this
RADOS namespace empty?"), an admission webhook cannot, so we look at the
Kubernetes objects that stand for that data instead (ObjectBuckets,
ObjectBucketClaims, COSI Buckets, PVs as ceph-csi writes them) and, when unsure,
block.

Kinds Rook grew since the design, checked against its code (d0c3b9c):

* CephObjectStoreAccount (``spec.store``) owns RGW users and their buckets: it
  blocks its store, and users naming it in ``spec.accountRef.name`` block it, as do the
  ObjectBuckets those users own.
* CephNVMeOFGateway keeps its state in the ``.nvmeof`` pool (``nvmeofPoolName``,
  fixed in ``nvmeof/controller.go``): it blocks that CephBlockPool.
* CephBucketTopic (``spec.objectStoreName``/``objectStoreNamespace``) lives in its
  store; a CephBucketNotification names its topic in ``spec.topic``.
* CephCOSIDriver only runs the COSI driver Deployment and holds no data; COSI
  Buckets are guarded against their object store (``cosi-bucket``) instead.

Kustodian also blocks the CephCluster on accounts and NVMe-oF gateways, which
Rook's ``cephClusterDependentListKinds`` has not caught up with.

The ceph-csi-operator objects Rook's CSI drivers run under (ClientProfile, Driver,
CephConnection, ClientProfileMapping) are in ``builtin_ceph_csi`` and part of the same set.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from kustodian.policy.deletion.builtin_ceph_csi import CEPH_CSI_RULES
from kustodian.policy.deletion.rules import RuleSet, load_rules

_ALLOW_UNINSTALL_WITH_VOLUMES = {
    "kind": "CephCluster.ceph.rook.io",
    "field": "spec.cleanupPolicy.allowUninstallWithVolumes",
    "equals": True,
}
# Rook runs every CephNFS on the ".nfs" pool whatever spec.rados.pool says (nfs/controller.go
# overwrites it), so a pool consumer is both the field and the implicit pool.
_NFS_POOLS = {"type": "pool-ref", "fields": ["spec.rados.pool"], "implicit": [".nfs"]}
_NVMEOF_POOLS = {"type": "pool-ref", "implicit": [".nvmeof"]}
_SHARED_POOLS = {
    "type": "pool-ref",
    "fields": [
        "spec.sharedPools.metadataPoolName",
        "spec.sharedPools.dataPoolName",
        "spec.sharedPools.poolPlacements.*.metadataPoolName",
        "spec.sharedPools.poolPlacements.*.dataPoolName",
        "spec.sharedPools.poolPlacements.*.dataNonECPoolName",
        "spec.sharedPools.poolPlacements.*.storageClasses.*.dataPoolName",
    ],
    # a store on shared pools keeps its realm in ".rgw.root" (object-shared-pools.yaml's "rgw-root")
    "implicit": [".rgw.root"],
}
_CLIENT_CAPS = {"type": "caps-pool", "field": "spec.caps"}
_RBD_VOLUME = {
    "type": "csi-volume",
    "driverSuffix": ".rbd.csi.ceph.com",
    "clusterIdAttribute": "clusterID",
    "poolAttributes": ["pool", "journalPool", "dataPool"],
}
# A PV that carries its own CSI attributes is placed by them, not by its (maybe re-created) class.
_PV_PLACED = ["spec.csi.volumeAttributes.clusterID"]
_RBD_CLASS = {
    "type": "storage-class-ref",
    "field": "spec.storageClassName",
    "provisionerSuffix": ".rbd.csi.ceph.com",
    "namespaceParameter": "clusterID",
    "poolParameters": ["pool", "dataPool"],
    "unlessSet": _PV_PLACED,
}
_RBD_ALL = {"type": "csi-volume", "driverSuffix": ".rbd.csi.ceph.com", "matchAll": True}
_CEPHFS_VOLUME = {
    "type": "csi-volume",
    "driverSuffix": ".cephfs.csi.ceph.com",
    "clusterIdAttribute": "clusterID",
    "poolAttributes": ["pool", "journalPool", "dataPool"],
    "nameAttributes": ["fsName"],
}
_CEPHFS_CLASS = {
    "type": "storage-class-ref",
    "field": "spec.storageClassName",
    "provisionerSuffix": ".cephfs.csi.ceph.com",
    "namespaceParameter": "clusterID",
    "poolParameters": ["pool", "dataPool"],
    "nameParameters": ["fsName"],
    "unlessSet": _PV_PLACED,
}
_CEPHFS_ALL = {"type": "csi-volume", "driverSuffix": ".cephfs.csi.ceph.com", "matchAll": True}
# ceph-csi's NFS driver: a CephFS volume exported by a CephNFS (attributes clusterID, fsName,
# nfsCluster, server and, from the class, pool); see internal/nfs/controller.
_NFS_VOLUME = {
    "type": "csi-volume",
    "driverSuffix": ".nfs.csi.ceph.com",
    "poolAttributes": ["pool"],
    "nameAttributes": ["fsName"],
}
_NFS_EXPORT_VOLUME = {
    "type": "csi-volume",
    "driverSuffix": ".nfs.csi.ceph.com",
    "nameAttributes": ["nfsCluster"],
}
_NFS_ALL = {"type": "csi-volume", "driverSuffix": ".nfs.csi.ceph.com", "matchAll": True}
_NFS_EXPORT_CLASS = {
    "type": "storage-class-ref",
    "provisionerSuffix": ".nfs.csi.ceph.com",
    "namespaceParameter": "clusterID",
    "nameParameters": ["nfsCluster"],
    "unlessSet": _PV_PLACED,
}
_BUCKET_CLASS = {
    "type": "storage-class-ref",
    "field": "spec.storageClassName",
    "provisionerSuffix": ".ceph.rook.io/bucket",
    "namespaceParameter": "objectStoreNamespace",
    "nameParameters": ["objectStoreName"],
    # Rook's provisioner writes the store into the ObjectBucket (provisioner.go AdditionalState)
    "unlessSet": ["spec.additionalState.objectStoreName"],
}
_BOUND_CLAIM_CLASS = {**_BUCKET_CLASS, "unlessSet": ["spec.objectBucketName"]}
_SAME_NAMESPACE = {"type": "same-namespace"}
_MIRRORED = {"type": "same-namespace", "where": [{"field": "spec.mirroring.enabled", "equals": True}]}

ROOK_RULES: list[dict[str, Any]] = [
    # A CephCluster outlives every other Rook-Ceph CR in its namespace.
    {
        "name": "rook/cluster-blockpools",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephBlockPool.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-radosnamespaces",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephBlockPoolRadosNamespace.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-bucketnotifications",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephBucketNotification.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-buckettopics",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephBucketTopic.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-clients",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephClient.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-filesystems",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephFilesystem.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-filesystemmirrors",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephFilesystemMirror.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-subvolumegroups",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephFilesystemSubVolumeGroup.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-nfses",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephNFS.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-objectrealms",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephObjectRealm.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-objectstores",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephObjectStore.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-objectstoreusers",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephObjectStoreUser.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-objectzones",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephObjectZone.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-objectzonegroups",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephObjectZoneGroup.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-rbdmirrors",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephRBDMirror.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    # Not in Rook's cephClusterDependentListKinds (yet): kinds that hold data or state in the cluster.
    {
        "name": "rook/cluster-objectstoreaccounts",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephObjectStoreAccount.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    {
        "name": "rook/cluster-nvmeofgateways",
        "provider": "CephCluster.ceph.rook.io",
        "dependent": "CephNVMeOFGateway.ceph.rook.io",
        "match": _SAME_NAMESPACE,
    },
    # Rook's checkPVPresentInCluster: CSI volumes under the cluster's clusterID (here also the
    # hashed clusterIDs of its RADOS namespaces and subvolume groups, and NFS volumes).
    *[
        {
            "name": f"rook/cluster-{driver}-volumes",
            "provider": "CephCluster.ceph.rook.io",
            "dependent": "PersistentVolume",
            "match": match,
            "skipIf": _ALLOW_UNINSTALL_WITH_VOLUMES,
        }
        for driver, match in (("rbd", _RBD_ALL), ("cephfs", _CEPHFS_ALL), ("nfs", _NFS_ALL))
    ],
    # CephBlockPool: pool consumers, RADOS namespaces, RBD volumes.
    {
        "name": "rook/blockpool-nfses",
        "provider": "CephBlockPool.ceph.rook.io",
        "dependent": "CephNFS.ceph.rook.io",
        "match": _NFS_POOLS,
    },
    {
        "name": "rook/blockpool-clients",
        "provider": "CephBlockPool.ceph.rook.io",
        "dependent": "CephClient.ceph.rook.io",
        "match": _CLIENT_CAPS,
    },
    {
        "name": "rook/blockpool-objectstores",
        "provider": "CephBlockPool.ceph.rook.io",
        "dependent": "CephObjectStore.ceph.rook.io",
        "match": _SHARED_POOLS,
    },
    {
        "name": "rook/blockpool-objectzones",
        "provider": "CephBlockPool.ceph.rook.io",
        "dependent": "CephObjectZone.ceph.rook.io",
        "match": _SHARED_POOLS,
    },
    {
        "name": "rook/blockpool-nvmeofgateways",
        "provider": "CephBlockPool.ceph.rook.io",
        "dependent": "CephNVMeOFGateway.ceph.rook.io",
        "match": _NVMEOF_POOLS,
    },
    {
        "name": "rook/blockpool-radosnamespaces",
        "provider": "CephBlockPool.ceph.rook.io",
        "dependent": "CephBlockPoolRadosNamespace.ceph.rook.io",
        "match": {"type": "field-ref", "field": "spec.blockPoolName"},
    },
    {
        "name": "rook/blockpool-volumes",
        "provider": "CephBlockPool.ceph.rook.io",
        "dependent": "PersistentVolume",
        "match": _RBD_VOLUME,
        "skipIf": _ALLOW_UNINSTALL_WITH_VOLUMES,
    },
    {
        "name": "rook/blockpool-class-volumes",
        "provider": "CephBlockPool.ceph.rook.io",
        "dependent": "PersistentVolume",
        "match": _RBD_CLASS,
        "skipIf": _ALLOW_UNINSTALL_WITH_VOLUMES,
    },
    # CephBlockPoolRadosNamespace: RBD volumes under its (hashed) clusterID.
    {
        "name": "rook/radosnamespace-volumes",
        "provider": "CephBlockPoolRadosNamespace.ceph.rook.io",
        "dependent": "PersistentVolume",
        "match": _RBD_ALL,
    },
    # CephFilesystem: pool consumers, subvolume groups, CephFS and NFS volumes.
    {
        "name": "rook/filesystem-nfses",
        "provider": "CephFilesystem.ceph.rook.io",
        "dependent": "CephNFS.ceph.rook.io",
        "match": _NFS_POOLS,
    },
    {
        "name": "rook/filesystem-clients",
        "provider": "CephFilesystem.ceph.rook.io",
        "dependent": "CephClient.ceph.rook.io",
        "match": _CLIENT_CAPS,
    },
    {
        "name": "rook/filesystem-subvolumegroups",
        "provider": "CephFilesystem.ceph.rook.io",
        "dependent": "CephFilesystemSubVolumeGroup.ceph.rook.io",
        "match": {"type": "field-ref", "field": "spec.filesystemName"},
    },
    {
        "name": "rook/filesystem-volumes",
        "provider": "CephFilesystem.ceph.rook.io",
        "dependent": "PersistentVolume",
        "match": _CEPHFS_VOLUME,
        "skipIf": _ALLOW_UNINSTALL_WITH_VOLUMES,
    },
    {
        "name": "rook/filesystem-class-volumes",
        "provider": "CephFilesystem.ceph.rook.io",
        "dependent": "PersistentVolume",
        "match": _CEPHFS_CLASS,
        "skipIf": _ALLOW_UNINSTALL_WITH_VOLUMES,
    },
    {
        "name": "rook/filesystem-nfs-volumes",
        "provider": "CephFilesystem.ceph.rook.io",
        "dependent": "PersistentVolume",
        "match": _NFS_VOLUME,
        "skipIf": _ALLOW_UNINSTALL_WITH_VOLUMES,
    },
    # CephFilesystemSubVolumeGroup: CephFS (and NFS-exported CephFS) volumes under its clusterID.
    {
        "name": "rook/subvolumegroup-volumes",
        "provider": "CephFilesystemSubVolumeGroup.ceph.rook.io",
        "dependent": "PersistentVolume",
        "match": _CEPHFS_ALL,
    },
    {
        "name": "rook/subvolumegroup-nfs-volumes",
        "provider": "CephFilesystemSubVolumeGroup.ceph.rook.io",
        "dependent": "PersistentVolume",
        "match": _NFS_ALL,
    },
    # CephNFS: the volumes it exports.
    {
        "name": "rook/nfs-volumes",
        "provider": "CephNFS.ceph.rook.io",
        "dependent": "PersistentVolume",
        "match": _NFS_EXPORT_VOLUME,
        "skipIf": _ALLOW_UNINSTALL_WITH_VOLUMES,
    },
    {
        "name": "rook/nfs-class-volumes",
        "provider": "CephNFS.ceph.rook.io",
        "dependent": "PersistentVolume",
        "match": _NFS_EXPORT_CLASS,
        "skipIf": _ALLOW_UNINSTALL_WITH_VOLUMES,
    },
    # CephObjectStore: pool consumers, users, accounts, topics, lib-bucket-provisioner and COSI buckets.
    {
        "name": "rook/objectstore-nfses",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "CephNFS.ceph.rook.io",
        "match": _NFS_POOLS,
    },
    {
        "name": "rook/objectstore-clients",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "CephClient.ceph.rook.io",
        "match": _CLIENT_CAPS,
    },
    {
        "name": "rook/objectstore-users",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "CephObjectStoreUser.ceph.rook.io",
        "match": {"type": "field-ref", "field": "spec.store", "namespaceField": "spec.clusterNamespace"},
        "skipInPeerZone": True,
    },
    {
        "name": "rook/objectstore-accounts",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "CephObjectStoreAccount.ceph.rook.io",
        "match": {"type": "field-ref", "field": "spec.store"},
        "skipInPeerZone": True,
    },
    {
        "name": "rook/objectstore-buckettopics",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "CephBucketTopic.ceph.rook.io",
        "match": {
            "type": "field-ref",
            "field": "spec.objectStoreName",
            "namespaceField": "spec.objectStoreNamespace",
        },
        "skipInPeerZone": True,
    },
    {
        "name": "rook/objectstore-objectbuckets-by-state",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "ObjectBucket.objectbucket.io",
        "match": {
            "type": "field-ref",
            "field": "spec.additionalState.objectStoreName",
            "namespaceField": "spec.additionalState.objectStoreNamespace",
        },
        "skipInPeerZone": True,
    },
    {
        "name": "rook/objectstore-objectbuckets",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "ObjectBucket.objectbucket.io",
        "match": {
            "type": "field-ref",
            "field": "spec.endpoint.bucketHost",
            "scope": "cluster",
            "values": [
                "rook-ceph-rgw-{name}.{namespace}.svc",
                "rook-ceph-rgw-{name}.{namespace}.svc.cluster.local",
            ],
        },
        "skipInPeerZone": True,
    },
    {
        "name": "rook/objectstore-class-objectbuckets",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "ObjectBucket.objectbucket.io",
        "match": _BUCKET_CLASS,
        "skipInPeerZone": True,
    },
    {
        "name": "rook/objectstore-class-objectbucketclaims",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "ObjectBucketClaim.objectbucket.io",
        "match": _BOUND_CLAIM_CLASS,
        "skipInPeerZone": True,
    },
    {
        "name": "rook/objectstore-cosi-buckets",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "Bucket.objectstorage.k8s.io",
        "match": {"type": "cosi-bucket"},
        "skipInPeerZone": True,
    },
    # CephObjectStoreAccount: its users, and the buckets they own (Rook's provisioner writes the
    # owner in the ObjectBucket's spec.additionalState.cephUser, the user CR's name); Ceph refuses
    # to delete an account that still holds either (ceph-object-accounts.md), which would leave the
    # CR Terminating, and rook.io/force-deletion deletes them with it.
    {
        "name": "rook/objectstoreaccount-users",
        "provider": "CephObjectStoreAccount.ceph.rook.io",
        "dependent": "CephObjectStoreUser.ceph.rook.io",
        "match": {"type": "field-ref", "field": "spec.accountRef.name"},
    },
    {
        "name": "rook/objectstoreaccount-objectbuckets",
        "provider": "CephObjectStoreAccount.ceph.rook.io",
        "dependent": "ObjectBucket.objectbucket.io",
        "match": {
            "type": "via-ref",
            "via": {"kind": "CephObjectStoreUser.ceph.rook.io", "field": "spec.accountRef.name"},
            "field": "spec.additionalState.cephUser",
            "namespaceField": "spec.additionalState.objectStoreNamespace",
        },
    },
    # CephBucketTopic: the notifications that publish to it.
    {
        "name": "rook/buckettopic-notifications",
        "provider": "CephBucketTopic.ceph.rook.io",
        "dependent": "CephBucketNotification.ceph.rook.io",
        "match": {"type": "field-ref", "field": "spec.topic"},
    },
    # Multisite, as Rook's CephObjectStoreDependents: a master zone's store with peers is blocked.
    {
        "name": "rook/objectstore-multisite-peers",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "CephObjectZone.ceph.rook.io",
        "match": {"type": "multisite-peer-zones"},
        "note": "peers of its master zone: delete them, or make one of them the master once it is in sync",
    },
    # ... and peers in other Kubernetes clusters (the usual multisite layout), which only RGW sees.
    {
        "name": "rook/objectstore-multisite-zones-outside-cluster",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "CephObjectZoneGroup.ceph.rook.io",
        "match": {"type": "multisite-peer-zones", "outsideCluster": True},
        "note": (
            "zone group of its master zone, which may have zones in other clusters that Kubernetes "
            "cannot show: list them with `radosgw-admin zonegroup get --rgw-zonegroup=<name>`; if "
            "none is outside this cluster, annotate the zone group "
            'kustodian.io/zones-outside-cluster="none"; or override with '
            'kustodian.io/allow-delete-with-dependents="true" on the store'
        ),
    },
    # Multisite: realm -> zone group -> zone -> store; a zone's pools are consumed like a store's.
    {
        "name": "rook/objectzone-nfses",
        "provider": "CephObjectZone.ceph.rook.io",
        "dependent": "CephNFS.ceph.rook.io",
        "match": _NFS_POOLS,
    },
    {
        "name": "rook/objectzone-clients",
        "provider": "CephObjectZone.ceph.rook.io",
        "dependent": "CephClient.ceph.rook.io",
        "match": _CLIENT_CAPS,
    },
    {
        "name": "rook/objectzone-objectstores",
        "provider": "CephObjectZone.ceph.rook.io",
        "dependent": "CephObjectStore.ceph.rook.io",
        "match": {"type": "field-ref", "field": "spec.zone.name"},
    },
    {
        "name": "rook/objectzonegroup-objectzones",
        "provider": "CephObjectZoneGroup.ceph.rook.io",
        "dependent": "CephObjectZone.ceph.rook.io",
        "match": {"type": "field-ref", "field": "spec.zoneGroup"},
    },
    {
        "name": "rook/objectrealm-objectzonegroups",
        "provider": "CephObjectRealm.ceph.rook.io",
        "dependent": "CephObjectZoneGroup.ceph.rook.io",
        "match": {"type": "field-ref", "field": "spec.realm"},
    },
    # Mirroring daemons serve every mirrored pool / filesystem in their namespace.
    {
        "name": "rook/rbdmirror-mirrored-blockpools",
        "provider": "CephRBDMirror.ceph.rook.io",
        "dependent": "CephBlockPool.ceph.rook.io",
        "match": _MIRRORED,
    },
    *[
        {
            "name": f"rook/rbdmirror-{mode}-mirrored-radosnamespaces",
            "provider": "CephRBDMirror.ceph.rook.io",
            "dependent": "CephBlockPoolRadosNamespace.ceph.rook.io",
            "match": {"type": "same-namespace", "where": [{"field": "spec.mirroring.mode", "equals": mode}]},
        }
        for mode in ("image", "pool")  # radosnamespace-mirrored.yaml; "" is "not mirrored"
    ],
    {
        "name": "rook/filesystemmirror-mirrored-filesystems",
        "provider": "CephFilesystemMirror.ceph.rook.io",
        "dependent": "CephFilesystem.ceph.rook.io",
        "match": _MIRRORED,
    },
    # Rook's CSI objects since v1.18, the admin's since v1.20 (builtin_ceph_csi).
    *CEPH_CSI_RULES,
]


@cache
def rook_rules() -> RuleSet:
    """The built-in Rook rules, validated once."""
    return load_rules(ROOK_RULES, source="builtin_rook.ROOK_RULES")
