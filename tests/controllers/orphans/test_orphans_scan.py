"""The disk scanner and remover, on a real filesystem under ``tmp_path``.

These tests may run as root, where ``chmod 000`` does not stop reads: files are made
unreadable in ways that fail for root too (a directory or a FIFO where a file is
expected, bytes that are not UTF-8 JSON).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kustodian.controllers.orphans.scan import (
    RemovalOutcome,
    probe_replica_dir,
    remove_replica_dir,
    scan_disk,
)
from kustodian.policy.orphans import (
    DiskScan,
    DropFinalizer,
    OrphanReason,
    Ownership,
    RemoveDir,
    TrackedReplica,
    cleanup_decision,
    disk_condition,
    find_orphans,
    orphan_object,
)
from tests.longhorn import Disk, owned_by

NODE = "node-a"
UUID = "disk-uuid-1"
ORPHAN = "pvc-1111-aaaaaaaa"
TRACKED = "pvc-2222-bbbbbbbb"
NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
META = json.dumps(
    {
        "Size": 1073741824,
        "Head": "volume-head-000.img",
        "Dirty": False,
        "Rebuilding": False,
        "SectorSize": 512,
    }
).encode()


def settled_clock() -> int:
    """A clock far enough ahead that every directory looks settled."""
    return int((datetime.now(UTC) + timedelta(minutes=5)).timestamp() * 1e9)


def racy_clock() -> int:
    return 0


def make_disk(root: Path, name: str = "disk", uuid: str = UUID) -> Path:
    disk = root / name
    (disk / "replicas").mkdir(parents=True)
    (disk / "longhorn-disk.cfg").write_text(json.dumps({"diskName": name, "diskUUID": uuid}))
    return disk


def make_replica(disk: Path, name: str, meta: bytes = META) -> Path:
    replica = disk / "replicas" / name
    replica.mkdir()
    (replica / "volume.meta").write_bytes(meta)
    (replica / "volume-head-000.img").write_bytes(b"\0" * 4096)
    return replica


def scan(disk: Path, uuid: str = UUID, previous: DiskScan | None = None, **kw: Any) -> DiskScan:
    return scan_disk(str(disk), disk.name, uuid, previous, **kw)


def own(*scans: DiskScan, tracked: frozenset[TrackedReplica] = frozenset()) -> Ownership:
    """Longhorn's view: a Ready Longhorn Node whose Ready disks are the scanned ones."""
    return owned_by(NODE, [Disk(s.disk_name, s.disk_path, s.expected_uuid) for s in scans], tracked)


def orphans(*scans: DiskScan, tracked: frozenset[TrackedReplica] = frozenset()) -> list[str]:
    return [o.dir_name for o in find_orphans(NODE, list(scans), own(*scans, tracked=tracked))]


# -- scanning -------------------------------------------------------------------------


def test_scan_reports_identity_and_entries(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    make_replica(disk, ORPHAN)
    (disk / "replicas" / "not-a-replica").mkdir()
    (disk / "replicas" / "stray-file-aaaaaaaa").write_text("x")
    got = scan(disk)
    assert (got.readable, got.found_uuid, got.error) == (True, UUID, "")
    assert got.fsid
    assert disk_condition(got, [got]).ok
    assert got.entries[ORPHAN].has_valid_meta
    assert not got.entries["not-a-replica"].has_valid_meta
    assert not got.entries["stray-file-aaaaaaaa"].is_dir
    assert orphans(got) == [ORPHAN]


def test_disk_without_replicas_dir_is_readable_and_empty(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    (disk / "replicas").rmdir()
    got = scan(disk)
    assert (got.readable, dict(got.entries)) == (True, {})


@pytest.mark.parametrize("kind", ["missing", "file", "nul-byte"])
def test_unusable_disk_path_is_reported_not_raised(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "disk"
    if kind == "file":
        path.write_text("x")
    got = scan_disk(str(path) + ("\0" if kind == "nul-byte" else ""), "disk", UUID)
    assert not got.readable
    assert got.error
    assert not disk_condition(got, [got]).ok


@pytest.mark.parametrize("kind", ["symlink-outside", "file"])
def test_replicas_that_is_not_a_real_directory_makes_disk_unreadable(tmp_path: Path, kind: str) -> None:
    disk = make_disk(tmp_path)
    (disk / "replicas").rmdir()
    outside = make_disk(tmp_path, "outside")
    make_replica(outside, ORPHAN)
    if kind == "file":
        (disk / "replicas").write_text("x")
    else:
        (disk / "replicas").symlink_to(outside / "replicas")
    got = scan(disk)
    assert not got.readable
    assert orphans(got) == []
    result = remove_replica_dir(str(disk), ORPHAN, UUID)
    assert result.outcome == RemovalOutcome.REFUSED
    assert (outside / "replicas" / ORPHAN / "volume.meta").exists()


def unreadable_meta(path: Path, how: str) -> None:
    meta = path / "volume.meta"
    meta.unlink()
    if how == "directory":
        meta.mkdir()
    elif how == "fifo":
        os.mkfifo(meta)
    elif how == "symlink":
        target = path.parent.parent / "elsewhere.meta"
        target.write_bytes(META)
        meta.symlink_to(target)
    elif how == "invalid-utf8":
        meta.write_bytes(b'{"Size": 1, "Head": "\xff\xfe"}')
    elif how == "invalid-json":
        meta.write_bytes(META[:-3])
    elif how == "too-large":
        meta.write_bytes(META + b" " * (64 * 1024))
    elif how == "chmod-000":
        meta.write_bytes(META)
        if os.geteuid() == 0:
            # root reads through mode 000: make it fail in a way that binds root too.
            meta.unlink()
            meta.mkdir()
        else:
            meta.chmod(0)
    elif how == "missing":
        pass


@pytest.mark.parametrize(
    "how",
    ["directory", "fifo", "symlink", "invalid-utf8", "invalid-json", "too-large", "chmod-000", "missing"],
)
def test_replica_with_unreadable_meta_is_never_an_orphan(tmp_path: Path, how: str) -> None:
    disk = make_disk(tmp_path)
    unreadable_meta(make_replica(disk, ORPHAN), how)
    got = scan(disk)  # a FIFO must not hang this
    assert got.readable
    entry = got.entries[ORPHAN]
    assert (entry.is_dir, entry.has_valid_meta) == (True, False)
    assert entry.error
    assert orphans(got) == []


@pytest.mark.parametrize("how", ["directory", "fifo", "invalid-json", "missing", "no-uuid"])
def test_unreadable_disk_identity_skips_the_disk(tmp_path: Path, how: str) -> None:
    disk = make_disk(tmp_path)
    make_replica(disk, ORPHAN)
    cfg = disk / "longhorn-disk.cfg"
    cfg.unlink()
    if how == "directory":
        cfg.mkdir()
    elif how == "fifo":
        os.mkfifo(cfg)
    elif how == "invalid-json":
        cfg.write_text("{")
    elif how == "no-uuid":
        cfg.write_text(json.dumps({"diskName": "disk"}))
    got = scan(disk)
    assert got.found_uuid is None
    assert disk_condition(got, [got]).reason == OrphanReason.DISK_UUID_UNKNOWN
    assert orphans(got) == []
    assert remove_replica_dir(str(disk), ORPHAN, UUID).outcome == RemovalOutcome.REFUSED
    assert (disk / "replicas" / ORPHAN / "volume.meta").exists()


def test_symlinks_in_replicas_are_never_orphans(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "volume.meta").write_bytes(META)
    (disk / "replicas" / "pvc-3333-cccccccc").symlink_to(outside)
    (disk / "replicas" / "pvc-4444-dddddddd").symlink_to(tmp_path / "dangling")
    got = scan(disk)
    assert got.entries["pvc-3333-cccccccc"].is_symlink
    assert not got.entries["pvc-3333-cccccccc"].has_valid_meta
    assert orphans(got) == []
    result = remove_replica_dir(str(disk), "pvc-3333-cccccccc", UUID)
    assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "NotADirectory")
    assert (outside / "volume.meta").read_bytes() == META
    assert (disk / "replicas" / "pvc-3333-cccccccc").is_symlink()


def test_two_disk_paths_on_one_filesystem_only_the_later_is_skipped(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    make_replica(disk, ORPHAN)
    alias = tmp_path / "alias"  # what a bind mount of the same disk looks like to us
    alias.symlink_to(disk)
    first, second = scan(disk), scan(alias)
    assert first.fsid == second.fsid
    assert disk_condition(first, [first, second]).ok
    assert disk_condition(second, [first, second]).reason == OrphanReason.DISK_FILESYSTEM_SHARED
    found = find_orphans(NODE, [first, second], own(first, second))
    assert [(o.disk_path, o.dir_name) for o in found] == [(str(disk), ORPHAN)]


# -- rescans --------------------------------------------------------------------------


@pytest.mark.parametrize("clock", [settled_clock, racy_clock], ids=["settled-fingerprint", "racy-names"])
def test_unchanged_rescan_reuses_entries_without_reading_meta(tmp_path: Path, clock: Any) -> None:
    disk = make_disk(tmp_path)
    replica = make_replica(disk, ORPHAN)
    first = scan(disk, clock_ns=clock)
    assert (first.listing_token is not None) == (clock is settled_clock)
    # Break volume.meta in place (the replicas listing is untouched): a rescan that
    # re-read it would notice.
    (replica / "volume.meta").write_bytes(b"garbage")
    again = scan(disk, previous=first, clock_ns=clock)
    assert again.entries is first.entries
    assert again.entries[ORPHAN].has_valid_meta


def test_changed_listing_reads_only_new_and_previously_invalid_entries(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    kept = make_replica(disk, ORPHAN)
    pending = make_replica(disk, "pvc-5555-eeeeeeee", meta=b"")  # being created: no meta yet
    first = scan(disk, clock_ns=settled_clock)
    assert not first.entries["pvc-5555-eeeeeeee"].has_valid_meta
    (kept / "volume.meta").write_bytes(b"garbage")  # not re-read: reused as valid
    (pending / "volume.meta").write_bytes(META)  # re-read: it was invalid
    make_replica(disk, "pvc-6666-ffffffff")
    again = scan(disk, previous=first, clock_ns=settled_clock)
    assert again.entries is not first.entries
    assert again.entries[ORPHAN] is first.entries[ORPHAN]
    assert again.entries["pvc-5555-eeeeeeee"].has_valid_meta
    assert again.entries["pvc-6666-ffffffff"].has_valid_meta


def test_removed_dir_disappears_from_rescan(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    make_replica(disk, ORPHAN)
    first = scan(disk, clock_ns=settled_clock)
    assert remove_replica_dir(str(disk), ORPHAN, UUID).outcome == RemovalOutcome.REMOVED
    assert ORPHAN not in scan(disk, previous=first, clock_ns=settled_clock).entries


def test_disk_swapped_under_same_path_is_rescanned_and_never_cleaned(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    make_replica(disk, ORPHAN)
    first = scan(disk, clock_ns=settled_clock)
    orphan = orphan_object(find_orphans(NODE, [first], own(first))[0], namespace="kustodian")
    orphan["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    # Another disk is mounted at the same path, carrying a same-named directory.
    os.rename(disk, tmp_path / "old-disk")
    other = make_disk(tmp_path, "disk", uuid="disk-uuid-2")
    make_replica(other, ORPHAN)
    now = scan(disk, previous=first, clock_ns=settled_clock)
    assert now.entries is not first.entries
    assert disk_condition(now, [now]).reason == OrphanReason.DISK_UUID_MISMATCH
    decision = cleanup_decision(
        orphan, [now], own(first), node=NODE, auto_delete=False, grace=timedelta(0), now=NOW
    )
    assert isinstance(decision.action, DropFinalizer)
    assert decision.action.reason == OrphanReason.DISK_CHANGED
    # Even a caller that skipped the decision is stopped by the re-verification.
    result = remove_replica_dir(str(disk), ORPHAN, UUID)
    assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "DiskUUIDMismatch")
    assert (other / "replicas" / ORPHAN / "volume.meta").exists()


# -- decide, then remove --------------------------------------------------------------


def deleting_orphan(disk_scan: DiskScan, dir_name: str) -> dict[str, Any]:
    found = [o for o in find_orphans(NODE, [disk_scan], own(disk_scan)) if o.dir_name == dir_name]
    obj = orphan_object(found[0], namespace="kustodian")
    obj["metadata"].update(uid="u1", deletionTimestamp="2024-05-01T12:00:00Z")
    return obj


def test_orphan_removed_and_everything_else_survives(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    orphan_dir = make_replica(disk, ORPHAN)
    tracked_dir = make_replica(disk, TRACKED)
    (tracked_dir / "snapshots").mkdir()
    (tracked_dir / "snapshots" / "snap.img").write_bytes(b"keep")
    (disk / "replicas" / "README").write_text("not ours")
    (disk / "replicas" / "not-a-replica").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data").write_bytes(b"precious")
    # Things inside the orphan that point outside it: only the links may go.
    (orphan_dir / "link-out").symlink_to(outside)
    (orphan_dir / "nested").mkdir()
    (orphan_dir / "nested" / "link-file").symlink_to(outside / "data")
    os.link(outside / "data", orphan_dir / "hardlink")
    tracked = frozenset({TrackedReplica(NODE, UUID, str(disk), TRACKED)})

    scanned = scan(disk)
    assert orphans(scanned, tracked=tracked) == [ORPHAN]
    decision = cleanup_decision(
        deleting_orphan(scanned, ORPHAN),
        [scan(disk)],
        own(scanned, tracked=tracked),
        node=NODE,
        auto_delete=False,
        grace=timedelta(0),
        now=NOW,
    )
    assert isinstance(decision.action, RemoveDir)
    action = decision.action
    result = remove_replica_dir(action.disk_path, action.dir_name, action.expected_uuid)
    assert (result.outcome, result.gone, result.path) == (RemovalOutcome.REMOVED, True, str(orphan_dir))
    assert not orphan_dir.exists()
    assert (outside / "data").read_bytes() == b"precious"
    assert (tracked_dir / "snapshots" / "snap.img").read_bytes() == b"keep"
    assert (disk / "replicas" / "README").exists()
    assert (disk / "replicas" / "not-a-replica").is_dir()
    again = remove_replica_dir(action.disk_path, action.dir_name, action.expected_uuid)
    assert (again.outcome, again.gone) == (RemovalOutcome.ALREADY_ABSENT, True)


def test_dir_tracked_between_scan_and_delete_is_kept(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    make_replica(disk, ORPHAN)
    obj = deleting_orphan(scan(disk), ORPHAN)
    # A Replica object claims the directory after the Orphan was reported.
    tracked_now = frozenset({TrackedReplica(NODE, UUID, str(disk), ORPHAN)})
    now = scan(disk)
    decision = cleanup_decision(
        obj, [now], own(now, tracked=tracked_now), node=NODE, auto_delete=False, grace=timedelta(0), now=NOW
    )
    assert isinstance(decision.action, DropFinalizer)
    assert decision.action.reason == OrphanReason.DATA_TRACKED
    assert (disk / "replicas" / ORPHAN / "volume.meta").exists()


@pytest.mark.parametrize(
    "dir_name",
    [
        "..",
        ".",
        "",
        "../disk-aaaaaaaa",
        "a-aaaaaaaa/../../x",
        "/etc-aaaaaaaa",
        "replicas",
        ORPHAN + "/volume.meta",
    ],
)
def test_removal_refuses_unsafe_names(tmp_path: Path, dir_name: str) -> None:
    disk = make_disk(tmp_path)
    make_replica(disk, ORPHAN)
    result = remove_replica_dir(str(disk), dir_name, UUID)
    assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "InvalidName")
    assert (disk / "replicas" / ORPHAN / "volume.meta").exists()
    assert (disk / "longhorn-disk.cfg").exists()


def test_removal_refuses_a_file(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    (disk / "replicas" / ORPHAN).write_text("x")
    result = remove_replica_dir(str(disk), ORPHAN, UUID)
    assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "NotADirectory")
    assert (disk / "replicas" / ORPHAN).exists()


def test_interrupted_removal_keeps_volume_meta_for_the_next_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = make_disk(tmp_path)
    replica = make_replica(disk, ORPHAN)
    real_unlink = os.unlink

    def failing_unlink(path: Any, *, dir_fd: int | None = None) -> None:
        if path == "volume-head-000.img":
            raise PermissionError(13, "Permission denied", path)
        real_unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", failing_unlink)
    result = remove_replica_dir(str(disk), ORPHAN, UUID)
    monkeypatch.undo()
    assert (result.outcome, result.gone) == (RemovalOutcome.FAILED, False)
    assert (replica / "volume.meta").exists()
    assert orphans(scan(disk)) == [ORPHAN]
    assert remove_replica_dir(str(disk), ORPHAN, UUID).outcome == RemovalOutcome.REMOVED


def test_volume_meta_written_after_a_settled_scan_is_read_again(tmp_path: Path) -> None:
    # Writing volume.meta inside the directory leaves replicas/ untouched, so the cheap
    # "listing unchanged" path must still look at directories that had no valid meta.
    disk = make_disk(tmp_path)
    pending = make_replica(disk, ORPHAN, meta=b"")
    first = scan(disk, clock_ns=settled_clock)
    assert first.listing_token is not None
    assert not first.entries[ORPHAN].has_valid_meta
    assert orphans(first) == []
    (pending / "volume.meta").write_bytes(META)
    again = scan(disk, previous=first, clock_ns=settled_clock)
    assert again.listing_token == first.listing_token  # the listing really was unchanged
    assert again.entries[ORPHAN].has_valid_meta
    assert orphans(again) == [ORPHAN]
    # and nothing is re-read once every entry is proven: the mapping is reused as is
    assert scan(disk, previous=again, clock_ns=settled_clock).entries is again.entries


def test_an_unchanged_disk_reads_only_the_unproven_directories_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A disk of a million replicas is rescanned every few seconds: the cheap path reads the
    # volume.meta of the directories that had none (named by the scan that listed them), and
    # opens nothing of the proven ones; one that stays invalid is read again each time.
    disk = make_disk(tmp_path)
    for i in range(50):
        make_replica(disk, f"pvc-{i:04d}-aaaaaaaa")
    make_replica(disk, ORPHAN, meta=b"")
    make_replica(disk, TRACKED, meta=b"{")
    first = scan(disk, clock_ns=settled_clock)
    assert first.unproven == frozenset({ORPHAN, TRACKED})
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        if str(path).endswith("volume.meta"):
            opened.append(str(path))
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", counting_open)
    (disk / "replicas" / ORPHAN / "volume.meta").write_bytes(META)
    again = scan(disk, previous=first, clock_ns=settled_clock)
    assert again.listing_token == first.listing_token
    assert sorted(opened) == sorted(f"{name}/volume.meta" for name in (ORPHAN, TRACKED))
    assert again.entries[ORPHAN].has_valid_meta and not again.entries[TRACKED].has_valid_meta
    assert again.unproven == frozenset({TRACKED})
    opened.clear()
    scan(disk, previous=again, clock_ns=settled_clock)
    assert opened == [f"{TRACKED}/volume.meta"]


# -- mounts inside an orphan ----------------------------------------------------------


def bind_mount(source: Path, target: Path) -> None:
    """``mount --bind``; needs CAP_SYS_ADMIN (the node agent's tests run as root in CI)."""
    import subprocess

    proc = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        if os.geteuid() != 0:
            pytest.skip(f"mount --bind needs root (euid {os.geteuid()}): {proc.stderr.strip()}")
        pytest.fail(f"mount --bind {source} {target} failed as root: {proc.stderr.strip()}")


def unmount(target: Path) -> None:
    import subprocess

    subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


def test_bind_mount_from_the_same_disk_inside_an_orphan_survives_removal(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    orphan_dir = make_replica(disk, ORPHAN)
    live = make_replica(disk, TRACKED)  # a live replica of the same filesystem
    (orphan_dir / "mnt").mkdir()
    bind_mount(live, orphan_dir / "mnt")
    try:
        assert os.stat(orphan_dir / "mnt").st_dev == os.stat(orphan_dir).st_dev  # st_dev cannot tell
        result = remove_replica_dir(str(disk), ORPHAN, UUID)
        assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "MountInside")
        assert str(orphan_dir / "mnt") in result.message
        assert (live / "volume.meta").read_bytes() == META
        assert (live / "volume-head-000.img").exists()
        assert (orphan_dir / "volume.meta").exists()  # nothing was touched
    finally:
        unmount(orphan_dir / "mnt")
    assert (live / "volume.meta").read_bytes() == META
    assert remove_replica_dir(str(disk), ORPHAN, UUID).outcome == RemovalOutcome.REMOVED
    assert (live / "volume.meta").read_bytes() == META


def test_mount_appearing_during_removal_is_not_crossed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The mountinfo pre-check passed (the mount came a moment later): the walk itself
    # compares mount IDs and stops at the mount point.
    from kustodian.controllers.orphans import scan as scan_module

    disk = make_disk(tmp_path)
    orphan_dir = make_replica(disk, ORPHAN)
    live = make_replica(disk, TRACKED)
    (orphan_dir / "deep").mkdir()
    (orphan_dir / "deep" / "mnt").mkdir()
    monkeypatch.setattr(scan_module, "read_mountinfo", lambda: "")
    bind_mount(live, orphan_dir / "deep" / "mnt")
    try:
        result = remove_replica_dir(str(disk), ORPHAN, UUID)
        assert (result.outcome, result.reason) == (RemovalOutcome.FAILED, "Unsafe")
        assert "a mount point" in result.message
        assert (live / "volume.meta").read_bytes() == META
        assert (live / "volume-head-000.img").exists()
        assert (orphan_dir / "volume.meta").exists()  # removed last: still recognisable
    finally:
        unmount(orphan_dir / "deep" / "mnt")


def test_bind_mount_on_the_orphan_dir_itself_is_refused(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    make_replica(disk, ORPHAN)
    live = make_replica(disk, TRACKED)
    target = disk / "replicas" / ORPHAN
    bind_mount(live, target)
    try:
        result = remove_replica_dir(str(disk), ORPHAN, UUID)
        assert result.outcome == RemovalOutcome.REFUSED
        assert result.reason in ("MountPoint", "MountInside")
        assert (live / "volume.meta").read_bytes() == META
    finally:
        unmount(target)


def test_bind_mounted_file_inside_an_orphan_is_not_unlinked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kustodian.controllers.orphans import scan as scan_module

    disk = make_disk(tmp_path)
    orphan_dir = make_replica(disk, ORPHAN)
    live = make_replica(disk, TRACKED)
    (orphan_dir / "zz-file").write_bytes(b"")
    monkeypatch.setattr(scan_module, "read_mountinfo", lambda: "")  # only the walk can see it
    bind_mount(live / "volume.meta", orphan_dir / "zz-file")
    try:
        result = remove_replica_dir(str(disk), ORPHAN, UUID)
        assert result.outcome == RemovalOutcome.FAILED
        assert "zz-file: a mount point" in result.message
        assert (live / "volume.meta").read_bytes() == META
    finally:
        unmount(orphan_dir / "zz-file")


# -- a fresh look at one directory, and the removal's own re-checks (issue 34) ---------------


def test_probe_reads_volume_meta_again_and_tells_how_long_the_directory_is_idle(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    replica = make_replica(disk, "pvc-1111-aaaaaaaa")
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).timestamp()
    for path in (replica / "volume.meta", replica / "volume-head-000.img", replica):
        os.utime(path, (hour_ago, hour_ago))
    idle = probe_replica_dir(str(disk), "pvc-1111-aaaaaaaa")
    assert idle.exists and not idle.meta_error and not idle.error
    assert idle.idle is not None and 3500 < idle.idle < 3700
    with (replica / "volume-head-000.img").open("r+b") as head:  # what an engine writing the replica does
        head.write(b"data")
    written = probe_replica_dir(str(disk), "pvc-1111-aaaaaaaa")
    assert written.idle is not None and written.idle < 60
    (replica / "volume.meta").write_bytes(b"{corrupt")
    assert "not a valid replica meta file" in probe_replica_dir(str(disk), "pvc-1111-aaaaaaaa").meta_error
    assert not probe_replica_dir(str(disk), "pvc-2222-bbbbbbbb").exists
    assert probe_replica_dir(str(disk), "../escape").error


def test_removal_refuses_a_recently_written_directory_and_a_meta_corrupted_since_the_scan(tmp_path: Path) -> None:
    disk = make_disk(tmp_path)
    replica = make_replica(disk, "pvc-1111-aaaaaaaa")
    refused = remove_replica_dir(str(disk), "pvc-1111-aaaaaaaa", UUID, quiet_for=600)
    assert (refused.outcome, refused.reason) == (RemovalOutcome.REFUSED, "RecentlyWritten")
    (replica / "volume.meta").write_bytes(b"\0" * 10)
    refused = remove_replica_dir(str(disk), "pvc-1111-aaaaaaaa", UUID)
    assert (refused.outcome, refused.reason) == (RemovalOutcome.REFUSED, "MetaInvalid")
    assert (replica / "volume-head-000.img").exists()
    (replica / "volume.meta").write_bytes(META)
    assert remove_replica_dir(str(disk), "pvc-1111-aaaaaaaa", UUID).outcome == RemovalOutcome.REMOVED
    assert not replica.exists()
