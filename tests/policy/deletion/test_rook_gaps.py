"""Issue 15's gaps, one row each: what the guard missed on Rook's and ceph-csi's real objects.

Objects are shaped like Rook's deploy/examples and PVs like ceph-csi writes them
(``tests/ceph_csi.py``).  The clusterID hashes below were computed with Rook's own
``k8sutil.Hash`` body in Go (sha256, first 16 bytes, hex), not with Kustodian's code.
"""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.policy.deletion import DeleteDecision, decide_delete, rook_rules
from tests.ceph_csi import CEPHFS_CLASS, NFS_CLASS, RBD_CLASS, cephfs_pv, nfs_pv, rbd_pv

from .builders import (
    NS,
    Obj,
    blockpool,
    ceph,
    cluster,
    filesystem,
    key_of,
    obj,
    object_store,
    storage_class,
    view,
)

RNS_A_ID = "80fc4f4bacc064be641633e6ed25ba7e"  # Hash("rook-ceph-replicapool-block-namespace-a")
SVG_A_ID = "4df0bb6e1b7ddc0c1ea080cbe043dd1a"  # Hash("rook-ceph-myfs-file-group-a")
SVG_CSI_ID = "e1026845ad66577abae1d16671b464c8"  # Hash("rook-ceph-myfs-file-csi")
OB_API = "objectbucket.io/v1alpha1"
BUCKET_PROVISIONER = "rook-ceph.ceph.rook.io/bucket"


def rns(
    cr: str = "namespace-a", pool: str = "replicapool", status_id: str | None = RNS_A_ID, **spec: Any
) -> Obj:
    o = ceph("CephBlockPoolRadosNamespace", cr, blockPoolName=pool, **spec)
    if status_id is not None:
        o["status"] = {"phase": "Ready", "info": {"clusterID": status_id}}
    return o


def svg(cr: str = "group-a", fs: str = "myfs", status_id: str | None = SVG_A_ID, **spec: Any) -> Obj:
    o = ceph("CephFilesystemSubVolumeGroup", cr, filesystemName=fs, **spec)
    if status_id is not None:
        o["status"] = {"phase": "Ready", "info": {"clusterID": status_id, "pinning": "distributed=1"}}
    return o


MYFS = filesystem("myfs", data_pools=("replicated",))  # filesystem.yaml: one data pool named "replicated"
RBD_PV = rbd_pv("pvc-rbd", RBD_CLASS)
RNS_PV = rbd_pv("pvc-rns", {**RBD_CLASS, "clusterID": RNS_A_ID}, rados_namespace="namespace-a")
CEPHFS_PV = cephfs_pv("pvc-fs", CEPHFS_CLASS)
SVG_PV = cephfs_pv("pvc-svg", {**CEPHFS_CLASS, "clusterID": SVG_A_ID}, subvolume_group="group-a")
NFS_PV = nfs_pv("pvc-nfs", NFS_CLASS)
NFS_SVG_PV = nfs_pv("pvc-nfs-svg", {**NFS_CLASS, "clusterID": SVG_CSI_ID})


def ob(name: str, store: str = "my-store", store_ns: str = NS, storage_class_name: str = "") -> Obj:
    """An ObjectBucket as Rook's provisioner writes it (provisioner.go: AdditionalState)."""
    spec: dict[str, Any] = {
        "endpoint": {"bucketHost": f"rook-ceph-rgw-{store}.{store_ns}.svc", "bucketName": f"{name}-x"},
        "additionalState": {
            "cephUser": f"obc-apps-{name}",
            "objectStoreName": store,
            "objectStoreNamespace": store_ns,
        },
    }
    if storage_class_name:
        spec["storageClassName"] = storage_class_name
    return obj(OB_API, "ObjectBucket", f"obc-apps-{name}", spec=spec)


def zone(
    name: str, group: str = "zonegroup-a", namespace: str = NS, created: str = "2026-01-01T00:00:00Z"
) -> Obj:
    o = ceph("CephObjectZone", name, namespace, zoneGroup=group)
    o["metadata"]["creationTimestamp"] = created
    return o


REALM = ceph("CephObjectRealm", "realm-a")
PULLED_REALM = ceph("CephObjectRealm", "realm-a", pull={"endpoint": "http://10.2.105.133:80"})
# the admin's word that every zone of the group is in this cluster (radosgw-admin zonegroup get)
ZONEGROUP = ceph("CephObjectZoneGroup", "zonegroup-a", realm="realm-a")
ZONEGROUP["metadata"]["annotations"] = {"kustodian.io/zones-outside-cluster": "none"}
UNSAID_ZONEGROUP = ceph("CephObjectZoneGroup", "zonegroup-a", realm="realm-a")
OUTSIDE_NOTE = (
    "zone group of its master zone, which may have zones in other clusters that Kubernetes cannot show: "
    "list them with `radosgw-admin zonegroup get --rgw-zonegroup=<name>`; if none is outside this cluster, "
    'annotate the zone group kustodian.io/zones-outside-cluster="none"; or override with '
    'kustodian.io/allow-delete-with-dependents="true" on the store'
)


def said(value: object) -> Obj:
    group = ceph("CephObjectZoneGroup", "zonegroup-a", realm="realm-a")
    group["metadata"]["annotations"] = {"kustodian.io/zones-outside-cluster": value}
    return group

MULTISITE_STORE = object_store("multisite-store", zone={"name": "zone-a"})
MASTER_NOTE = "peers of its master zone: delete them, or make one of them the master once it is in sync"

# (id, provider, other objects, expected dependents by group title)
CASES: list[tuple[str, Obj, list[Obj], dict[str, list[str]]]] = [
    # --- CephBlockPoolRadosNamespace is a provider; its PVs carry the hashed clusterID ---
    ("rns-holds-its-volumes", rns(), [RNS_PV, RBD_PV], {"PersistentVolumes": ["pvc-rns"]}),
    (
        "rns-status-not-written-yet-hash-computed",
        rns(status_id=None),
        [RNS_PV],
        {"PersistentVolumes": ["pvc-rns"]},
    ),
    (
        "rns-spec-cluster-id-override",
        rns(clusterID="my-id", status_id="my-id"),
        [rbd_pv("pvc-x", {**RBD_CLASS, "clusterID": "my-id"})],
        {"PersistentVolumes": ["pvc-x"]},
    ),
    ("rns-ignores-other-rns-volumes", rns("namespace-b", status_id="other-id"), [RNS_PV], {}),
    (
        "rns-ignores-cephfs-volume-same-id",
        rns(),
        [cephfs_pv("pvc-c", {**CEPHFS_CLASS, "clusterID": RNS_A_ID})],
        {},
    ),
    ("rns-empty", rns(), [RBD_PV], {}),
    (
        "blockpool-counts-rns-volumes",
        blockpool(),
        [rns(), RNS_PV, RBD_PV],
        {"CephBlockPoolRadosNamespaces": ["namespace-a"], "PersistentVolumes": ["pvc-rbd", "pvc-rns"]},
    ),
    (
        "blockpool-ignores-rns-of-other-pool",
        blockpool("otherpool"),
        [rns(), RNS_PV],
        {},
    ),
    (
        "cluster-counts-rns-volumes",  # Kustodian goes further than Rook, which checks clusterID == namespace only
        cluster(),
        [rns(), RNS_PV],
        {"CephBlockPoolRadosNamespaces": ["namespace-a"], "PersistentVolumes": ["pvc-rns"]},
    ),
    # Once the RNS CR is gone (overridden) its volumes still name the pool and the RADOS namespace:
    # hashed again from the PV's own attributes, they still count for the cluster (issue 32).
    ("cluster-orphan-hashed-volume-attributed-by-its-attributes", cluster(), [RNS_PV],
     {"PersistentVolumes": ["pvc-rns"]}),
    # --- CephFilesystemSubVolumeGroup is a provider ---
    ("svg-holds-its-volumes", svg(), [SVG_PV, CEPHFS_PV], {"PersistentVolumes": ["pvc-svg"]}),
    (
        "svg-status-not-written-yet-hash-computed",
        svg(status_id=None),
        [SVG_PV],
        {"PersistentVolumes": ["pvc-svg"]},
    ),
    (
        "svg-spec-name-csi-holds-nfs-volumes",
        svg("myfs-csi", status_id=None, name="csi"),
        [NFS_SVG_PV],
        {"PersistentVolumes": ["pvc-nfs-svg"]},
    ),
    ("svg-ignores-rbd-volume-same-id", svg(), [rbd_pv("pvc-r", {**RBD_CLASS, "clusterID": SVG_A_ID})], {}),
    (
        "filesystem-counts-svg-volumes",
        MYFS,
        [svg(), SVG_PV, CEPHFS_PV],
        {"CephFilesystemSubVolumeGroups": ["group-a"], "PersistentVolumes": ["pvc-fs", "pvc-svg"]},
    ),
    ("filesystem-ignores-svg-of-other-fs", filesystem("otherfs"), [svg(), SVG_PV], {}),
    # --- NFS-CSI volumes ---
    ("nfs-holds-its-exports", ceph("CephNFS", "my-nfs"), [NFS_PV], {"PersistentVolumes": ["pvc-nfs"]}),
    ("nfs-ignores-other-nfs-exports", ceph("CephNFS", "other-nfs"), [NFS_PV], {}),
    (
        "nfs-exports-in-svg-count-for-the-nfs",
        ceph("CephNFS", "my-nfs"),
        [svg("myfs-csi", status_id=SVG_CSI_ID, name="csi"), NFS_SVG_PV],
        {"PersistentVolumes": ["pvc-nfs-svg"]},
    ),
    ("filesystem-holds-nfs-exports", MYFS, [NFS_PV], {"PersistentVolumes": ["pvc-nfs"]}),
    ("filesystem-ignores-nfs-exports-of-other-fs", filesystem("otherfs"), [NFS_PV], {}),
    # --- CephCluster: Rook's checkPVPresentInCluster, unless allowUninstallWithVolumes ---
    (
        "cluster-blocked-by-rbd-cephfs-nfs-volumes",
        cluster(),
        [RBD_PV, CEPHFS_PV, NFS_PV, SVG_PV, svg()],
        {
            "CephFilesystemSubVolumeGroups": ["group-a"],
            "PersistentVolumes": ["pvc-fs", "pvc-nfs", "pvc-rbd", "pvc-svg"],
        },
    ),
    (
        "cluster-allow-uninstall-with-volumes",
        cluster(allow_uninstall_with_volumes=True),
        [RBD_PV, CEPHFS_PV, NFS_PV],
        {},
    ),
    ("cluster-ignores-volumes-of-other-cluster", cluster("other"), [RBD_PV, CEPHFS_PV, NFS_PV], {}),
    # --- pool names as Rook derives them ---
    (
        "nfs-pool-blocks-builtin-nfs-pool",  # pool-builtin-mgr.yaml style: CephBlockPool named ".nfs"
        blockpool("builtin-nfs", pool_name=".nfs"),
        [ceph("CephNFS", "my-nfs", server={"active": 1})],
        {"CephNFSes": ["my-nfs"]},
    ),
    (
        "filesystem-metadata-pool-name",
        filesystem("myfs", metadataPool={"name": "meta"}),
        [ceph("CephClient", "c", caps={"osd": "allow rw pool=myfs-meta"})],
        {"CephClients": ["c"]},
    ),
    (
        "filesystem-metadata-default-name-not-used-when-named",
        filesystem("myfs", metadataPool={"name": "meta"}),
        [ceph("CephClient", "c", caps={"osd": "allow rw pool=myfs-metadata"})],
        {},
    ),
    (
        "filesystem-preserve-pool-names",
        filesystem("myfs", data_pools=("fast",), preservePoolNames=True, metadataPool={"name": "fs-meta"}),
        [
            ceph("CephClient", "c1", caps={"osd": "allow rw pool=fast"}),
            ceph("CephClient", "c2", caps={"osd": "allow rw pool=fs-meta"}),
            ceph("CephClient", "c3", caps={"osd": "allow rw pool=myfs-fast"}),
        ],
        {"CephClients": ["c1", "c2"]},
    ),
    (
        "filesystem-named-data-pool-pvs",
        MYFS,
        [cephfs_pv("pvc-p", {"clusterID": NS, "fsName": "otherfs", "pool": "myfs-replicated"})],
        {"PersistentVolumes": ["pvc-p"]},
    ),
    (
        "blockpool-shared-by-object-store",  # object-shared-pools.yaml + object-shared-pools-test.yaml
        blockpool("rgw-data-pool"),
        [
            object_store(
                "store-a", sharedPools={"metadataPoolName": "rgw-meta-pool", "dataPoolName": "rgw-data-pool"}
            ),
            object_store(
                "store-b", sharedPools={"metadataPoolName": "rgw-meta-pool", "dataPoolName": "other"}
            ),
        ],
        {"CephObjectStores": ["store-a"]},
    ),
    (
        "blockpool-shared-by-pool-placement",
        blockpool("ec-pool"),
        [
            object_store(
                "store-a",
                sharedPools={
                    "poolPlacements": [
                        {
                            "name": "default",
                            "default": True,
                            "metadataPoolName": "meta",
                            "dataPoolName": "data",
                            "storageClasses": [{"name": "REDUCED_REDUNDANCY", "dataPoolName": "ec-pool"}],
                        }
                    ]
                },
            )
        ],
        {"CephObjectStores": ["store-a"]},
    ),
    (
        "rgw-root-pool-used-by-every-store",
        blockpool("rgw-root", pool_name=".rgw.root"),
        [
            object_store("store-a", sharedPools={"metadataPoolName": "m", "dataPoolName": "d"}),
            ceph(
                "CephObjectZone",
                "zone-a",
                zoneGroup="zg",
                sharedPools={"metadataPoolName": "m", "dataPoolName": "d"},
            ),
        ],
        {"CephObjectStores": ["store-a"], "CephObjectZones": ["zone-a"]},
    ),
    # --- ObjectBuckets by spec.additionalState; re-pointed StorageClasses ---
    (
        "objectstore-ob-by-additional-state",
        object_store(),
        [ob("b1"), ob("b2", store="other")],
        {"ObjectBuckets": ["obc-apps-b1"]},
    ),
    ("objectstore-ob-other-namespace-state", object_store(), [ob("b1", store_ns="other")], {}),
    (
        "objectstore-ob-class-re-pointed-no-false-block",
        object_store(),
        [
            storage_class(
                "rook-ceph-bucket", BUCKET_PROVISIONER, objectStoreName="my-store", objectStoreNamespace=NS
            ),
            ob("b1", store="old-store", storage_class_name="rook-ceph-bucket"),
        ],
        {},
    ),
    (
        "blockpool-class-re-pointed-no-false-block",
        blockpool(),
        [
            storage_class("rook-ceph-block", "rook-ceph.rbd.csi.ceph.com", clusterID=NS, pool="replicapool"),
            rbd_pv("pvc-old", {**RBD_CLASS, "pool": "oldpool"}),
        ],
        {},
    ),
    (
        "blockpool-class-re-pointed-away-still-blocks-by-attributes",
        blockpool(),
        [
            storage_class("rook-ceph-block", "rook-ceph.rbd.csi.ceph.com", clusterID=NS, pool="newpool"),
            RBD_PV,
        ],
        {"PersistentVolumes": ["pvc-rbd"]},
    ),
    (
        "objectstore-unbound-claim-by-class",
        object_store(),
        [
            storage_class(
                "rook-ceph-bucket", BUCKET_PROVISIONER, objectStoreName="my-store", objectStoreNamespace=NS
            ),
            obj(OB_API, "ObjectBucketClaim", "c1", "apps", {"storageClassName": "rook-ceph-bucket"}),
            obj(
                OB_API,
                "ObjectBucketClaim",
                "c2",
                "apps",
                {"storageClassName": "rook-ceph-bucket", "objectBucketName": "obc-apps-c2"},
            ),
        ],
        {"ObjectBucketClaims": ["apps/c1"]},
    ),
    # --- newer kinds ---
    (
        "objectstore-account",
        object_store(),
        [ceph("CephObjectStoreAccount", "acc", store="my-store")],
        {"CephObjectStoreAccounts": ["acc"]},
    ),
    (
        "account-users",
        ceph("CephObjectStoreAccount", "acc", store="my-store"),
        [
            ceph("CephObjectStoreUser", "u1", store="my-store", accountRef={"name": "acc"}),
            ceph("CephObjectStoreUser", "u2", store="my-store"),
        ],
        {"CephObjectStoreUsers": ["u1"]},
    ),
    (
        "objectstore-bucket-topic",
        object_store(),
        [
            ceph(
                "CephBucketTopic",
                "t1",
                "apps",
                objectStoreName="my-store",
                objectStoreNamespace=NS,
                endpoint={"http": {"uri": "http://x"}},
            )
        ],
        {"CephBucketTopics": ["apps/t1"]},
    ),
    (
        "topic-notifications",
        ceph("CephBucketTopic", "t1", objectStoreName="my-store", objectStoreNamespace=NS),
        [ceph("CephBucketNotification", "n1", topic="t1"), ceph("CephBucketNotification", "n2", topic="t2")],
        {"CephBucketNotifications": ["n1"]},
    ),
    (
        "nvmeof-state-pool",
        blockpool("builtin-nvmeof", pool_name=".nvmeof"),
        [ceph("CephNVMeOFGateway", "nvmeof", group="group-a", instances=1)],
        {"CephNVMeOFGateways": ["nvmeof"]},
    ),
    ("nvmeof-other-pool", blockpool(), [ceph("CephNVMeOFGateway", "nvmeof", group="group-a")], {}),
    (
        "cluster-nvmeof-and-account",
        cluster(),
        [ceph("CephNVMeOFGateway", "nvmeof"), ceph("CephObjectStoreAccount", "acc", store="s")],
        {"CephNVMeOFGateways": ["nvmeof"], "CephObjectStoreAccounts": ["acc"]},
    ),
    ("cluster-cosi-driver-holds-no-data", cluster(), [ceph("CephCOSIDriver", "ceph-cosi-driver")], {}),
    # --- mirrored RADOS namespaces (radosnamespace-mirrored.yaml) need the rbd-mirror daemon ---
    (
        "rbdmirror-mirrored-radosnamespace",
        ceph("CephRBDMirror", "my-rbd-mirror"),
        [
            rns("namespace-a", mirroring={"mode": "image", "remoteNamespace": "namespace-a"}),
            rns("namespace-b", status_id=None, mirroring={"mode": "pool"}),
            rns("namespace-c", status_id=None, mirroring={"mode": ""}),
            rns("namespace-d", status_id=None),
        ],
        {"CephBlockPoolRadosNamespaces": ["namespace-a", "namespace-b"]},
    ),
    # --- object multisite (Rook's CephObjectStoreDependents) ---
    (
        "multisite-master-with-peer-blocked",
        MULTISITE_STORE,
        [
            REALM,
            ZONEGROUP,
            zone("zone-a"),
            zone("zone-b", created="2026-02-01T00:00:00Z"),
            ob("b1", "multisite-store"),
        ],
        {f"CephObjectZones ({MASTER_NOTE})": ["zone-b"], "ObjectBuckets": ["obc-apps-b1"]},
    ),
    (
        "multisite-master-peer-in-second-cluster",  # object-multisite-pull-realm.yaml in rook-ceph-secondary
        MULTISITE_STORE,
        [REALM, ZONEGROUP, zone("zone-a"), zone("zone-b", namespace="rook-ceph-secondary")],
        {f"CephObjectZones ({MASTER_NOTE})": ["rook-ceph-secondary/zone-b"]},
    ),
    ("multisite-master-no-peers-no-buckets", MULTISITE_STORE, [REALM, ZONEGROUP, zone("zone-a")], {}),
    (
        "multisite-master-no-peers-buckets-block",
        MULTISITE_STORE,
        [REALM, ZONEGROUP, zone("zone-a"), ob("b1", "multisite-store")],
        {"ObjectBuckets": ["obc-apps-b1"]},
    ),
    (
        "multisite-peer-in-pulled-realm-may-go",
        MULTISITE_STORE,
        [
            PULLED_REALM,
            ZONEGROUP,
            zone("zone-a"),
            ob("b1", "multisite-store"),
            ceph("CephObjectStoreUser", "u1", store="multisite-store"),
        ],
        {},
    ),
    (
        "multisite-younger-local-zone-is-peer",
        object_store("store-b", zone={"name": "zone-b"}),
        [
            REALM,
            ZONEGROUP,
            zone("zone-a"),
            zone("zone-b", created="2026-02-01T00:00:00Z"),
            ob("b1", "store-b"),
        ],
        {},
    ),
    (
        "multisite-zone-seen-twice-is-not-its-own-peer",  # explain-delete --from a directory of examples
        MULTISITE_STORE,
        [REALM, ZONEGROUP, zone("zone-a"), zone("zone-a")],
        {},
    ),
    # --- zones in other Kubernetes clusters: only radosgw-admin sees them (issue 32) ---
    (
        "multisite-master-zone-group-unsaid-refused",
        MULTISITE_STORE,
        [REALM, UNSAID_ZONEGROUP, zone("zone-a")],
        {f"CephObjectZoneGroups ({OUTSIDE_NOTE})": ["zonegroup-a"]},
    ),
    *[
        (f"multisite-master-zone-group-says-{value!r}-refused", MULTISITE_STORE, [REALM, said(value), zone("zone-a")],
         {f"CephObjectZoneGroups ({OUTSIDE_NOTE})": ["zonegroup-a"]})
        for value in ("None", " none", "", "false", "0", None, False)
    ],
    (
        "multisite-master-zone-group-unsaid-with-peer-names-both",
        MULTISITE_STORE,
        [REALM, UNSAID_ZONEGROUP, zone("zone-a"), zone("zone-b", created="2026-02-01T00:00:00Z")],
        {f"CephObjectZoneGroups ({OUTSIDE_NOTE})": ["zonegroup-a"], f"CephObjectZones ({MASTER_NOTE})": ["zone-b"]},
    ),
    (
        "multisite-master-zone-group-gone-still-refused",
        MULTISITE_STORE,
        [REALM, zone("zone-a")],
        {f"CephObjectZoneGroups ({OUTSIDE_NOTE})": ["zonegroup-a"]},
    ),
    (
        "multisite-peer-zone-store-needs-no-word",
        object_store("store-b", zone={"name": "zone-b"}),
        [REALM, UNSAID_ZONEGROUP, zone("zone-a"), zone("zone-b", created="2026-02-01T00:00:00Z")],
        {},
    ),
    (
        "multisite-zone-unknown-treated-as-master",
        MULTISITE_STORE,
        [ob("b1", "multisite-store")],
        {"ObjectBuckets": ["obc-apps-b1"]},
    ),
]


def decide(provider: Obj, *others: Obj) -> DeleteDecision:
    return decide_delete(key_of(provider), provider, view(provider, *others), rook_rules())


@pytest.mark.parametrize(
    ("provider", "others", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rook_gap(provider: Obj, others: list[Obj], expected: dict[str, list[str]]) -> None:
    decision = decide(provider, *others)
    got = {title: [r.label(NS) for r in refs] for title, refs in decision.dependents.items()}
    assert got == expected
    assert decision.allowed is not bool(expected)


def test_master_zone_message_says_why() -> None:
    decision = decide(
        MULTISITE_STORE, REALM, ZONEGROUP, zone("zone-a"), zone("zone-b", created="2026-02-01T00:00:00Z")
    )
    assert decision.message == (
        f'CephObjectStore "rook-ceph/multisite-store" cannot be deleted: it has dependents: '
        f"CephObjectZones ({MASTER_NOTE}): [zone-b]"
    )


def test_master_zone_of_an_unsaid_zone_group_message_says_how_to_check_and_override() -> None:
    decision = decide(MULTISITE_STORE, REALM, UNSAID_ZONEGROUP, zone("zone-a"))
    assert decision.message == (
        f'CephObjectStore "rook-ceph/multisite-store" cannot be deleted: it has dependents: '
        f"CephObjectZoneGroups ({OUTSIDE_NOTE}): [zonegroup-a]"
    )
    for needed in ("radosgw-admin zonegroup get", 'kustodian.io/zones-outside-cluster="none"',
                   'kustodian.io/allow-delete-with-dependents="true"'):
        assert needed in decision.message
