from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kustodian.policy.objects import RawObject
from kustodian.policy.orphans import (
    ANNOTATION_KEEP_DATA,
    INDEXERS,
    ORPHAN_BY_NODE,
    ORPHAN_FINALIZER,
    ORPHAN_KIND_KEY,
    DeleteOrphan,
    DiskScan,
    DropFinalizer,
    NoAction,
    OrphanCleanupInput,
    OrphanCleanupRules,
    OrphanDecision,
    OrphanedReplicaDir,
    OrphanReason,
    OrphanSyncInput,
    Ownership,
    RemoveDir,
    ReplicaDirEntry,
    TrackedReplica,
    Wait,
    cleanup_decision,
    confirms,
    confirms_prune,
    data_cleanability,
    data_cleanable_condition,
    decide_orphan_cleanup,
    decide_orphan_sync,
    disk_condition,
    find_orphans,
    orphan_name,
    orphan_object,
    ownership,
    parse_replica_dir_name,
    parse_volume_meta,
    safe_target,
    sync_orphans,
    tracked_replica,
    tracked_replicas,
)
from kustodian.policy.store import ListView

NODE = "node-a"
DISK = "/var/lib/longhorn"
UUID = "disk-uuid-1"
NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
GRACE = timedelta(hours=1)
ORPHAN_DIR = "pvc-1234-abcdef12"
TRACKED_DIR = "pvc-5678-12345678"


# -- names and paths ------------------------------------------------------------------

NAME_CASES = [
    ("longhorn-replica", "pvc-0a1b2c3d-1234-abcd-8000-000000000000-1a2b3c4d", True),
    ("dots-inside-volume", "vol.v2-abcd1234", True),
    ("shortest", "a-abcdefgh", True),
    ("suffix-too-short", "vol-abc1234", False),
    ("suffix-too-long", "vol-abcdefghi", False),
    ("no-suffix", "vol", False),
    ("uppercase", "Vol-abcdefgh", False),
    ("uppercase-suffix", "vol-ABCDEFGH", False),
    ("dotdot", "..-abcdefgh", False),
    ("dotdot-inside", "a..b-abcdefgh", False),
    ("leading-dot", ".vol-abcdefgh", False),
    ("slash", "a/b-abcdefgh", False),
    ("parent-escape", "../etc-abcdefgh", False),
    ("trailing-newline", "vol-abcdefgh\n", False),
    ("nul", "vol\x00-abcdefgh", False),
    ("empty", "", False),
    ("too-long", "a" * 245 + "-abcdefgh", False),
    ("max-length", "a" * 244 + "-abcdefgh", True),
    ("unicode-digit", "vol-abcdefg\u0663", False),
    ("not-a-string", 42, False),
]


@pytest.mark.parametrize(("dir_name", "valid"), [c[1:] for c in NAME_CASES], ids=[c[0] for c in NAME_CASES])
def test_replica_dir_name_rule(dir_name: Any, valid: bool) -> None:
    assert (parse_replica_dir_name(dir_name) is not None) == valid


def test_replica_dir_name_parts() -> None:
    parsed = parse_replica_dir_name("pvc-1234-abcdef12")
    assert parsed is not None
    assert (parsed.volume, parsed.suffix) == ("pvc-1234", "abcdef12")


SAFE_TARGET_CASES = [
    ("plain", DISK, ORPHAN_DIR, f"{DISK}/replicas/{ORPHAN_DIR}"),
    ("trailing-slash-disk", DISK + "/", ORPHAN_DIR, f"{DISK}/replicas/{ORPHAN_DIR}"),
    ("double-slashes", "//var//lib/longhorn/./", ORPHAN_DIR, f"{DISK}/replicas/{ORPHAN_DIR}"),
    ("root-disk", "/", ORPHAN_DIR, f"/replicas/{ORPHAN_DIR}"),
    ("relative-disk", "var/lib/longhorn", ORPHAN_DIR, None),
    ("dotdot-in-disk", "/var/lib/../longhorn", ORPHAN_DIR, None),
    ("nul-in-disk", "/var/lib\x00/x", ORPHAN_DIR, None),
    ("dotdot-name", DISK, "..", None),
    ("dot-name", DISK, ".", None),
    ("empty-name", DISK, "", None),
    ("nested-name", DISK, "a-abcdefgh/b-abcdefgh", None),
    ("escape-name", DISK, "../../etc/passwd", None),
    ("absolute-name", DISK, "/etc-abcdefgh", None),
]


@pytest.mark.parametrize(
    ("disk", "dir_name", "expected"),
    [c[1:] for c in SAFE_TARGET_CASES],
    ids=[c[0] for c in SAFE_TARGET_CASES],
)
def test_safe_target(disk: str, dir_name: str, expected: str | None) -> None:
    assert safe_target(disk, dir_name) == expected


def test_orphan_name_is_deterministic_dns1123() -> None:
    first = orphan_name(NODE, UUID, ORPHAN_DIR)
    assert first == orphan_name(NODE, UUID, ORPHAN_DIR)
    assert re.fullmatch(r"orphan-[0-9a-f]{32}", first)
    assert first != orphan_name("node-b", UUID, ORPHAN_DIR)
    assert first != orphan_name(NODE, "disk-uuid-2", ORPHAN_DIR)
    # The separator keeps ("a", "bc") and ("ab", "c") apart.
    assert orphan_name("a", "bc", "x") != orphan_name("ab", "c", "x")


# -- volume.meta ----------------------------------------------------------------------

GOOD_META: dict[str, Any] = {
    "Size": 2147483648,
    "Head": "volume-head-000.img",
    "Dirty": False,
    "Rebuilding": False,
    "Error": "",
    "Parent": "",
    "SectorSize": 512,
    "BackingFilePath": "",
    "BackingFile": None,
}


def meta_with(**changes: Any) -> bytes:
    doc = {**GOOD_META, **changes}
    return json.dumps({k: v for k, v in doc.items() if v is not _DROP}).encode()


_DROP = object()

META_CASES: list[tuple[str, bytes, bool]] = [
    ("longhorn-meta", meta_with(), True),
    ("minimal-keys", json.dumps({"Size": 1, "Head": "h", "Dirty": True, "Rebuilding": False}).encode(), True),
    ("backing-file-object", meta_with(BackingFile={"Name": "bf"}), True),
    ("null-optional-strings", meta_with(Error=None, Parent=None), True),
    ("missing-size", meta_with(Size=_DROP), False),
    ("missing-head", meta_with(Head=_DROP), False),
    ("missing-dirty", meta_with(Dirty=_DROP), False),
    ("size-string", meta_with(Size="1"), False),
    ("size-bool", meta_with(Size=True), False),
    ("size-float", meta_with(Size=1.5), False),
    ("size-negative", meta_with(Size=-1), False),
    ("head-empty", meta_with(Head=""), False),
    ("dirty-int", meta_with(Dirty=0), False),
    ("sector-size-string", meta_with(SectorSize="512"), False),
    ("error-int", meta_with(Error=1), False),
    ("backing-file-path-list", meta_with(BackingFilePath=[]), False),
    ("backing-file-int", meta_with(BackingFile=3), False),
    ("json-array", b"[]", False),
    ("not-json", b"{not json", False),
    ("invalid-utf8", b'{"Head": "\xff"}', False),
    ("nan-size", b'{"Size": NaN, "Head": "h", "Dirty": false, "Rebuilding": false}', False),
    ("empty", b"", False),
    ("too-large", b" " * (64 * 1024 + 1) + meta_with(), False),
]


@pytest.mark.parametrize(("text", "valid"), [c[1:] for c in META_CASES], ids=[c[0] for c in META_CASES])
def test_parse_volume_meta(text: bytes, valid: bool) -> None:
    assert (parse_volume_meta(text) is not None) == valid


def test_parse_volume_meta_fields() -> None:
    meta = parse_volume_meta(meta_with())
    assert meta is not None
    assert (meta.size, meta.head, meta.sector_size) == (2147483648, "volume-head-000.img", 512)


# -- disks ----------------------------------------------------------------------------


def entry(name: str, *, is_dir: bool = True, is_symlink: bool = False, valid: bool = True) -> ReplicaDirEntry:
    return ReplicaDirEntry(name, is_dir, is_symlink, valid)


def scan(
    *entries: ReplicaDirEntry,
    path: str = DISK,
    expected: str = UUID,
    found: str | None = UUID,
    fsid: str | None = "fsid:1",
    readable: bool = True,
) -> DiskScan:
    return DiskScan(
        disk_path=path,
        disk_name="disk-1",
        expected_uuid=expected,
        found_uuid=found,
        fsid=fsid,
        readable=readable,
        entries={e.name: e for e in entries},
    )


OTHER_DISK = scan(path="/mnt/disk2", fsid="fsid:2")
DISK_CASES: list[tuple[str, DiskScan, list[DiskScan], OrphanReason]] = [
    ("healthy", scan(), [OTHER_DISK], OrphanReason.DISK_OK),
    ("unreadable", scan(readable=False), [], OrphanReason.DISK_UNREADABLE),
    ("relative-path", scan(path="longhorn"), [], OrphanReason.DISK_UNREADABLE),
    ("no-expected-uuid", scan(expected=""), [], OrphanReason.DISK_UUID_UNKNOWN),
    ("identity-file-missing", scan(found=None), [], OrphanReason.DISK_UUID_UNKNOWN),
    ("other-disk-mounted-at-path", scan(found="disk-uuid-9"), [], OrphanReason.DISK_UUID_MISMATCH),
    ("fsid-unknown", scan(fsid=None), [], OrphanReason.DISK_FILESYSTEM_UNKNOWN),
    ("bind-mount-duplicate", scan(), [scan(path="/mnt/bind", fsid="fsid:1")], OrphanReason.DISK_FILESYSTEM_SHARED),
    ("self-in-others-is-fine", scan(), [scan(path=DISK + "/")], OrphanReason.DISK_OK),
]


@pytest.mark.parametrize(
    ("the_scan", "others", "reason"), [c[1:] for c in DISK_CASES], ids=[c[0] for c in DISK_CASES]
)
def test_disk_condition(the_scan: DiskScan, others: list[DiskScan], reason: OrphanReason) -> None:
    got = disk_condition(the_scan, others)
    assert (got.ok, got.reason) == (reason == OrphanReason.DISK_OK, reason)


# -- finding orphans ------------------------------------------------------------------

TRACKED = frozenset({TrackedReplica(NODE, UUID, DISK, TRACKED_DIR)})
# the disks Longhorn's Node lists for NODE in these tests: (name, path, UUID)
LH_DISKS = [("disk-1", DISK, UUID), ("disk-2", "/mnt/disk2", UUID), ("bind", "/mnt/bind", UUID),
            ("disk-3", "/mnt/disk3", "u3")]


def lh_condition(ready: bool, reason: str = "", since: str = "2024-05-01T00:00:00Z") -> dict[str, str]:
    return {"type": "Ready", "status": "True" if ready else "False", "reason": reason,
            "lastTransitionTime": since}


def lh_node(*, ready: bool = True, evict: bool = False, disks: list[tuple[str, str, str]] = LH_DISKS,
            not_ready_disks: tuple[str, ...] = (), evicted_disks: tuple[str, ...] = (),
            scheduled: dict[str, list[str]] | None = None, ready_since: str = "2024-05-01T00:00:00Z",
            block_disks: tuple[str, ...] = ()) -> dict[str, Any]:
    """A ``nodes.longhorn.io`` object shaped as longhorn-manager writes it."""
    return {
        "apiVersion": "longhorn.io/v1beta2", "kind": "Node", "metadata": {"name": NODE},
        "spec": {"allowScheduling": True, "evictionRequested": evict, "disks": {
            name: {"path": path, "allowScheduling": True, "evictionRequested": name in evicted_disks,
                   "diskType": "block" if name in block_disks else "filesystem", "storageReserved": 0,
                   "tags": []}
            for name, path, _ in disks}},
        "status": {"conditions": [lh_condition(ready, "" if ready else "ManagerPodDown", ready_since)],
                   "diskStatus": {
                       name: {"diskUUID": disk_uuid, "diskPath": path, "diskType": "filesystem",
                              "conditions": [lh_condition(name not in not_ready_disks,
                                                          "" if name not in not_ready_disks else "DiskNotReady")],
                              "scheduledReplica": {r: 1 for r in (scheduled or {}).get(name, [])}}
                       for name, path, disk_uuid in disks}},
    }


def owned(tracked: frozenset[TrackedReplica] | None = TRACKED, node_obj: dict[str, Any] | None = None) -> Ownership:
    return ownership(NODE, "longhorn-system", node_obj if node_obj is not None else lh_node(), tracked)


UNKNOWN = owned(None)


def test_find_orphans_only_valid_real_untracked_dirs() -> None:
    the_scan = scan(
        entry(ORPHAN_DIR),
        entry(TRACKED_DIR),
        entry("bad_name"),
        entry("pvc-9-aaaaaaaa", is_dir=False),
        entry("pvc-8-bbbbbbbb", is_dir=False, is_symlink=True),
        entry("pvc-7-cccccccc", valid=False),
    )
    assert find_orphans(NODE, [the_scan], owned()) == [
        OrphanedReplicaDir(NODE, "disk-1", UUID, DISK, ORPHAN_DIR)
    ]


def test_find_orphans_tracked_anywhere_is_not_an_orphan() -> None:
    # A Replica on another node/disk claiming the same data directory still protects it.
    elsewhere = frozenset({TrackedReplica("node-b", "disk-uuid-7", "/other", ORPHAN_DIR)})
    assert find_orphans(NODE, [scan(entry(ORPHAN_DIR))], owned(elsewhere)) == []


def test_find_orphans_nothing_when_replicas_unknown() -> None:
    assert find_orphans(NODE, [scan(entry(ORPHAN_DIR))], UNKNOWN) == []


def test_find_orphans_skips_only_the_later_disk_sharing_a_filesystem() -> None:
    # longhorn-tests test_orphaned_dirs_in_duplicated_disks: the first disk's orphans are reported
    a = scan(entry(ORPHAN_DIR))
    b = scan(entry("dup-abcdefgh"), path="/mnt/bind")
    c = scan(entry("other-abcdefgh"), path="/mnt/disk3", fsid="fsid:3", expected="u3", found="u3")
    assert [o.disk_path for o in find_orphans(NODE, [a, b, c], owned(frozenset()))] == ["/mnt/disk3", DISK]
    # order decides, not the path: listed first, the bind mount is the one that stays
    assert [o.disk_path for o in find_orphans(NODE, [b, a], owned(frozenset()))] == ["/mnt/bind"]
    # a broken first disk does not push the second out
    broken = scan(entry(ORPHAN_DIR), found=None)
    assert [o.disk_path for o in find_orphans(NODE, [broken, b], owned(frozenset()))] == ["/mnt/bind"]


def test_find_orphans_skips_swapped_disk() -> None:
    assert find_orphans(NODE, [scan(entry(ORPHAN_DIR), found="disk-uuid-9")], owned(frozenset())) == []


def test_tracked_replica_from_longhorn_objects() -> None:
    current = {"spec": {"nodeID": NODE, "diskID": UUID, "diskPath": DISK, "dataDirectoryName": TRACKED_DIR}}
    legacy = {"spec": {"nodeID": NODE, "dataPath": f"{DISK}/replicas/old-abcdefgh/"}}
    unscheduled: dict[str, Any] = {"spec": {"nodeID": ""}}
    assert tracked_replica(current) == TrackedReplica(NODE, UUID, DISK, TRACKED_DIR)
    assert tracked_replicas([current, legacy, unscheduled]) == frozenset(
        {TrackedReplica(NODE, UUID, DISK, TRACKED_DIR), TrackedReplica(NODE, "", "", "old-abcdefgh")}
    )


# -- the Orphan object and cleanup ----------------------------------------------------


def orphan(
    *,
    node: str = NODE,
    dir_name: str = ORPHAN_DIR,
    disk_uuid: str = UUID,
    disk_path: str = DISK,
    deleting: bool = False,
    keep: bool = False,
    finalizer: bool = True,
    created: datetime = NOW - 2 * GRACE,
) -> dict[str, Any]:
    obj = orphan_object(
        OrphanedReplicaDir(node, "disk-1", disk_uuid, disk_path, dir_name), namespace="kustodian"
    )
    meta = obj["metadata"]
    meta["uid"] = "orphan-uid"
    meta["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    if deleting:
        meta["deletionTimestamp"] = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    if keep:
        meta["annotations"] = {ANNOTATION_KEEP_DATA: "true"}
    if not finalizer:
        meta["finalizers"] = []
    return obj


HEALTHY = [scan(entry(ORPHAN_DIR), entry(TRACKED_DIR))]
REMOVE = RemoveDir(DISK, ORPHAN_DIR, UUID, f"{DISK}/replicas/{ORPHAN_DIR}")


def test_orphan_object_shape() -> None:
    obj = orphan_object(OrphanedReplicaDir(NODE, "disk-1", UUID, DISK, ORPHAN_DIR), namespace="kustodian")
    assert obj["metadata"]["name"] == orphan_name(NODE, UUID, ORPHAN_DIR)
    assert obj["metadata"]["finalizers"] == [ORPHAN_FINALIZER]
    assert obj["spec"] == {
        "nodeID": NODE,
        "type": "replica",
        "parameters": {"DataName": ORPHAN_DIR, "DiskName": "disk-1", "DiskUUID": UUID, "DiskPath": DISK},
    }
    view = ListView({ORPHAN_KIND_KEY: [obj]}, INDEXERS)
    assert view.by_index(ORPHAN_KIND_KEY, ORPHAN_BY_NODE, NODE) == [obj]


DELETE_CASES: list[tuple[str, RawObject, list[DiskScan], Ownership, object]] = [
    ("cleanable-removes-dir", orphan(deleting=True), HEALTHY, owned(), REMOVE),
    ("keep-data-annotation", orphan(deleting=True, keep=True), HEALTHY, owned(), OrphanReason.KEEP_DATA),
    ("other-node", orphan(deleting=True, node="node-b"), HEALTHY, owned(), OrphanReason.NODE_UNAVAILABLE),
    (
        "disk-not-configured",
        orphan(deleting=True, disk_path="/mnt/gone"),
        HEALTHY,
        owned(),
        OrphanReason.DISK_INVALID,
    ),
    (
        "disk-unreadable",
        orphan(deleting=True),
        [scan(entry(ORPHAN_DIR), readable=False)],
        owned(),
        OrphanReason.DISK_INVALID,
    ),
    (
        "disk-swapped-under-same-path",
        orphan(deleting=True),
        [scan(entry(ORPHAN_DIR), found="disk-uuid-9")],
        owned(),
        OrphanReason.DISK_CHANGED,
    ),
    (
        "disk-reconfigured-with-new-uuid",
        orphan(deleting=True),
        [scan(entry(ORPHAN_DIR), expected="disk-uuid-9", found="disk-uuid-9")],
        owned(),
        OrphanReason.DISK_CHANGED,
    ),
    (
        "disk-shares-filesystem-with-an-earlier-disk",
        orphan(deleting=True),
        [scan(path="/mnt/bind"), *HEALTHY],
        owned(),
        OrphanReason.DISK_INVALID,
    ),
    ("first-disk-of-a-shared-filesystem", orphan(deleting=True), [*HEALTHY, scan(path="/mnt/bind")], owned(),
     REMOVE),
    ("dir-gone", orphan(deleting=True), [scan()], owned(), OrphanReason.DATA_MISSING),
    (
        "dir-became-symlink",
        orphan(deleting=True),
        [scan(entry(ORPHAN_DIR, is_dir=False, is_symlink=True))],
        owned(),
        OrphanReason.DATA_MISSING,
    ),
    (
        "meta-now-invalid",
        orphan(deleting=True),
        [scan(entry(ORPHAN_DIR, valid=False))],
        owned(),
        OrphanReason.DATA_INVALID,
    ),
    ("dir-tracked-again", orphan(deleting=True, dir_name=TRACKED_DIR), HEALTHY, owned(), OrphanReason.DATA_TRACKED),
    ("replicas-unknown", orphan(deleting=True), HEALTHY, UNKNOWN, OrphanReason.TRACKING_UNKNOWN),
    # Longhorn's view of node and disk (OrphanController.updateDataCleanableCondition)
    ("no-longhorn-node", orphan(deleting=True), HEALTHY,
     ownership(NODE, "wrong-ns", None, TRACKED), OrphanReason.NODE_UNAVAILABLE),
    ("longhorn-node-down", orphan(deleting=True), HEALTHY, owned(node_obj=lh_node(ready=False)),
     OrphanReason.NODE_UNAVAILABLE),
    ("longhorn-node-evicted", orphan(deleting=True), HEALTHY, owned(node_obj=lh_node(evict=True)),
     OrphanReason.NODE_EVICTED),
    ("longhorn-disk-not-ready", orphan(deleting=True), HEALTHY,
     owned(node_obj=lh_node(not_ready_disks=("disk-1",))), OrphanReason.DISK_INVALID),
    ("longhorn-disk-unknown", orphan(deleting=True), HEALTHY,
     owned(node_obj=lh_node(disks=LH_DISKS[1:])), OrphanReason.DISK_INVALID),
    ("longhorn-block-disk", orphan(deleting=True), HEALTHY,
     owned(node_obj=lh_node(block_disks=("disk-1",))), OrphanReason.DISK_INVALID),
    ("longhorn-disk-evicted", orphan(deleting=True), HEALTHY,
     owned(node_obj=lh_node(evicted_disks=("disk-1",))), OrphanReason.DISK_EVICTED),
    ("longhorn-disk-has-other-uuid", orphan(deleting=True), HEALTHY,
     owned(node_obj=lh_node(disks=[("disk-1", DISK, "disk-uuid-9")])), OrphanReason.DISK_CHANGED),
    ("longhorn-disk-renamed", orphan(deleting=True), HEALTHY,
     owned(node_obj=lh_node(disks=[("disk-renamed", DISK, UUID)])), OrphanReason.DISK_CHANGED),
    ("longhorn-replicas-inconsistent", orphan(deleting=True), HEALTHY,
     owned(node_obj=lh_node(scheduled={"disk-1": ["pvc-1234-r-0001"]})), OrphanReason.REPLICAS_INCONSISTENT),
    ("dotdot-name", orphan(deleting=True, dir_name=".."), HEALTHY, owned(), OrphanReason.DATA_NAME_INVALID),
    (
        "nested-name",
        orphan(deleting=True, dir_name="a/b-abcdefgh"),
        HEALTHY,
        owned(),
        OrphanReason.DATA_NAME_INVALID,
    ),
    ("missing-parameters", orphan(deleting=True, disk_uuid=""), HEALTHY, owned(), OrphanReason.PARAMETERS_INVALID),
]


@pytest.mark.parametrize(
    ("obj", "scans", "owners", "expected"), [c[1:] for c in DELETE_CASES], ids=[c[0] for c in DELETE_CASES]
)
def test_cleanup_of_deleting_orphan(obj: RawObject, scans: list[DiskScan], owners: Ownership, expected: object) -> None:
    decision = cleanup_decision(obj, scans, owners, node=NODE, auto_delete=False, grace=GRACE, now=NOW)
    if isinstance(expected, RemoveDir):
        assert decision.action == expected
        assert decision.condition["status"] == "True"
    else:
        assert isinstance(decision.action, DropFinalizer)
        assert decision.action.reason == expected
    if expected not in (OrphanReason.KEEP_DATA,) and not isinstance(expected, RemoveDir):
        assert decision.condition["status"] == "False"
        assert decision.condition["reason"] == expected


def test_deleting_orphan_without_our_finalizer_is_left_alone() -> None:
    decision = cleanup_decision(
        orphan(deleting=True, finalizer=False),
        HEALTHY,
        owned(),
        node=NODE,
        auto_delete=False,
        grace=GRACE,
        now=NOW,
    )
    assert decision.action == NoAction(OrphanReason.NO_FINALIZER)


AUTO_CASES: list[tuple[str, RawObject, list[DiskScan], bool, object]] = [
    ("disabled", orphan(), HEALTHY, False, NoAction(OrphanReason.AUTO_DELETE_DISABLED)),
    (
        "grace-elapsed-and-cleanable",
        orphan(),
        HEALTHY,
        True,
        DeleteOrphan("kustodian", orphan()["metadata"]["name"], "orphan-uid"),
    ),
    (
        "inside-grace",
        orphan(created=NOW - timedelta(minutes=10)),
        HEALTHY,
        True,
        Wait(NOW + timedelta(minutes=50)),
    ),
    (
        "grace-elapsed-not-cleanable",
        orphan(),
        [scan(entry(ORPHAN_DIR), readable=False)],
        True,
        OrphanReason.DISK_INVALID,
    ),
    ("keep-data-is-never-auto-deleted", orphan(keep=True), HEALTHY, True, NoAction(OrphanReason.KEEP_DATA)),
]


@pytest.mark.parametrize(
    ("obj", "scans", "auto", "expected"), [c[1:] for c in AUTO_CASES], ids=[c[0] for c in AUTO_CASES]
)
def test_auto_deletion(obj: RawObject, scans: list[DiskScan], auto: bool, expected: object) -> None:
    decision = cleanup_decision(obj, scans, owned(), node=NODE, auto_delete=auto, grace=GRACE, now=NOW)
    if isinstance(expected, OrphanReason):
        assert isinstance(decision.action, NoAction)
        assert decision.action.reason == expected
    else:
        assert decision.action == expected


# -- one frozen input, and the confirmation on a fresh one ---------------------------------

INPUT_CASES: list[tuple[str, RawObject, list[DiskScan], bool]] = [
    ("delete-cleanable", orphan(deleting=True), HEALTHY, False),
    ("delete-data-missing", orphan(deleting=True), [scan()], False),
    ("delete-keep-data", orphan(deleting=True, keep=True), HEALTHY, False),
    ("auto-grace-elapsed", orphan(), HEALTHY, True),
    ("auto-inside-grace", orphan(created=NOW - timedelta(minutes=10)), HEALTHY, True),
]


@pytest.mark.parametrize(("obj", "scans", "auto"), [c[1:] for c in INPUT_CASES], ids=[c[0] for c in INPUT_CASES])
def test_decision_over_the_input_is_cleanup_decision(obj: RawObject, scans: list[DiskScan], auto: bool) -> None:
    observed = OrphanCleanupInput(obj, tuple(scans), owned(), {}, OrphanCleanupRules(NODE, auto, GRACE))
    assert decide_orphan_cleanup(observed, NOW) == cleanup_decision(
        obj, scans, owned(), node=NODE, auto_delete=auto, grace=GRACE, now=NOW)


def test_held_disks_of_the_input_hold_auto_deletion() -> None:
    observed = OrphanCleanupInput(orphan(), tuple(HEALTHY), owned(), {DISK: "too many orphans"},
                                  OrphanCleanupRules(NODE, True, GRACE))
    assert decide_orphan_cleanup(observed, NOW).action == NoAction(OrphanReason.MASS_ORPHAN_BRAKE, "too many orphans")


def _decide_deleting(scans: list[DiskScan], owners: Ownership, obj: RawObject | None = None) -> OrphanDecision:
    observed = OrphanCleanupInput(obj or orphan(deleting=True), tuple(scans), owners, {},
                                  OrphanCleanupRules(NODE, False, GRACE))
    return decide_orphan_cleanup(observed, NOW)


CONFIRM_CASES: list[tuple[str, list[DiskScan], Ownership, RawObject | None, bool]] = [
    ("same-facts", HEALTHY, owned(), None, True),
    ("dir-gone-now", [scan()], owned(), None, False),
    ("tracked-again-now", HEALTHY, owned(TRACKED | {TrackedReplica(NODE, UUID, DISK, ORPHAN_DIR)}), None, False),
    ("replicas-unknown-now", HEALTHY, UNKNOWN, None, False),
    ("keep-data-set-now", HEALTHY, owned(), orphan(deleting=True, keep=True), False),
]


@pytest.mark.parametrize(("scans", "owners", "obj", "confirmed"), [c[1:] for c in CONFIRM_CASES],
                         ids=[c[0] for c in CONFIRM_CASES])
def test_a_removal_is_confirmed_only_by_the_same_removal_on_fresh_facts(
        scans: list[DiskScan], owners: Ownership, obj: RawObject | None, confirmed: bool) -> None:
    first = _decide_deleting(HEALTHY, owned())
    assert isinstance(first.action, RemoveDir)
    assert confirms(_decide_deleting(scans, owners, obj), first.action) is confirmed


def test_releasing_is_confirmed_by_any_release() -> None:
    first = cleanup_decision(orphan(deleting=True), [scan()], owned(), node=NODE, auto_delete=False, grace=GRACE,
                             now=NOW)
    assert first.action == DropFinalizer(OrphanReason.DATA_MISSING, f"{DISK}/replicas/{ORPHAN_DIR} is no longer a directory")
    kept = cleanup_decision(orphan(deleting=True, keep=True), HEALTHY, owned(), node=NODE, auto_delete=False,
                            grace=GRACE, now=NOW)
    removed = cleanup_decision(orphan(deleting=True), HEALTHY, owned(), node=NODE, auto_delete=False, grace=GRACE,
                               now=NOW)
    assert confirms(kept, first.action)
    assert not confirms(removed, first.action)


def test_condition_keeps_transition_time_until_status_flips() -> None:
    cleanable = data_cleanability(orphan(), HEALTHY, owned(), node=NODE)
    first = data_cleanable_condition(cleanable, now=NOW)
    assert first == {
        "type": "DataCleanable",
        "status": "True",
        "reason": "Cleanable",
        "message": f"{DISK}/replicas/{ORPHAN_DIR} can be removed",
        "lastTransitionTime": "2024-05-01T12:00:00Z",
    }
    later = NOW + timedelta(minutes=5)
    assert data_cleanable_condition(cleanable, now=later, previous=[first])["lastTransitionTime"] == (
        "2024-05-01T12:00:00Z"
    )
    blocked = data_cleanability(orphan(), [scan()], owned(), node=NODE)
    flipped = data_cleanable_condition(blocked, now=later, previous=[first])
    assert (flipped["status"], flipped["reason"], flipped["lastTransitionTime"]) == (
        "False",
        "DataMissing",
        "2024-05-01T12:05:00Z",
    )


def test_decision_reports_condition_from_status() -> None:
    obj = orphan()
    obj["status"] = {
        "conditions": [
            {"type": "DataCleanable", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}
        ]
    }
    decision = cleanup_decision(obj, HEALTHY, owned(), node=NODE, auto_delete=False, grace=GRACE, now=NOW)
    assert decision.condition["lastTransitionTime"] == "2024-01-01T00:00:00Z"


# -- sync -----------------------------------------------------------------------------


def test_sync_creates_new_and_prunes_resolved_orphans() -> None:
    new_dir = "pvc-new-aaaaaaaa"
    the_scan = scan(entry(ORPHAN_DIR), entry(TRACKED_DIR), entry(new_dir))
    existing = [
        orphan(),  # still an orphan: kept
        orphan(dir_name=TRACKED_DIR),  # a Replica uses it again: pruned
        orphan(dir_name="pvc-gone-bbbbbbbb"),  # directory vanished: pruned
        orphan(dir_name="pvc-del-cccccccc", deleting=True),  # already going away: untouched
        orphan(node="node-b", dir_name="pvc-other-dddddddd"),  # another node's business
    ]
    got = sync_orphans(NODE, [the_scan], owned(), existing)
    assert [o.dir_name for o in got.create] == [new_dir]
    assert {(p.name, p.reason) for p in got.prune} == {
        (orphan_name(NODE, UUID, TRACKED_DIR), OrphanReason.DATA_TRACKED),
        (orphan_name(NODE, UUID, "pvc-gone-bbbbbbbb"), OrphanReason.DATA_MISSING),
    }


def test_a_prune_is_confirmed_only_by_a_fresh_decision_pruning_the_same_orphan() -> None:
    the_scan = scan(entry(ORPHAN_DIR), entry(TRACKED_DIR))
    existing = (orphan(dir_name=TRACKED_DIR),)
    first = decide_orphan_sync(OrphanSyncInput(NODE, (the_scan,), owned(), existing))
    assert first == sync_orphans(NODE, [the_scan], owned(), existing)
    (prune,) = first.prune
    same = decide_orphan_sync(OrphanSyncInput(NODE, (the_scan,), owned(), existing))
    untracked_now = decide_orphan_sync(OrphanSyncInput(NODE, (the_scan,), owned(frozenset()), existing))
    unknown_now = decide_orphan_sync(OrphanSyncInput(NODE, (the_scan,), UNKNOWN, existing))
    recreated = ({**existing[0], "metadata": {**existing[0]["metadata"], "uid": "another-uid"}},)
    recreated_now = decide_orphan_sync(OrphanSyncInput(NODE, (the_scan,), owned(), recreated))
    assert confirms_prune(same, prune)
    assert not confirms_prune(untracked_now, prune)
    assert not confirms_prune(unknown_now, prune)
    assert not confirms_prune(recreated_now, prune)


@pytest.mark.parametrize(
    "scans",
    [
        [scan(readable=False)],
        [scan(found="disk-uuid-9")],
        [scan(expected="disk-uuid-9", found="disk-uuid-9")],
        [],
    ],
    ids=["disk-unreadable", "disk-swapped", "disk-reconfigured", "disk-not-scanned"],
)
def test_sync_never_prunes_without_a_trusted_disk(scans: list[DiskScan]) -> None:
    got = sync_orphans(NODE, scans, owned(), [orphan(dir_name="pvc-gone-bbbbbbbb")])
    assert got.prune == ()


def test_sync_never_prunes_when_replicas_unknown() -> None:
    got = sync_orphans(NODE, [scan()], UNKNOWN, [orphan()])
    assert (got.create, got.prune) == ((), ())


# -- ownership from Longhorn -----------------------------------------------------------

OWNERSHIP_CASES: list[tuple[str, Ownership, bool, OrphanReason]] = [
    ("node-and-replicas", owned(), True, OrphanReason.OWNERSHIP_KNOWN),
    ("no-replicas-at-all-but-a-node", owned(frozenset()), True, OrphanReason.OWNERSHIP_KNOWN),
    ("no-longhorn-node-wrong-namespace", ownership(NODE, "default", None, frozenset()), False,
     OrphanReason.LONGHORN_NODE_MISSING),
    ("node-unreadable", ownership(NODE, "longhorn-system", None, TRACKED, node_error="403 Forbidden"), False,
     OrphanReason.LONGHORN_NODE_MISSING),
    ("replicas-unreadable", owned(None), False, OrphanReason.TRACKING_UNKNOWN),
    ("node-lists-replicas-the-list-lacks", owned(frozenset(), lh_node(scheduled={"disk-1": ["r-1", "r-2"]})),
     False, OrphanReason.REPLICAS_INCONSISTENT),
    ("node-lists-replicas-the-list-has",
     owned(frozenset({TrackedReplica(NODE, UUID, DISK, TRACKED_DIR, "r-1")}), lh_node(scheduled={"disk-1": ["r-1"]})),
     True, OrphanReason.OWNERSHIP_KNOWN),
]


@pytest.mark.parametrize(("got", "known", "reason"), [c[1:] for c in OWNERSHIP_CASES],
                         ids=[c[0] for c in OWNERSHIP_CASES])
def test_ownership_verdict(got: Ownership, known: bool, reason: OrphanReason) -> None:
    assert (got.known, got.reason) == (known, reason)
    assert got.message  # always says why
    if not known:
        assert "nothing is reported or removed" in got.message
        # an empty or unreadable ownership source never means "nothing is owned"
        assert find_orphans(NODE, HEALTHY, got) == []
        assert sync_orphans(NODE, [scan()], got, [orphan(dir_name="pvc-gone-bbbbbbbb")]).prune == ()
        assert not data_cleanability(orphan(), HEALTHY, got, node=NODE).cleanable


def test_wrong_namespace_message_names_the_namespace() -> None:
    got = ownership(NODE, "default", None, frozenset())
    assert "no Longhorn Node 'node-a' in namespace 'default'" in got.message


def test_longhorn_node_is_read_as_longhorn_writes_it() -> None:
    from kustodian.policy.orphans import longhorn_node

    node = longhorn_node(lh_node(evicted_disks=("disk-2",), scheduled={"disk-1": ["r-1"]}))
    assert (node.name, node.ready, node.eviction_requested) == (NODE, True, False)
    assert node.ready_since == datetime(2024, 5, 1, tzinfo=UTC)
    disk = node.disk_at(DISK + "/")
    assert disk is not None and (disk.name, disk.uuid, disk.ready, disk.scheduled_replicas) == (
        "disk-1", UUID, True, frozenset({"r-1"}))
    other = node.disk_at("/mnt/disk2")
    assert other is not None and other.eviction_requested
    empty = longhorn_node({"metadata": {"name": NODE}})  # nothing written yet: not ready, no disks
    assert (empty.ready, empty.disks) == (False, ())


FOUND_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("ready", lh_node(), [ORPHAN_DIR]),
    ("node-down", lh_node(ready=False), []),
    ("node-evicted", lh_node(evict=True), []),
    ("disk-not-ready", lh_node(not_ready_disks=("disk-1",)), []),
    ("disk-evicted", lh_node(evicted_disks=("disk-1",)), []),
    ("other-disk-evicted", lh_node(evicted_disks=("disk-2",)), [ORPHAN_DIR]),
]


@pytest.mark.parametrize(("node_obj", "found"), [c[1:] for c in FOUND_CASES], ids=[c[0] for c in FOUND_CASES])
def test_nothing_new_is_reported_where_longhorn_would_not(node_obj: dict[str, Any], found: list[str]) -> None:
    # longhorn-tests test_disk_evicted / test_node_evicted: no orphan for an evicted disk or node
    assert [o.dir_name for o in find_orphans(NODE, HEALTHY, owned(node_obj=node_obj))] == found


def test_orphans_carry_longhorns_disk_name() -> None:
    got = find_orphans(NODE, HEALTHY, owned(node_obj=lh_node(disks=[("default-disk-83514486", DISK, UUID)])))
    assert [o.disk_name for o in got] == ["default-disk-83514486"]


DEFERRED_CASES: list[tuple[str, RawObject, Ownership, datetime | None, object]] = [
    ("requested-while-up", orphan(deleting=True), owned(), NOW - timedelta(hours=1), REMOVE),
    ("requested-while-longhorn-node-down", orphan(deleting=True),
     owned(node_obj=lh_node(ready_since="2024-05-01T12:30:00Z")), NOW - timedelta(hours=1), OrphanReason.DEFERRED_DELETE),
    ("requested-before-the-agent-ran", orphan(deleting=True), owned(), NOW + timedelta(minutes=1),
     OrphanReason.DEFERRED_DELETE),
]


@pytest.mark.parametrize(("obj", "owners", "since", "expected"), [c[1:] for c in DEFERRED_CASES],
                         ids=[c[0] for c in DEFERRED_CASES])
def test_a_delete_requested_while_the_node_was_away_keeps_the_data(
        obj: RawObject, owners: Ownership, since: datetime | None, expected: object) -> None:
    decision = cleanup_decision(obj, HEALTHY, owners, node=NODE, auto_delete=False, grace=GRACE, now=NOW,
                                agent_since=since)
    if isinstance(expected, RemoveDir):
        assert decision.action == expected
    else:
        assert isinstance(decision.action, DropFinalizer) and decision.action.reason == expected
        assert "requested at 2024-05-01T12:00:00+00:00" in decision.action.message


BRAKE_CASES = [
    ("half-is-not-more-than-half", 5, 10, False),
    ("more-than-half", 6, 10, True),
    ("all-but-below-minimum", 2, 2, False),
    ("all-at-minimum", 3, 3, True),
    ("nothing", 0, 0, False),
]


@pytest.mark.parametrize(("orphans", "dirs", "engaged"), [c[1:] for c in BRAKE_CASES], ids=[c[0] for c in BRAKE_CASES])
def test_mass_orphan_brake(orphans: int, dirs: int, engaged: bool) -> None:
    from kustodian.policy.orphans import mass_orphan_brake

    brake = mass_orphan_brake(orphans, dirs, max_share=0.5, min_orphans=3)
    assert brake.engaged == engaged
    assert bool(brake.message) == engaged


def test_brake_holds_auto_deletion_but_not_a_persons_delete() -> None:
    held = {DISK: "6 of 10 replica directories are orphans"}
    auto = cleanup_decision(orphan(), HEALTHY, owned(), node=NODE, auto_delete=True, grace=GRACE, now=NOW,
                            held_disks=held)
    assert auto.action == NoAction(OrphanReason.MASS_ORPHAN_BRAKE, held[DISK])
    other = cleanup_decision(orphan(), HEALTHY, owned(), node=NODE, auto_delete=True, grace=GRACE, now=NOW,
                             held_disks={"/mnt/disk2": "x"})
    assert isinstance(other.action, DeleteOrphan)
    manual = cleanup_decision(orphan(deleting=True), HEALTHY, owned(), node=NODE, auto_delete=True, grace=GRACE,
                              now=NOW, held_disks=held)
    assert manual.action == REMOVE


AUTO_SETTING_CASES: list[tuple[str, dict[str, str] | None, bool | None, timedelta | None, bool, timedelta]] = [
    ("nothing-anywhere", None, None, None, False, timedelta(seconds=300)),
    ("longhorn-replica-data", {"orphan-resource-auto-deletion": "replica-data",
                               "orphan-resource-auto-deletion-grace-period": "60"}, None, None, True,
     timedelta(seconds=60)),
    ("longhorn-both-types", {"orphan-resource-auto-deletion": "instance; replica-data"}, None, None, True,
     timedelta(seconds=300)),
    ("longhorn-instance-only", {"orphan-resource-auto-deletion": "instance"}, None, None, False,
     timedelta(seconds=300)),
    ("longhorn-empty", {"orphan-resource-auto-deletion": ""}, None, None, False, timedelta(seconds=300)),
    ("longhorn-invalid-type", {"orphan-resource-auto-deletion": "replica-data;bogus"}, None, None, False,
     timedelta(seconds=300)),
    ("longhorn-invalid-grace", {"orphan-resource-auto-deletion": "replica-data",
                                "orphan-resource-auto-deletion-grace-period": "-1"}, None, None, False,
     timedelta(seconds=300)),
    ("longhorn-legacy-setting", {"orphan-auto-deletion": "true"}, None, None, True, timedelta(seconds=300)),
    ("chart-overrides-longhorn-on", {"orphan-resource-auto-deletion": "replica-data"}, False, None, False,
     timedelta(seconds=300)),
    ("chart-overrides-longhorn-off", {"orphan-resource-auto-deletion": ""}, True, timedelta(hours=1), True,
     timedelta(hours=1)),
    ("chart-grace-longhorn-switch", {"orphan-resource-auto-deletion": "replica-data",
                                     "orphan-resource-auto-deletion-grace-period": "60"}, None,
     timedelta(seconds=5), True, timedelta(seconds=5)),
]


@pytest.mark.parametrize(("settings", "enabled", "grace", "want_on", "want_grace"),
                         [c[1:] for c in AUTO_SETTING_CASES], ids=[c[0] for c in AUTO_SETTING_CASES])
def test_auto_deletion_follows_longhorn_unless_overridden(
        settings: dict[str, str] | None, enabled: bool | None, grace: timedelta | None, want_on: bool,
        want_grace: timedelta) -> None:
    from kustodian.policy.orphans import auto_deletion

    got = auto_deletion(settings, override_enabled=enabled, override_grace=grace)
    assert (got.enabled, got.grace) == (want_on, want_grace)
    assert got.source
