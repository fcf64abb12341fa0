"""Rook's own dependents unit tests, replayed as table rows against Kustodian's rules.

Each row names the Rook test it comes from (rook/rook d0c3b9c, the commit of
../shared/upstream/rook): ``pkg/operator/ceph/cluster/dependents_test.go``
(TestCephClusterDependents), ``pool/dependents_test.go`` (Test_cephBlockPoolDependents),
``object/dependents_test.go`` (TestCephObjectStoreDependents),
``object/zone/dependents_test.go`` (TestCephObjectZoneDependentStores),
``file/dependent_test.go`` (TestCephFilesystemDependents): Rook's 48 dependents cases; and
``pkg/util/dependents/dependents_test.go`` (TestDependentList, 4 more, on the message).

How Rook's inputs become Kubernetes objects here:

* Rook lists RGW buckets through the admin ops API; Kustodian cannot ask RGW and sees a
  bucket through the ObjectBucket Rook's provisioner writes for it.  "one bucket" rows
  therefore carry that ObjectBucket.  (DIFFERS: a bucket made outside OBC/COSI is invisible.)
* Rook asks ``radosgw-admin`` whether the store's zone is the master and which zones the
  zone group has.  Here the same topology is the CRs: realm-a (created here, not pulled),
  zonegroup-a, zone-a created first (the master Rook's mocks report) and, for "one peer",
  zone-b created after it.  Rook's "secondary zone" store is ``zone-b-store`` on zone-b.
  radosgw-admin sees every zone of every cluster, and Rook's mocks report none elsewhere: the
  zone group says so (``kustodian.io/zones-outside-cluster: "none"``), as an admin would.
* Rook lists CephFS subvolumes per subvolume group; Kustodian sees a subvolume through the PV
  ceph-csi made for it (``subvolumeName``), cephfs or NFS.  (DIFFERS: it names the PVs, not the
  group, and a subvolume made by hand, with no PV, is invisible.)
* Kinds are reported in the plural (``CephBlockPools``); Rook's cluster test uses singular keys.
"""

from __future__ import annotations

import pytest

from kustodian.policy.deletion import DeleteDecision, decide_delete, rook_rules

from .builders import Obj, ceph, key_of, obj, view

NS = "test-ceph-cluster-dependents"
OBJ_NS = "test-ceph-object-store-dependents"
OB_API = "objectbucket.io/v1alpha1"
PEERS = "CephObjectZones (peers of its master zone: delete them, or make one of them the master once it is in sync)"


def c(kind: str, name: str, ns: str = NS, /, **spec: object) -> Obj:
    return ceph(kind, name, ns, **spec)


def cluster_in(ns: str) -> Obj:
    return c("CephCluster", ns, ns)


# --- TestCephClusterDependents ----------------------------------------------------------------
ALL_KINDS = [
    c("CephBlockPool", "pool-1"),
    c("CephRBDMirror", "rbdmirror-1"),
    c("CephRBDMirror", "rbdmirror-2"),
    c("CephFilesystem", "filesystem-1"),
    c("CephFilesystemMirror", "fsmirror-1"),
    c("CephFilesystemMirror", "fsmirror-2"),
    c("CephObjectStore", "objectstore-1"),
    c("CephObjectStoreUser", "u1"),
    c("CephObjectZone", "zone-1"),
    c("CephObjectZoneGroup", "group-1"),
    c("CephObjectRealm", "realm-1"),
    c("CephNFS", "nfs-1"),
    c("CephClient", "client-1"),
    c("CephBucketTopic", "topic-1"),
    c("CephBucketNotification", "notif-1"),
]
ALL_EXPECTED = {
    "CephBlockPools": ["pool-1"],
    "CephRBDMirrors": ["rbdmirror-1", "rbdmirror-2"],
    "CephFilesystems": ["filesystem-1"],
    "CephFilesystemMirrors": ["fsmirror-1", "fsmirror-2"],
    "CephObjectStores": ["objectstore-1"],
    "CephObjectStoreUsers": ["u1"],
    "CephObjectZones": ["zone-1"],
    "CephObjectZoneGroups": ["group-1"],
    "CephObjectRealms": ["realm-1"],
    "CephNFSes": ["nfs-1"],
    "CephClients": ["client-1"],
    "CephBucketTopics": ["topic-1"],
    "CephBucketNotifications": ["notif-1"],
}


def _many(kind: str, *names: str) -> tuple[list[Obj], dict[str, list[str]]]:
    plural = {"CephNFS": "CephNFSes"}.get(kind, kind + "s")
    return [c(kind, n) for n in names], {plural: sorted(names)}


CLUSTER_SUBTESTS = {
    "CephBlockPools": _many("CephBlockPool", "block-pool-1", "block-pool-2"),
    "CephRBDMirrors": _many("CephRBDMirror", "rbdmirror"),
    "CephFilesystems": _many("CephFilesystem", "filesystem-1", "filesystem-2", "filesystem-3"),
    "CephFilesystemMirrors": _many("CephFilesystemMirror", "fsmirror"),
    "CephObjectStores": _many("CephObjectStore", "objectstore-1", "objectstore-2"),
    "CephObjectStoreUsers": _many("CephObjectStoreUser", "u1", "u2", "u3", "u4", "u5"),
    "CephObjectZones": _many("CephObjectZone", "zone-1", "zone-2"),
    "CephObjectZoneGroups": _many("CephObjectZoneGroup", "group-1", "group-2"),
    "CephObjectRealms": _many("CephObjectRealm", "realm-1", "realm-2"),
    "CephNFSes": _many("CephNFS", "nfs-1", "nfs-2"),
    "CephClients": _many("CephClient", "client-1", "client-2", "client-3"),
    "CephBucketTopics": _many("CephBucketTopic", "topic-1", "topic-2", "topic-3"),
    "CephBucketNotifications": _many("CephBucketNotification", "notif-1", "notif-2", "notif-3"),
}

# --- TestCephObjectStoreDependents ------------------------------------------------------------
STORE = c("CephObjectStore", "my-store", OBJ_NS, gateway={"port": 80})
STORE_ZONE_A = c("CephObjectStore", "zone-a-store", OBJ_NS, gateway={"port": 80}, zone={"name": "zone-a"})
STORE_ZONE_B = c("CephObjectStore", "zone-b-store", OBJ_NS, gateway={"port": 80}, zone={"name": "zone-b"})


def zone(name: str, created: str) -> Obj:
    o = c("CephObjectZone", name, OBJ_NS, zoneGroup="zonegroup-a")
    o["metadata"]["creationTimestamp"] = created
    return o


ZONEGROUP_A = c("CephObjectZoneGroup", "zonegroup-a", OBJ_NS, realm="realm-a")
ZONEGROUP_A["metadata"]["annotations"] = {"kustodian.io/zones-outside-cluster": "none"}
SINGLE_ZONE = [
    c("CephObjectRealm", "realm-a", OBJ_NS),
    ZONEGROUP_A,
    zone("zone-a", "2026-01-01T00:00:00Z"),
]
TWO_ZONES = [*SINGLE_ZONE, zone("zone-b", "2026-01-02T00:00:00Z")]
USER_NO_STORE = c("CephObjectStoreUser", "u1", OBJ_NS)


def user(store: str) -> Obj:
    return c("CephObjectStoreUser", "u1", OBJ_NS, store=store)


def bucket(store: str) -> Obj:
    """The ObjectBucket behind RGW bucket "my-bucket" (Rook's provisioner.go writes additionalState)."""
    return obj(
        OB_API,
        "ObjectBucket",
        "obc-default-my-bucket",
        spec={
            "endpoint": {"bucketHost": f"rook-ceph-rgw-{store}.{OBJ_NS}.svc", "bucketName": "my-bucket"},
            "additionalState": {
                "cephUser": "obc-default-my-bucket",
                "objectStoreName": store,
                "objectStoreNamespace": OBJ_NS,
            },
        },
    )


# --- TestCephObjectZoneDependentStores --------------------------------------------------------
ZONE_NS = "test-ceph-object-store-dependents"
ZONE_A = c("CephObjectZone", "zone-a", ZONE_NS, zoneGroup="zonegroup-a", metadataPool={}, dataPool={})


def store_on(name: str, zone_name: str) -> Obj:
    return c("CephObjectStore", name, ZONE_NS, gateway={"port": 80}, zone={"name": zone_name})


# --- TestCephFilesystemDependents -------------------------------------------------------------
FS_NS = "test-ceph-filesystem-dependents"
MYFS = c("CephFilesystem", "myfs", FS_NS)


def subvolume_pv(subvolume: str, driver: str = "rook-ceph.cephfs.csi.ceph.com") -> Obj:
    """The PV behind CephFS subvolume ``subvolume`` in the default "csi" group (clusterID = namespace)."""
    return obj(
        "v1",
        "PersistentVolume",
        f"pv-{subvolume}",
        spec={
            "csi": {
                "driver": driver,
                "volumeHandle": f"0001-{subvolume}",
                "volumeAttributes": {
                    "clusterID": FS_NS,
                    "fsName": "myfs",
                    "subvolumeName": subvolume,
                    "subvolumePath": f"/volumes/csi/{subvolume}/0c0c",
                },
            }
        },
    )


SVG1 = c("CephFilesystemSubVolumeGroup", "subvolgroup1", FS_NS, filesystemName="myfs")

# (id: "<Rook test> / <subtest>", provider, others, expected, note on a deliberate difference)
CASES: list[tuple[str, Obj, list[Obj], dict[str, list[str]], str]] = [
    *[
        (f"TestCephClusterDependents/{name}", cluster_in(NS), objs, expected, "")
        for name, (objs, expected) in CLUSTER_SUBTESTS.items()
    ],
    ("TestCephClusterDependents/All", cluster_in(NS), ALL_KINDS, ALL_EXPECTED, ""),
    (
        "TestCephClusterDependents/All/and no dependencies in another namespace",
        cluster_in("other-namespace"),
        ALL_KINDS,
        {},
        "",
    ),
    ("Test_cephBlockPoolDependents/no namespaces", c("CephBlockPool", "replicapool"), [], {}, ""),
    (
        "Test_cephBlockPoolDependents/one namespace but wrong pool",
        c("CephBlockPool", "otherns"),
        [c("CephBlockPoolRadosNamespace", "namespace1")],
        {},
        "",
    ),
    (
        "Test_cephBlockPoolDependents/one namespace",
        c("CephBlockPool", "replicapool"),
        [c("CephBlockPoolRadosNamespace", "namespace1", blockPoolName="replicapool")],
        {"CephBlockPoolRadosNamespaces": ["namespace1"]},
        "",
    ),
    (
        "TestCephObjectStoreDependents/missing pools so skipping",
        STORE,
        [],
        {},
        "Kustodian never skips for missing pools (it cannot see pools); same answer here",
    ),
    ("TestCephObjectStoreDependents/no objectstore users and no buckets", STORE, [], {}, ""),
    (
        "TestCephObjectStoreDependents/one objectstore users but wrong store and no buckets",
        STORE,
        [USER_NO_STORE],
        {},
        "",
    ),
    (
        "TestCephObjectStoreDependents/one objectstore users and no buckets",
        STORE,
        [user("my-store")],
        {"CephObjectStoreUsers": ["u1"]},
        "",
    ),
    (
        "TestCephObjectStoreDependents/store belong to secondary zone with no objectstore users and no buckets",
        STORE_ZONE_B,
        TWO_ZONES,
        {},
        "",
    ),
    (
        "TestCephObjectStoreDependents/store belong to secondary zone with one objectstore users but wrong store "
        "and no buckets",
        STORE_ZONE_B,
        [*TWO_ZONES, USER_NO_STORE],
        {},
        "",
    ),
    (
        "TestCephObjectStoreDependents/store belong to secondary zone with one objectstore users and no buckets",
        STORE_ZONE_B,
        [*TWO_ZONES, user("zone-b-store")],
        {},
        "",
    ),
    (
        "TestCephObjectStoreDependents/store belong to secondary zone with no objectstore users and one bucket",
        STORE_ZONE_B,
        [*TWO_ZONES, bucket("zone-b-store")],
        {},
        "",
    ),
    (
        "TestCephObjectStoreDependents/store belong to master zone with no objectstore users, no buckets and no "
        "peers",
        STORE_ZONE_A,
        SINGLE_ZONE,
        {},
        "",
    ),
    (
        "TestCephObjectStoreDependents/store belong to master zone with one objectstore users but wrong store and "
        "no buckets and no peers",
        STORE_ZONE_A,
        [*SINGLE_ZONE, USER_NO_STORE],
        {},
        "",
    ),
    (
        "TestCephObjectStoreDependents/store belong to master zone with one objectstore users and no buckets and "
        "no peers",
        STORE_ZONE_A,
        [*SINGLE_ZONE, user("zone-a-store")],
        {"CephObjectStoreUsers": ["u1"]},
        "",
    ),
    (
        "TestCephObjectStoreDependents/store belong to master zone with no objectstore users and one bucket and no "
        "peer",
        STORE_ZONE_A,
        [*SINGLE_ZONE, bucket("zone-a-store")],
        {"ObjectBuckets": ["obc-default-my-bucket"]},
        "the RGW bucket is seen as its ObjectBucket",
    ),
    (
        "TestCephObjectStoreDependents/store belong to master zone with no objectstore users, no buckets and one "
        "peer",
        STORE_ZONE_A,
        TWO_ZONES,
        {PEERS: ["zone-b"]},
        "",
    ),
    (
        "TestCephObjectStoreDependents/store belong to master zone with one objectstore users but wrong store and "
        "no buckets and one peer",
        STORE_ZONE_A,
        [*TWO_ZONES, USER_NO_STORE],
        {PEERS: ["zone-b"]},
        "",
    ),
    (
        "TestCephObjectStoreDependents/store belong to master zone with one objectstore users and no buckets and "
        "one peer",
        STORE_ZONE_A,
        [*TWO_ZONES, user("zone-a-store")],
        {PEERS: ["zone-b"], "CephObjectStoreUsers": ["u1"]},
        "DIFFERS: Rook stops at the peers; Kustodian also names the users that will block next",
    ),
    (
        "TestCephObjectStoreDependents/store belong to master zone with no objectstore users and one bucket and "
        "one peer",
        STORE_ZONE_A,
        [*TWO_ZONES, bucket("zone-a-store")],
        {PEERS: ["zone-b"], "ObjectBuckets": ["obc-default-my-bucket"]},
        "DIFFERS: Rook stops at the peers; Kustodian also names the buckets that will block next",
    ),
    ("TestCephObjectZoneDependentStores/no objectstores exists", ZONE_A, [], {}, ""),
    (
        "TestCephObjectZoneDependentStores/one objectstores exists",
        ZONE_A,
        [store_on("store-a", "zone-a")],
        {"CephObjectStores": ["store-a"]},
        "",
    ),
    (
        "TestCephObjectZoneDependentStores/objectstore exists for different zone",
        ZONE_A,
        [store_on("store-b", "zone-b")],
        {},
        "",
    ),
    (
        "TestCephObjectZoneDependentStores/multipleobjectstore exists for zone",
        ZONE_A,
        [store_on("store-a", "zone-a"), store_on("store-b", "zone-a")],
        {"CephObjectStores": ["store-a", "store-b"]},
        "",
    ),
    ("TestCephFilesystemDependents/no CephFilesystem found", MYFS, [], {}, ""),
    ("TestCephFilesystemDependents/no blocking dependents", MYFS, [], {}, ""),
    (
        "TestCephFilesystemDependents/one CephFilesystemSubVolumeGroup but wrong fs",
        c("CephFilesystem", "otherfs", FS_NS),
        [c("CephFilesystemSubVolumeGroup", "subvolgroup1", FS_NS)],
        {},
        "",
    ),
    (
        "TestCephFilesystemDependents/one CephFilesystemSubVolumeGroup",
        MYFS,
        [SVG1],
        {"CephFilesystemSubVolumeGroups": ["subvolgroup1"]},
        "",
    ),
    ("TestCephFilesystemDependents/one ceph subvolumegroup with no subvolumes", MYFS, [], {}, ""),
    (
        "TestCephFilesystemDependents/one ceph subvolumegroup with subvolumes",
        MYFS,
        [subvolume_pv("csi-vol-hash"), subvolume_pv("csi-nfs-vol-hash", "rook-ceph.nfs.csi.ceph.com")],
        {"PersistentVolumes": ["pv-csi-nfs-vol-hash", "pv-csi-vol-hash"]},
        "DIFFERS: Kustodian names the volumes of group csi, Rook the group",
    ),
    (
        "TestCephFilesystemDependents/one ceph subvolumegroup with error listing subvolumes",
        MYFS,
        [],
        {},
        "DIFFERS: Rook refuses on a Ceph error; Kustodian's equivalent is refusing while its caches are "
        "not synced (webhook NOT_SYNCED), not a policy row",
    ),
    (
        "TestCephFilesystemDependents/one CephFilesystemSubVolumeGroup and one ceph subvolumegroup with subvolumes",
        MYFS,
        [SVG1, subvolume_pv("csi-vol-hash")],
        {"CephFilesystemSubVolumeGroups": ["subvolgroup1"], "PersistentVolumes": ["pv-csi-vol-hash"]},
        "DIFFERS: the volume instead of the group name",
    ),
    (
        "TestCephFilesystemDependents/empty csi subvolumegroup with non-empty ignored groups",
        MYFS,
        [],
        {},
        "clones in _index/_legacy/_deleting have no PV: nothing to see, same answer",
    ),
    (
        "TestCephFilesystemDependents/handle subvolumes in no group",
        MYFS,
        [],
        {},
        "DIFFERS: a subvolume made by hand outside any group has no PV, so Kustodian cannot see it",
    ),
    # Not a Rook test: where Kustodian deliberately sees more than Rook.
    (
        "kustodian-only/user in another namespace naming the store through clusterNamespace",
        STORE,
        [c("CephObjectStoreUser", "u9", "apps", store="my-store", clusterNamespace=OBJ_NS)],
        {"CephObjectStoreUsers": ["apps/u9"]},
        "DIFFERS: Rook lists users in the store's namespace only and misses this one",
    ),
]


def decide(provider: Obj, *others: Obj) -> DeleteDecision:
    return decide_delete(key_of(provider), provider, view(provider, *others), rook_rules())


@pytest.mark.parametrize(
    ("provider", "others", "expected", "note"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rook_dependents_case(
    provider: Obj, others: list[Obj], expected: dict[str, list[str]], note: str
) -> None:
    decision = decide(provider, *others)
    home = provider["metadata"]["namespace"]
    got = {title: [r.label(home) for r in refs] for title, refs in decision.dependents.items()}
    assert got == expected, note
    assert decision.allowed is not bool(expected)


# --- TestDependentList (pkg/util/dependents): the message, on a real decision ------------------
POOL = c("CephBlockPool", "replicapool")


def client(name: str) -> Obj:
    return c("CephClient", name, caps={"osd": "profile rbd pool=replicapool"})


def nfs(name: str) -> Obj:
    return c("CephNFS", name, rados={"pool": "replicapool"})


def rns(name: str) -> Obj:
    return c("CephBlockPoolRadosNamespace", name, blockPoolName="replicapool")


MESSAGE_CASES: list[tuple[str, list[Obj], list[str]]] = [
    ("TestDependentList/empty", [], []),
    (
        "TestDependentList/one resource, one dependent",
        [client("my-resource-1")],
        ["CephClients", "my-resource-1"],
    ),
    (
        "TestDependentList/one resource - multiple dependents",
        [client("my-resource-1"), client("my-resource-2"), client("my-resource-3")],
        ["CephClients", "my-resource-1", "my-resource-2", "my-resource-3"],
    ),
    (
        "TestDependentList/multiple resources - multiple dependents",
        [
            client("my-resource-2"),
            client("my-resource-4"),
            rns("your-resource-1"),
            nfs("their-resource-5"),
            nfs("their-resource-6"),
        ],
        [
            "CephBlockPoolRadosNamespaces",
            "CephClients",
            "CephNFSes",
            "my-resource-2",
            "my-resource-4",
            "your-resource-1",
            "their-resource-5",
            "their-resource-6",
        ],
    ),
]


@pytest.mark.parametrize(
    ("others", "each_once"), [c[1:] for c in MESSAGE_CASES], ids=[c[0] for c in MESSAGE_CASES]
)
def test_rook_dependent_list_message(others: list[Obj], each_once: list[str]) -> None:
    decision = decide(POOL, *others)
    if not each_once:
        assert decision.allowed and decision.message == ""
        return
    header = 'CephBlockPool "test-ceph-cluster-dependents/replicapool" cannot be deleted: it has dependents: '
    assert decision.message.count(header) == 1 and decision.message.startswith(header)
    for word in each_once:
        assert (
            decision.message.count(f"{word}:")
            + decision.message.count(f"{word},")
            + decision.message.count(f"{word}]")
            == 1
        ), word
    kinds = [w for w in each_once if w.startswith("Ceph")]
    positions = [decision.message.index(f"{k}: [") for k in kinds]
    assert positions == sorted(positions)  # "ensure alphabetical ordering"
