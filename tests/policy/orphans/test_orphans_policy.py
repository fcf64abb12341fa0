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
    OrphanedReplicaDir,
    Reason,
    RemoveDir,
    ReplicaDirEntry,
    TrackedReplica,
    Wait,
    cleanup_decision,
    data_cleanability,
    data_cleanable_condition,
    disk_condition,
    find_orphans,
    orphan_name,
    orphan_object,
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
DISK_CASES: list[tuple[str, DiskScan, list[DiskScan], Reason]] = [
    ("healthy", scan(), [OTHER_DISK], Reason.DISK_OK),
    ("unreadable", scan(readable=False), [], Reason.DISK_UNREADABLE),
    ("relative-path", scan(path="longhorn"), [], Reason.DISK_UNREADABLE),
    ("no-expected-uuid", scan(expected=""), [], Reason.DISK_UUID_UNKNOWN),
    ("identity-file-missing", scan(found=None), [], Reason.DISK_UUID_UNKNOWN),
    ("other-disk-mounted-at-path", scan(found="disk-uuid-9"), [], Reason.DISK_UUID_MISMATCH),
    ("fsid-unknown", scan(fsid=None), [], Reason.DISK_FILESYSTEM_UNKNOWN),
    ("bind-mount-duplicate", scan(), [scan(path="/mnt/bind", fsid="fsid:1")], Reason.DISK_FILESYSTEM_SHARED),
    ("self-in-others-is-fine", scan(), [scan(path=DISK + "/")], Reason.DISK_OK),
]


@pytest.mark.parametrize(
    ("the_scan", "others", "reason"), [c[1:] for c in DISK_CASES], ids=[c[0] for c in DISK_CASES]
)
def test_disk_condition(the_scan: DiskScan, others: list[DiskScan], reason: Reason) -> None:
    got = disk_condition(the_scan, others)
    assert (got.ok, got.reason) == (reason == Reason.DISK_OK, reason)


# -- finding orphans ------------------------------------------------------------------

TRACKED = frozenset({TrackedReplica(NODE, UUID, DISK, TRACKED_DIR)})


def test_find_orphans_only_valid_real_untracked_dirs() -> None:
    the_scan = scan(
        entry(ORPHAN_DIR),
        entry(TRACKED_DIR),
        entry("bad_name"),
        entry("pvc-9-aaaaaaaa", is_dir=False),
        entry("pvc-8-bbbbbbbb", is_dir=False, is_symlink=True),
        entry("pvc-7-cccccccc", valid=False),
    )
    assert find_orphans(NODE, [the_scan], TRACKED) == [
        OrphanedReplicaDir(NODE, "disk-1", UUID, DISK, ORPHAN_DIR)
    ]


def test_find_orphans_tracked_anywhere_is_not_an_orphan() -> None:
    # A Replica on another node/disk claiming the same data directory still protects it.
    elsewhere = frozenset({TrackedReplica("node-b", "disk-uuid-7", "/other", ORPHAN_DIR)})
    assert find_orphans(NODE, [scan(entry(ORPHAN_DIR))], elsewhere) == []


def test_find_orphans_nothing_when_replicas_unknown() -> None:
    assert find_orphans(NODE, [scan(entry(ORPHAN_DIR))], None) == []


def test_find_orphans_skips_both_disks_sharing_a_filesystem() -> None:
    a = scan(entry(ORPHAN_DIR))
    b = scan(entry(ORPHAN_DIR), path="/mnt/bind")
    c = scan(entry("other-abcdefgh"), path="/mnt/disk3", fsid="fsid:3", expected="u3", found="u3")
    assert [o.disk_path for o in find_orphans(NODE, [a, b, c], frozenset())] == ["/mnt/disk3"]


def test_find_orphans_skips_swapped_disk() -> None:
    assert find_orphans(NODE, [scan(entry(ORPHAN_DIR), found="disk-uuid-9")], frozenset()) == []


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


DELETE_CASES: list[tuple[str, RawObject, list[DiskScan], frozenset[TrackedReplica] | None, object]] = [
    ("cleanable-removes-dir", orphan(deleting=True), HEALTHY, TRACKED, REMOVE),
    ("keep-data-annotation", orphan(deleting=True, keep=True), HEALTHY, TRACKED, Reason.KEEP_DATA),
    ("other-node", orphan(deleting=True, node="node-b"), HEALTHY, TRACKED, Reason.NODE_UNAVAILABLE),
    (
        "disk-not-configured",
        orphan(deleting=True, disk_path="/mnt/gone"),
        HEALTHY,
        TRACKED,
        Reason.DISK_INVALID,
    ),
    (
        "disk-unreadable",
        orphan(deleting=True),
        [scan(entry(ORPHAN_DIR), readable=False)],
        TRACKED,
        Reason.DISK_INVALID,
    ),
    (
        "disk-swapped-under-same-path",
        orphan(deleting=True),
        [scan(entry(ORPHAN_DIR), found="disk-uuid-9")],
        TRACKED,
        Reason.DISK_CHANGED,
    ),
    (
        "disk-reconfigured-with-new-uuid",
        orphan(deleting=True),
        [scan(entry(ORPHAN_DIR), expected="disk-uuid-9", found="disk-uuid-9")],
        TRACKED,
        Reason.DISK_CHANGED,
    ),
    (
        "disk-shares-filesystem",
        orphan(deleting=True),
        [*HEALTHY, scan(path="/mnt/bind")],
        TRACKED,
        Reason.DISK_INVALID,
    ),
    ("dir-gone", orphan(deleting=True), [scan()], TRACKED, Reason.DATA_MISSING),
    (
        "dir-became-symlink",
        orphan(deleting=True),
        [scan(entry(ORPHAN_DIR, is_dir=False, is_symlink=True))],
        TRACKED,
        Reason.DATA_MISSING,
    ),
    (
        "meta-now-invalid",
        orphan(deleting=True),
        [scan(entry(ORPHAN_DIR, valid=False))],
        TRACKED,
        Reason.DATA_INVALID,
    ),
    ("dir-tracked-again", orphan(deleting=True, dir_name=TRACKED_DIR), HEALTHY, TRACKED, Reason.DATA_TRACKED),
    ("replicas-unknown", orphan(deleting=True), HEALTHY, None, Reason.TRACKING_UNKNOWN),
    ("dotdot-name", orphan(deleting=True, dir_name=".."), HEALTHY, TRACKED, Reason.DATA_NAME_INVALID),
    (
        "nested-name",
        orphan(deleting=True, dir_name="a/b-abcdefgh"),
        HEALTHY,
        TRACKED,
        Reason.DATA_NAME_INVALID,
    ),
    ("missing-parameters", orphan(deleting=True, disk_uuid=""), HEALTHY, TRACKED, Reason.PARAMETERS_INVALID),
]


@pytest.mark.parametrize(
    ("obj", "scans", "tracked", "expected"), [c[1:] for c in DELETE_CASES], ids=[c[0] for c in DELETE_CASES]
)
def test_cleanup_of_deleting_orphan(
    obj: RawObject, scans: list[DiskScan], tracked: frozenset[TrackedReplica] | None, expected: object
) -> None:
    decision = cleanup_decision(obj, scans, tracked, node=NODE, auto_delete=False, grace=GRACE, now=NOW)
    if isinstance(expected, RemoveDir):
        assert decision.action == expected
        assert decision.condition["status"] == "True"
    else:
        assert isinstance(decision.action, DropFinalizer)
        assert decision.action.reason == expected
    if expected not in (Reason.KEEP_DATA,) and not isinstance(expected, RemoveDir):
        assert decision.condition["status"] == "False"
        assert decision.condition["reason"] == expected


def test_deleting_orphan_without_our_finalizer_is_left_alone() -> None:
    decision = cleanup_decision(
        orphan(deleting=True, finalizer=False),
        HEALTHY,
        TRACKED,
        node=NODE,
        auto_delete=False,
        grace=GRACE,
        now=NOW,
    )
    assert decision.action == NoAction(Reason.NO_FINALIZER)


AUTO_CASES: list[tuple[str, RawObject, list[DiskScan], bool, object]] = [
    ("disabled", orphan(), HEALTHY, False, NoAction(Reason.AUTO_DELETE_DISABLED)),
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
        Reason.DISK_INVALID,
    ),
    ("keep-data-is-never-auto-deleted", orphan(keep=True), HEALTHY, True, NoAction(Reason.KEEP_DATA)),
]


@pytest.mark.parametrize(
    ("obj", "scans", "auto", "expected"), [c[1:] for c in AUTO_CASES], ids=[c[0] for c in AUTO_CASES]
)
def test_auto_deletion(obj: RawObject, scans: list[DiskScan], auto: bool, expected: object) -> None:
    decision = cleanup_decision(obj, scans, TRACKED, node=NODE, auto_delete=auto, grace=GRACE, now=NOW)
    if isinstance(expected, Reason):
        assert isinstance(decision.action, NoAction)
        assert decision.action.reason == expected
    else:
        assert decision.action == expected


def test_condition_keeps_transition_time_until_status_flips() -> None:
    cleanable = data_cleanability(orphan(), HEALTHY, TRACKED, node=NODE)
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
    blocked = data_cleanability(orphan(), [scan()], TRACKED, node=NODE)
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
    decision = cleanup_decision(obj, HEALTHY, TRACKED, node=NODE, auto_delete=False, grace=GRACE, now=NOW)
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
    got = sync_orphans(NODE, [the_scan], TRACKED, existing)
    assert [o.dir_name for o in got.create] == [new_dir]
    assert {(p.name, p.reason) for p in got.prune} == {
        (orphan_name(NODE, UUID, TRACKED_DIR), Reason.DATA_TRACKED),
        (orphan_name(NODE, UUID, "pvc-gone-bbbbbbbb"), Reason.DATA_MISSING),
    }


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
    got = sync_orphans(NODE, scans, TRACKED, [orphan(dir_name="pvc-gone-bbbbbbbb")])
    assert got.prune == ()


def test_sync_never_prunes_when_replicas_unknown() -> None:
    got = sync_orphans(NODE, [scan()], None, [orphan()])
    assert (got.create, got.prune) == ((), ())
