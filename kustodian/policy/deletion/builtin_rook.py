"""Rook-Ceph's resource-dependency rules, as data.

This is Rook's design ("Resource dependency relationships", v1.7) plus the
relationships Rook's operator code added since (bucket topics and notifications,
subvolume groups, RADOS namespaces), written in exactly the shape an admin
writes in Helm values and loaded through the same ``load_rules``: if the
built-ins need a matcher, admins have it too.

Where Rook's operator asks Ceph ("does the store still hold buckets?"), an
admission webhook cannot, so we look at the Kubernetes objects that stand for
that data instead (ObjectBuckets, ObjectBucketClaims, COSI Buckets, PVs) and,
when unsure, block.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from kustodian.policy.deletion.rules import RuleSet, load_rules

_ALLOW_UNINSTALL_WITH_VOLUMES = {
    "kind": "CephCluster.ceph.rook.io",
    "field": "spec.cleanupPolicy.allowUninstallWithVolumes",
    "equals": True,
}
_NFS_POOLS = {"type": "pool-ref", "fields": ["spec.rados.pool", "spec.pool"]}
_CLIENT_CAPS = {"type": "caps-pool", "field": "spec.caps"}
_RBD_VOLUME = {
    "type": "csi-volume",
    "driverSuffix": ".rbd.csi.ceph.com",
    "clusterIdAttribute": "clusterID",
    "poolAttributes": ["pool", "journalPool", "dataPool"],
}
_RBD_CLASS = {
    "type": "storage-class-ref",
    "field": "spec.storageClassName",
    "provisionerSuffix": ".rbd.csi.ceph.com",
    "namespaceParameter": "clusterID",
    "poolParameters": ["pool", "dataPool"],
}
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
}
_BUCKET_CLASS = {
    "type": "storage-class-ref",
    "field": "spec.storageClassName",
    "provisionerSuffix": ".ceph.rook.io/bucket",
    "namespaceParameter": "objectStoreNamespace",
    "nameParameters": ["objectStoreName"],
}
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
    # CephFilesystem: pool consumers, subvolume groups, CephFS volumes.
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
    # CephObjectStore: pool consumers, users, lib-bucket-provisioner and COSI buckets.
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
    },
    {
        "name": "rook/objectstore-class-objectbuckets",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "ObjectBucket.objectbucket.io",
        "match": _BUCKET_CLASS,
    },
    {
        "name": "rook/objectstore-class-objectbucketclaims",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "ObjectBucketClaim.objectbucket.io",
        "match": _BUCKET_CLASS,
    },
    {
        "name": "rook/objectstore-cosi-buckets",
        "provider": "CephObjectStore.ceph.rook.io",
        "dependent": "Bucket.objectstorage.k8s.io",
        "match": {"type": "cosi-bucket"},
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
    {
        "name": "rook/filesystemmirror-mirrored-filesystems",
        "provider": "CephFilesystemMirror.ceph.rook.io",
        "dependent": "CephFilesystem.ceph.rook.io",
        "match": _MIRRORED,
    },
]


@cache
def rook_rules() -> RuleSet:
    """The built-in Rook rules, validated once."""
    return load_rules(ROOK_RULES, source="builtin_rook.ROOK_RULES")
