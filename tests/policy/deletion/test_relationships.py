"""Every built-in Rook relationship, blocked and not blocked: one row each."""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.policy.deletion import DeleteDecision, decide_delete, rook_rules

from .builders import (
    NS,
    Obj,
    blockpool,
    ceph,
    client,
    cluster,
    csi_pv,
    filesystem,
    key_of,
    nfs,
    obj,
    object_store,
    rbd_pv,
    storage_class,
    view,
)

RBD = "rook-ceph.rbd.csi.ceph.com"
CEPHFS = "rook-ceph.cephfs.csi.ceph.com"
BUCKET_PROVISIONER = "rook-ceph.ceph.rook.io/bucket"
OB_API = "objectbucket.io/v1alpha1"
COSI_API = "objectstorage.k8s.io/v1alpha1"

CLUSTER_DEPENDENT_KINDS = [
    "CephBlockPool",
    "CephBlockPoolRadosNamespace",
    "CephBucketNotification",
    "CephBucketTopic",
    "CephClient",
    "CephFilesystem",
    "CephFilesystemMirror",
    "CephFilesystemSubVolumeGroup",
    "CephNFS",
    "CephObjectRealm",
    "CephObjectStore",
    "CephObjectStoreUser",
    "CephObjectZone",
    "CephObjectZoneGroup",
    "CephRBDMirror",
]
PLURALS = {
    "CephBlockPool": "CephBlockPools",
    "CephBlockPoolRadosNamespace": "CephBlockPoolRadosNamespaces",
    "CephBucketNotification": "CephBucketNotifications",
    "CephBucketTopic": "CephBucketTopics",
    "CephClient": "CephClients",
    "CephFilesystem": "CephFilesystems",
    "CephFilesystemMirror": "CephFilesystemMirrors",
    "CephFilesystemSubVolumeGroup": "CephFilesystemSubVolumeGroups",
    "CephNFS": "CephNFSes",
    "CephObjectRealm": "CephObjectRealms",
    "CephObjectStore": "CephObjectStores",
    "CephObjectStoreUser": "CephObjectStoreUsers",
    "CephObjectZone": "CephObjectZones",
    "CephObjectZoneGroup": "CephObjectZoneGroups",
    "CephRBDMirror": "CephRBDMirrors",
}


def decide(provider: Obj, *others: Obj) -> DeleteDecision:
    return decide_delete(key_of(provider), provider, view(provider, *others), rook_rules())


def labels(decision: DeleteDecision, home: str = NS) -> dict[str, list[str]]:
    return {title: [r.label(home) for r in refs] for title, refs in decision.dependents.items()}


def ob(name: str, *, host: str = "", storage_class_name: str = "") -> Obj:
    spec: dict[str, Any] = {"endpoint": {"bucketHost": host, "bucketName": f"{name}-bucket"}} if host else {}
    if storage_class_name:
        spec["storageClassName"] = storage_class_name
    return obj(OB_API, "ObjectBucket", name, spec=spec)


def obc(name: str, namespace: str, storage_class_name: str) -> Obj:
    return obj(OB_API, "ObjectBucketClaim", name, namespace, {"storageClassName": storage_class_name})


def bucket(
    name: str, driver: str = "ceph.objectstorage.k8s.io", bucket_class: str = "", **params: str
) -> Obj:
    return obj(
        COSI_API,
        "Bucket",
        name,
        spec={"driverName": driver, "bucketClassName": bucket_class, "parameters": dict(params)},
    )


def bucket_class(name: str, driver: str = "ceph.objectstorage.k8s.io", **params: str) -> Obj:
    return obj(COSI_API, "BucketClass", name, driverName=driver, parameters=dict(params))


BUCKET_SC = storage_class(
    "rgw-bucket", BUCKET_PROVISIONER, objectStoreName="my-store", objectStoreNamespace=NS
)
RBD_SC = storage_class("rbd", RBD, clusterID=NS, pool="replicapool")
CEPHFS_SC = storage_class("cephfs", CEPHFS, clusterID=NS, fsName="myfs", pool="myfs-data0")

# (id, provider, other objects, expected dependents by plural)
CASES: list[tuple[str, Obj, list[Obj], dict[str, list[str]]]] = [
    # --- CephCluster: any other Rook-Ceph CR in its namespace ---
    *[
        (f"cluster-blocked-by-{kind}", cluster(), [ceph(kind, "dep")], {PLURALS[kind]: ["dep"]})
        for kind in CLUSTER_DEPENDENT_KINDS
    ],
    ("cluster-alone", cluster(), [], {}),
    ("cluster-ignores-other-namespace", cluster(), [blockpool(namespace="other")], {}),
    # Rook's checkPVPresentInCluster (cluster/controller.go): rbd/cephfs volumes under clusterID = namespace
    ("cluster-blocked-by-pvs", cluster(), [rbd_pv("pvc-1")], {"PersistentVolumes": ["pvc-1"]}),
    ("cluster-ignores-pvs-of-other-cluster", cluster(), [rbd_pv("pvc-1", cluster_id="other")], {}),
    # --- CephBlockPool ---
    ("blockpool-nfs-rados-pool", blockpool(), [nfs("nfs-a", "replicapool")], {"CephNFSes": ["nfs-a"]}),
    # The real CephNFS schema has no spec.pool (the API server prunes it): not a reference.
    ("blockpool-nfs-spec-pool-is-no-field", blockpool(), [nfs("nfs-a", "replicapool", rados=False)], {}),
    ("blockpool-nfs-other-pool", blockpool(), [nfs("nfs-a", "otherpool")], {}),
    ("blockpool-nfs-other-namespace", blockpool(), [nfs("nfs-a", "replicapool", "other")], {}),
    (
        "blockpool-client-caps",
        blockpool(),
        [client("c1", {"mon": "profile rbd", "osd": "profile rbd pool=replicapool"})],
        {"CephClients": ["c1"]},
    ),
    (
        "blockpool-client-caps-old-syntax",
        blockpool(),
        [client("c1", {"osd": "allow rwx pool replicapool"})],
        {"CephClients": ["c1"]},
    ),
    (
        "blockpool-client-caps-other-pool",
        blockpool(),
        [client("c1", {"osd": "profile rbd pool=replicapool2"})],
        {},
    ),
    (
        "blockpool-client-other-namespace",
        blockpool(),
        [client("c1", {"osd": "profile rbd pool=replicapool"}, "other")],
        {},
    ),
    (
        "blockpool-spec-name-is-the-pool",
        blockpool(pool_name="rbd-data"),
        [nfs("uses-spec-name", "rbd-data"), nfs("uses-cr-name", "replicapool")],
        {"CephNFSes": ["uses-spec-name"]},
    ),
    (
        "blockpool-radosnamespace",
        blockpool(),
        [
            ceph("CephBlockPoolRadosNamespace", "ns-a", blockPoolName="replicapool"),
            ceph("CephBlockPoolRadosNamespace", "ns-b", blockPoolName="otherpool"),
        ],
        {"CephBlockPoolRadosNamespaces": ["ns-a"]},
    ),
    ("blockpool-pv-pool", blockpool(), [rbd_pv("pvc-1")], {"PersistentVolumes": ["pvc-1"]}),
    (
        "blockpool-pv-journal-pool",
        blockpool(),
        [rbd_pv("pvc-1", pool="ec", journalPool="replicapool")],
        {"PersistentVolumes": ["pvc-1"]},
    ),
    (
        "blockpool-pv-data-pool",
        blockpool(),
        [rbd_pv("pvc-1", pool="meta", dataPool="replicapool")],
        {"PersistentVolumes": ["pvc-1"]},
    ),
    ("blockpool-pv-other-pool", blockpool(), [rbd_pv("pvc-1", pool="otherpool")], {}),
    ("blockpool-pv-other-cluster-id", blockpool(), [rbd_pv("pvc-1", cluster_id="other-cluster")], {}),
    (
        "blockpool-pv-cephfs-driver",
        blockpool(),
        [csi_pv("pvc-1", CEPHFS, clusterID=NS, pool="replicapool")],
        {},
    ),
    (
        "blockpool-pv-foreign-driver",
        blockpool(),
        [csi_pv("pvc-1", "ebs.csi.aws.com", clusterID=NS, pool="replicapool")],
        {},
    ),
    (
        "blockpool-pv-unprefixed-driver",
        blockpool(),
        [csi_pv("pvc-1", "rbd.csi.ceph.com", clusterID=NS, pool="replicapool")],
        {"PersistentVolumes": ["pvc-1"]},
    ),
    (
        "blockpool-pv-via-storageclass",
        blockpool(),
        [RBD_SC, csi_pv("pvc-1", RBD, storage_class="rbd"), csi_pv("pvc-2", RBD, storage_class="other")],
        {"PersistentVolumes": ["pvc-1"]},
    ),
    (
        "blockpool-pv-via-storageclass-data-pool",
        blockpool(),
        [
            storage_class("ec", RBD, clusterID=NS, pool="meta", dataPool="replicapool"),
            csi_pv("pvc-1", RBD, storage_class="ec"),
        ],
        {"PersistentVolumes": ["pvc-1"]},
    ),
    (
        "blockpool-pv-via-storageclass-other-cluster-id",
        blockpool(),
        [
            storage_class("rbd", RBD, clusterID="other", pool="replicapool"),
            csi_pv("pvc-1", RBD, storage_class="rbd"),
        ],
        {},
    ),
    (
        "blockpool-allow-uninstall-with-volumes",
        blockpool(),
        [
            cluster(allow_uninstall_with_volumes=True),
            rbd_pv("pvc-1"),
            RBD_SC,
            csi_pv("pvc-2", RBD, storage_class="rbd"),
            nfs("nfs-a", "replicapool"),
        ],
        {"CephNFSes": ["nfs-a"]},
    ),
    (
        "blockpool-allow-uninstall-false",
        blockpool(),
        [cluster(allow_uninstall_with_volumes=False), rbd_pv("pvc-1")],
        {"PersistentVolumes": ["pvc-1"]},
    ),
    (
        "blockpool-allow-uninstall-other-namespace",
        blockpool(),
        [cluster("other", allow_uninstall_with_volumes=True), rbd_pv("pvc-1")],
        {"PersistentVolumes": ["pvc-1"]},
    ),
    # --- CephFilesystem ---
    (
        "filesystem-nfs-unnamed-data-pool",
        filesystem(),
        [nfs("nfs-a", "myfs-data0")],
        {"CephNFSes": ["nfs-a"]},
    ),
    (
        "filesystem-nfs-second-unnamed-data-pool",
        filesystem(data_pools=("", "")),
        [nfs("nfs-a", "myfs-data1")],
        {"CephNFSes": ["nfs-a"]},
    ),
    (
        "filesystem-nfs-named-data-pool",
        filesystem(data_pools=("replicated",)),
        [nfs("named", "myfs-replicated"), nfs("index-name", "myfs-data0")],
        {"CephNFSes": ["named"]},
    ),
    ("filesystem-nfs-metadata-pool", filesystem(), [nfs("nfs-a", "myfs-metadata")], {"CephNFSes": ["nfs-a"]}),
    ("filesystem-nfs-other-fs", filesystem(), [nfs("nfs-a", "otherfs-data0")], {}),
    (
        "filesystem-client-caps",
        filesystem(),
        [client("c1", {"osd": "allow rw pool=myfs-data0"})],
        {"CephClients": ["c1"]},
    ),
    (
        "filesystem-subvolumegroup",
        filesystem(),
        [
            ceph("CephFilesystemSubVolumeGroup", "csi", filesystemName="myfs"),
            ceph("CephFilesystemSubVolumeGroup", "other", filesystemName="otherfs"),
        ],
        {"CephFilesystemSubVolumeGroups": ["csi"]},
    ),
    (
        "filesystem-pv-fs-name",
        filesystem(),
        [csi_pv("pvc-1", CEPHFS, clusterID=NS, fsName="myfs")],
        {"PersistentVolumes": ["pvc-1"]},
    ),
    (
        "filesystem-pv-pool",
        filesystem(),
        [csi_pv("pvc-1", CEPHFS, clusterID=NS, fsName="x", pool="myfs-data0")],
        {"PersistentVolumes": ["pvc-1"]},
    ),
    ("filesystem-pv-other-fs", filesystem(), [csi_pv("pvc-1", CEPHFS, clusterID=NS, fsName="otherfs")], {}),
    (
        "filesystem-pv-other-cluster-id",
        filesystem(),
        [csi_pv("pvc-1", CEPHFS, clusterID="other", fsName="myfs")],
        {},
    ),
    ("filesystem-pv-rbd-driver", filesystem(), [csi_pv("pvc-1", RBD, clusterID=NS, pool="myfs-data0")], {}),
    (
        "filesystem-pv-via-storageclass",
        filesystem(),
        [CEPHFS_SC, csi_pv("pvc-1", CEPHFS, storage_class="cephfs")],
        {"PersistentVolumes": ["pvc-1"]},
    ),
    (
        "filesystem-allow-uninstall-with-volumes",
        filesystem(),
        [cluster(allow_uninstall_with_volumes=True), csi_pv("pvc-1", CEPHFS, clusterID=NS, fsName="myfs")],
        {},
    ),
    # --- CephObjectStore ---
    (
        "objectstore-nfs-rgw-pool",
        object_store(),
        [nfs("nfs-a", "my-store.rgw.buckets.data")],
        {"CephNFSes": ["nfs-a"]},
    ),
    ("objectstore-nfs-rgw-root", object_store(), [nfs("nfs-a", ".rgw.root")], {"CephNFSes": ["nfs-a"]}),
    ("objectstore-nfs-other-store", object_store(), [nfs("nfs-a", "other-store.rgw.meta")], {}),
    (
        "objectstore-nfs-shared-pool",
        object_store(sharedPools={"metadataPoolName": "rgw-meta"}),
        [nfs("nfs-a", "rgw-meta")],
        {"CephNFSes": ["nfs-a"]},
    ),
    (
        "objectstore-client-caps",
        object_store(),
        [client("c1", {"osd": "allow rwx pool=my-store.rgw.log"})],
        {"CephClients": ["c1"]},
    ),
    (
        "objectstore-user",
        object_store(),
        [
            ceph("CephObjectStoreUser", "alice", store="my-store"),
            ceph("CephObjectStoreUser", "bob", store="other"),
        ],
        {"CephObjectStoreUsers": ["alice"]},
    ),
    (
        "objectstore-user-other-namespace",
        object_store(),
        [ceph("CephObjectStoreUser", "carol", "apps", store="my-store")],
        {},
    ),
    (
        "objectstore-user-other-namespace-cluster-namespace",
        object_store(),
        [ceph("CephObjectStoreUser", "dave", "apps", store="my-store", clusterNamespace=NS)],
        {"CephObjectStoreUsers": ["apps/dave"]},
    ),
    (
        "objectstore-ob-bucket-host",
        object_store(),
        [
            ob("ob-1", host="rook-ceph-rgw-my-store.rook-ceph.svc"),
            ob("ob-2", host="rook-ceph-rgw-other.rook-ceph.svc"),
        ],
        {"ObjectBuckets": ["ob-1"]},
    ),
    (
        "objectstore-ob-via-storageclass",
        object_store(),
        [BUCKET_SC, ob("ob-1", storage_class_name="rgw-bucket")],
        {"ObjectBuckets": ["ob-1"]},
    ),
    (
        "objectstore-obc-via-storageclass",
        object_store(),
        [BUCKET_SC, obc("claim", "apps", "rgw-bucket")],
        {"ObjectBucketClaims": ["apps/claim"]},
    ),
    (
        "objectstore-obc-storageclass-other-namespace",
        object_store(),
        [
            storage_class(
                "rgw-bucket", BUCKET_PROVISIONER, objectStoreName="my-store", objectStoreNamespace="other"
            ),
            obc("claim", "apps", "rgw-bucket"),
        ],
        {},
    ),
    (
        "objectstore-obc-storageclass-other-store",
        object_store(),
        [
            storage_class("rgw-bucket", BUCKET_PROVISIONER, objectStoreName="other", objectStoreNamespace=NS),
            obc("claim", "apps", "rgw-bucket"),
        ],
        {},
    ),
    (
        "objectstore-cosi-bucket-store-name",
        object_store(),
        [bucket("b1", objectStoreName="my-store", objectStoreNamespace=NS)],
        {"Buckets": ["b1"]},
    ),
    (
        "objectstore-cosi-bucket-user-secret",
        object_store(),
        [
            bucket(
                "b1",
                objectStoreUserSecretName="rook-ceph-object-user-my-store-cosi",
                objectStoreUserSecretNamespace=NS,
            )
        ],
        {"Buckets": ["b1"]},
    ),
    (
        "objectstore-cosi-bucket-other-store-secret",
        object_store(),
        [
            bucket(
                "b1",
                objectStoreUserSecretName="rook-ceph-object-user-other-cosi",
                objectStoreUserSecretNamespace=NS,
            )
        ],
        {},
    ),
    (
        "objectstore-cosi-bucket-via-bucketclass",
        object_store(),
        [
            bucket_class(
                "rook",
                objectStoreUserSecretName="rook-ceph-object-user-my-store-cosi",
                objectStoreUserSecretNamespace=NS,
            ),
            bucket("b1", driver="example.com", bucket_class="rook"),
        ],
        {"Buckets": ["b1"]},
    ),
    (
        "objectstore-cosi-ceph-bucket-unattributable-blocks",
        object_store(),
        [bucket("b1")],
        {"Buckets": ["b1"]},
    ),
    ("objectstore-cosi-foreign-bucket", object_store(), [bucket("b1", driver="s3.example.com")], {}),
    # --- multisite: realm -> zone group -> zone -> store ---
    (
        "zone-objectstore",
        ceph("CephObjectZone", "zone-a"),
        [object_store("s1", zone={"name": "zone-a"}), object_store("s2", zone={"name": "zone-b"})],
        {"CephObjectStores": ["s1"]},
    ),
    (
        "zone-nfs-pool",
        ceph("CephObjectZone", "zone-a"),
        [nfs("nfs-a", "zone-a.rgw.meta")],
        {"CephNFSes": ["nfs-a"]},
    ),
    (
        "zone-client-caps",
        ceph("CephObjectZone", "zone-a"),
        [client("c1", {"osd": "allow rw pool=zone-a.rgw.log"})],
        {"CephClients": ["c1"]},
    ),
    ("zone-nfs-other-zone", ceph("CephObjectZone", "zone-a"), [nfs("nfs-a", "zone-b.rgw.meta")], {}),
    (
        "zonegroup-zone",
        ceph("CephObjectZoneGroup", "zg"),
        [ceph("CephObjectZone", "z1", zoneGroup="zg"), ceph("CephObjectZone", "z2", zoneGroup="other")],
        {"CephObjectZones": ["z1"]},
    ),
    (
        "zonegroup-zone-other-namespace",
        ceph("CephObjectZoneGroup", "zg"),
        [ceph("CephObjectZone", "z1", "other", zoneGroup="zg")],
        {},
    ),
    (
        "realm-zonegroup",
        ceph("CephObjectRealm", "realm"),
        [
            ceph("CephObjectZoneGroup", "zg1", realm="realm"),
            ceph("CephObjectZoneGroup", "zg2", realm="other"),
        ],
        {"CephObjectZoneGroups": ["zg1"]},
    ),
    # --- mirroring daemons ---
    (
        "rbdmirror-mirrored-pool",
        ceph("CephRBDMirror", "mirror"),
        [
            blockpool("p1", mirroring={"enabled": True}),
            blockpool("p2", mirroring={"enabled": False}),
            blockpool("p3"),
        ],
        {"CephBlockPools": ["p1"]},
    ),
    (
        "rbdmirror-mirroring-disabled",
        ceph("CephRBDMirror", "mirror"),
        [blockpool(mirroring={"enabled": False})],
        {},
    ),
    (
        "rbdmirror-other-namespace",
        ceph("CephRBDMirror", "mirror"),
        [blockpool(namespace="other", mirroring={"enabled": True})],
        {},
    ),
    (
        "fsmirror-mirrored-filesystem",
        ceph("CephFilesystemMirror", "mirror"),
        [filesystem("fs1", mirroring={"enabled": True}), filesystem("fs2")],
        {"CephFilesystems": ["fs1"]},
    ),
    (
        "fsmirror-mirroring-disabled",
        ceph("CephFilesystemMirror", "mirror"),
        [filesystem(mirroring={"enabled": False})],
        {},
    ),
]


@pytest.mark.parametrize(
    ("provider", "others", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_relationship(provider: Obj, others: list[Obj], expected: dict[str, list[str]]) -> None:
    decision = decide(provider, *others)
    assert labels(decision) == expected
    assert decision.allowed is not bool(expected)
    assert decision.overridden is False
    assert bool(decision.message) is bool(expected)
