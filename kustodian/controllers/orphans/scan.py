"""The node agent's only contact with Longhorn disks: look (scan) and, when told, remove.

Scanning feeds :class:`policy.orphans.DiskScan`; every decision about what the scan
means is in :mod:`policy.orphans`.  Two rules shape this module:

* **Never raise, never follow.**  A disk that cannot be read is a fact to report
  (``readable=False``, ``error``), not an exception.  Everything below the disk path
  is opened relative to a directory file descriptor with ``O_NOFOLLOW``, so a
  symlink planted in ``replicas/`` (or ``replicas`` itself being a symlink) is seen
  as what it is and never leads outside.  ``volume.meta`` is opened ``O_NONBLOCK`` and
  must be a regular file, so a FIFO cannot hang the scan.
* **Cheap when nothing changed.**  Disks hold tens of thousands of replica
  directories and are rescanned every few seconds.  Listing 100k names alone costs
  ~45 ms (getdents), so an unchanged disk is recognised without listing: when the
  ``replicas`` directory's inode, mtime, ctime, link count and size equal those
  recorded last time, and it had already been unchanged for a second when last
  listed (the "racy git" rule: a change in the same clock tick as the listing could
  otherwise keep the timestamp), the previous entries are reused.  Otherwise, when
  its mtime and its list of names are unchanged, the previous entries are reused as
  well; when the listing changed, only new names, and names that had no valid
  ``volume.meta`` last time, are read.  No ``volume.meta`` is opened on an unchanged
  disk.  Pass ``previous=None`` now and then to force a full re-read.

Removal re-verifies everything just before acting (disk UUID in
``longhorn-disk.cfg``, a real directory with a valid name, on the disk's own
filesystem), works only through file descriptors so that nothing can be swapped
under it between check and delete, never crosses into another filesystem, another
mount of the same filesystem (a bind mount: same ``st_dev``, other mount ID, see
:mod:`controllers.orphans.mounts`) or through a symlink, refuses a directory below
which a mount point is listed, and unlinks ``volume.meta`` last so that an interrupted removal
leaves a directory the next scan still recognises as the same orphan.  Right before it
deletes, it reads ``volume.meta`` again (a directory whose meta became invalid since the
report is not a replica it may remove) and, given ``quiet_for``, refuses a directory in
which anything was modified more recently than that: live data.

:func:`probe_replica_dir` looks at one directory now for the decision (the cached scan
never re-reads a ``volume.meta`` it found valid, nor looks at file times).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from kustodian.controllers.orphans.mounts import mount_id_at, mount_id_of_fd, mounts_below, read_mountinfo
from kustodian.policy.orphans import (
    DISK_CONFIG_FILE,
    MAX_VOLUME_META_BYTES,
    REPLICAS_DIR,
    VOLUME_META_FILE,
    DirProbe,
    DiskScan,
    ReplicaDirEntry,
    is_replica_dir_name,
    parse_volume_meta,
    safe_target,
)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_MAX_DISK_CONFIG_BYTES = 64 * 1024
# How long the replicas directory must have been unchanged before its stat
# fingerprint alone may vouch for its listing (a few clock ticks would do).
_SETTLE_NS = 1_000_000_000
# Longhorn replica directories are flat; anything deeper than this is not one.
_MAX_REMOVE_DEPTH = 32


def _describe(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _read_small_file(name: str, dir_fd: int, limit: int) -> bytes:
    """Read a regular file ``name`` under ``dir_fd`` without following a symlink or blocking."""
    fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit} bytes")
    return data


def _read_disk_uuid(disk_fd: int) -> tuple[str | None, str]:
    """The ``diskUUID`` in ``longhorn-disk.cfg``, or ``None`` and why not."""
    try:
        raw = _read_small_file(DISK_CONFIG_FILE, disk_fd, _MAX_DISK_CONFIG_BYTES)
    except OSError as exc:
        return None, f"{DISK_CONFIG_FILE}: {_describe(exc)}"
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None, f"{DISK_CONFIG_FILE}: not valid JSON"
    disk_uuid = doc.get("diskUUID") if isinstance(doc, dict) else None
    if not isinstance(disk_uuid, str) or not disk_uuid:
        return None, f"{DISK_CONFIG_FILE}: no diskUUID"
    return disk_uuid, ""


def _fsid(disk_fd: int, st_dev: int) -> str:
    """The filesystem id (``statvfs.f_fsid``), or the device number where it is 0."""
    try:
        fsid = os.statvfs(disk_fd).f_fsid
    except OSError:
        fsid = 0
    return f"fsid:{fsid:x}" if fsid else f"dev:{st_dev:x}"


def _read_entry(replicas_fd: int, name: str) -> ReplicaDirEntry:
    try:
        raw = _read_small_file(f"{name}/{VOLUME_META_FILE}", replicas_fd, MAX_VOLUME_META_BYTES)
    except OSError as exc:
        return ReplicaDirEntry(name, True, False, False, f"{VOLUME_META_FILE}: {_describe(exc)}")
    if parse_volume_meta(raw) is None:
        return ReplicaDirEntry(name, True, False, False, f"{VOLUME_META_FILE}: not a valid replica meta file")
    return ReplicaDirEntry(name, True, False, True)


def _list_entries(replicas_fd: int, previous: Mapping[str, ReplicaDirEntry]) -> dict[str, ReplicaDirEntry]:
    entries: dict[str, ReplicaDirEntry] = {}
    with os.scandir(replicas_fd) as it:
        for dirent in it:
            name = dirent.name
            try:
                is_symlink = dirent.is_symlink()
                is_dir = not is_symlink and dirent.is_dir(follow_symlinks=False)
            except OSError as exc:
                entries[name] = ReplicaDirEntry(name, False, False, False, _describe(exc))
                continue
            if not is_dir or not is_replica_dir_name(name):
                # Never a replica: no need to look inside.
                entries[name] = ReplicaDirEntry(name, is_dir, is_symlink)
                continue
            before = previous.get(name)
            if before is not None and before.is_dir and not before.is_symlink and before.has_valid_meta:
                entries[name] = before
            else:
                entries[name] = _read_entry(replicas_fd, name)
    return entries


def _is_unproven(name: str, entry: ReplicaDirEntry) -> bool:
    """A replica directory whose ``volume.meta`` was missing or invalid when last read."""
    return entry.is_dir and not entry.is_symlink and not entry.has_valid_meta and is_replica_dir_name(name)


def _unproven(entries: Mapping[str, ReplicaDirEntry]) -> frozenset[str]:
    return frozenset(name for name, entry in entries.items() if _is_unproven(name, entry))


def _recheck_unproven(
    replicas_fd: int, entries: Mapping[str, ReplicaDirEntry], unproven: frozenset[str] | None
) -> tuple[Mapping[str, ReplicaDirEntry], frozenset[str]]:
    """Read ``volume.meta`` again where it was missing or invalid last time.

    Writing ``volume.meta`` inside a replica directory does not touch ``replicas/``, so an
    unchanged listing says nothing about it: a directory scanned a moment before Longhorn
    (or a restore) wrote its ``volume.meta`` must not stay "not a replica" for good.
    Those are few, and named by ``unproven`` (recorded by the scan that listed them), so an
    unchanged disk of a million directories costs a few reads, not a walk of every entry;
    the mapping is returned as is (same object) when none changed.
    """
    if unproven is None:
        unproven = _unproven(entries)
    changed: dict[str, ReplicaDirEntry] = {}
    for name in unproven:
        entry = entries[name]
        again = _read_entry(replicas_fd, name)
        if again != entry:
            changed[name] = again
    if not changed:
        return entries, unproven
    proven = frozenset(name for name, entry in changed.items() if entry.has_valid_meta)
    return {**entries, **changed}, unproven - proven


def scan_disk(
    disk_path: str,
    disk_name: str,
    expected_uuid: str,
    previous: DiskScan | None = None,
    *,
    clock_ns: Callable[[], int] = time.time_ns,
) -> DiskScan:
    """Look at one Longhorn disk.  Never raises for anything the disk does.

    ``previous`` is this disk's last scan (reused where nothing changed); ``clock_ns``
    the wall clock, injectable so tests can tell a settled directory from a racy one.
    """
    try:
        disk_fd = os.open(disk_path, _DIR_FLAGS)
    except (OSError, ValueError) as exc:
        why = _describe(exc) if isinstance(exc, OSError) else str(exc)
        return DiskScan(disk_path, disk_name, expected_uuid, error=f"open {disk_path}: {why}")
    try:
        return _scan_open_disk(disk_fd, DiskScan(disk_path, disk_name, expected_uuid), previous, clock_ns)
    except OSError as exc:
        return DiskScan(disk_path, disk_name, expected_uuid, error=f"scan {disk_path}: {_describe(exc)}")
    finally:
        os.close(disk_fd)


def _scan_open_disk(
    disk_fd: int, base: DiskScan, previous: DiskScan | None, clock_ns: Callable[[], int]
) -> DiskScan:
    disk_st = os.fstat(disk_fd)
    fsid = _fsid(disk_fd, disk_st.st_dev)
    found_uuid, uuid_error = _read_disk_uuid(disk_fd)
    ident = replace(base, found_uuid=found_uuid, fsid=fsid, error=uuid_error)
    try:
        replicas_fd = os.open(REPLICAS_DIR, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=disk_fd)
    except FileNotFoundError:
        return replace(ident, readable=True)
    except OSError as exc:
        # ELOOP: replicas is a symlink; ENOTDIR: a file; EACCES: unreadable.
        return replace(ident, error=f"{REPLICAS_DIR}: {_describe(exc)}")
    try:
        started_ns = clock_ns()
        st = os.fstat(replicas_fd)
        if st.st_dev != disk_st.st_dev:
            return replace(ident, error=f"{REPLICAS_DIR}: on another filesystem than the disk")
        # Creating, removing or renaming an entry updates the directory's mtime and
        # ctime (and ctime cannot be set back by utimes).  A fingerprint is only kept
        # when the last change is older than _SETTLE_NS, so that a change made in the
        # same clock tick as our listing cannot hide behind an equal timestamp.
        token = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink, st.st_size)
        settled = started_ns - max(st.st_mtime_ns, st.st_ctime_ns) >= _SETTLE_NS
        same_disk = (
            previous is not None
            and previous.readable
            and previous.disk_path == base.disk_path
            and previous.fsid == fsid
            and previous.found_uuid == found_uuid
        )
        before = previous.entries if same_disk and previous is not None else {}
        entries: Mapping[str, ReplicaDirEntry]
        if same_disk and previous is not None and (
            previous.listing_token == token  # settled and unchanged: not even listed
            or (previous.replicas_mtime_ns == st.st_mtime_ns
                and before.keys() == set(os.listdir(replicas_fd)))
        ):
            entries, unproven = _recheck_unproven(replicas_fd, previous.entries, previous.unproven)
        else:
            entries = _list_entries(replicas_fd, before)
            unproven = _unproven(entries)
    except OSError as exc:
        return replace(ident, error=f"{REPLICAS_DIR}: {_describe(exc)}")
    finally:
        os.close(replicas_fd)
    return replace(
        ident,
        readable=True,
        entries=entries,
        replicas_mtime_ns=st.st_mtime_ns,
        listing_token=token if settled else None,
        unproven=unproven,
    )


def _newest_mtime_ns(dir_fd: int, depth: int = 0) -> int:
    """The newest modification time of the directory open as ``dir_fd`` and of anything in it
    (its own filesystem only: a mount inside is not the replica's data)."""
    here = os.fstat(dir_fd)
    newest = here.st_mtime_ns
    with os.scandir(dir_fd) as it:
        for entry in it:
            st = entry.stat(follow_symlinks=False)
            newest = max(newest, st.st_mtime_ns)
            if stat.S_ISDIR(st.st_mode) and st.st_dev == here.st_dev and depth < _MAX_REMOVE_DEPTH:
                child = os.open(entry.name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=dir_fd)
                try:
                    newest = max(newest, _newest_mtime_ns(child, depth + 1))
                finally:
                    os.close(child)
    return newest


def _meta_error(dir_fd: int) -> str:
    """Why ``volume.meta`` under ``dir_fd`` is not a valid replica meta file now, or ``""``."""
    try:
        raw = _read_small_file(VOLUME_META_FILE, dir_fd, MAX_VOLUME_META_BYTES)
    except OSError as exc:
        return f"{VOLUME_META_FILE}: {_describe(exc)}"
    if parse_volume_meta(raw) is None:
        return f"{VOLUME_META_FILE}: not a valid replica meta file"
    return ""


def probe_replica_dir(disk_path: str, dir_name: str, *,
                      clock_ns: Callable[[], int] = time.time_ns) -> DirProbe:
    """Look at ``<disk_path>/replicas/<dir_name>`` now: ``volume.meta`` read again, how long it is idle.

    Never raises; never follows a symlink.  Only a directory that is really absent is
    reported as not existing.
    """
    if safe_target(disk_path, dir_name) is None:
        return DirProbe(True, error="not a replica directory path")
    fds: list[int] = []
    try:
        fds.append(os.open(disk_path, _DIR_FLAGS))
        fds.append(os.open(REPLICAS_DIR, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fds[-1]))
        fds.append(os.open(dir_name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fds[-1]))
        meta_error = _meta_error(fds[-1])
        idle = (clock_ns() - _newest_mtime_ns(fds[-1])) / 1e9
    except FileNotFoundError:
        return DirProbe(False)
    except OSError as exc:
        return DirProbe(True, error=_describe(exc))
    finally:
        for fd in reversed(fds):
            os.close(fd)
    return DirProbe(True, meta_error=meta_error, idle=idle)


class RemovalOutcome(StrEnum):
    REMOVED = "Removed"
    QUARANTINED = "Quarantined"
    RESTORED = "Restored"
    ALREADY_ABSENT = "AlreadyAbsent"
    REFUSED = "Refused"
    FAILED = "Failed"


@dataclass(frozen=True)
class RemovalResult:
    """What :func:`remove_replica_dir` did.

    ``REFUSED`` means nothing was touched; ``FAILED`` that removal started and stopped
    part-way (``volume.meta`` is removed last, so the rest is still recognisable).
    """

    outcome: RemovalOutcome
    path: str
    reason: str
    message: str = ""

    @property
    def gone(self) -> bool:
        """The directory no longer exists: the Orphan's finalizer may be dropped."""
        return self.outcome in (RemovalOutcome.REMOVED, RemovalOutcome.ALREADY_ABSENT)


class _UnsafeToRemoveError(Exception):
    """Private: the tree being removed holds something that must not be crossed (a mount, a
    symlink, another filesystem); caught where the removal started and returned as its
    ``RemovalResult`` ("Unsafe"), so it never reaches a caller (not drawn in ``kustodian.errors``)."""


def _same_mount(parent_fd: int, name: str, mnt: int) -> None:
    found = mount_id_at(parent_fd, name)
    if found is None:
        raise _UnsafeToRemoveError(f"{name}: its mount cannot be told (no statx mount ID, no fdinfo)")
    if found != mnt:
        raise _UnsafeToRemoveError(f"{name}: a mount point (mount {found}, not {mnt})")


def _remove_tree(parent_fd: int, name: str, dev: int, mnt: int, depth: int) -> None:
    """Remove directory ``name`` under ``parent_fd``: no symlink followed, no mount or filesystem crossed."""
    st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        raise _UnsafeToRemoveError(f"{name}: not a directory")
    if st.st_dev != dev:
        raise _UnsafeToRemoveError(f"{name}: on another filesystem")
    _same_mount(parent_fd, name, mnt)
    if depth > _MAX_REMOVE_DEPTH:
        raise _UnsafeToRemoveError(f"{name}: nested deeper than {_MAX_REMOVE_DEPTH}")
    fd = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent_fd)
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) or mount_id_of_fd(fd) != mnt:
            raise _UnsafeToRemoveError(f"{name}: replaced while being removed")
        with os.scandir(fd) as it:
            children = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        # volume.meta goes last: if anything fails, the directory is still a replica.
        children.sort(key=lambda c: depth == 0 and c[0] == VOLUME_META_FILE)
        for child, is_dir in children:
            if is_dir:
                _remove_tree(fd, child, dev, mnt, depth + 1)
            else:
                # a file bind-mounted from elsewhere: unlinking it would detach the mount
                # in another namespace, and it is not replica data anyway
                _same_mount(fd, child, mnt)
                os.unlink(child, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=parent_fd)


@dataclass(frozen=True)
class VerifiedDir:
    """A replica directory every removal check passed on, its disk and ``replicas`` still open:
    what an :data:`Act` other than removal (the quarantine's rename) works on."""

    disk_fd: int
    replicas_fd: int
    name: str
    dev: int
    mount_id: int
    inode: int
    path: str


Act = Callable[[VerifiedDir], "RemovalResult"]


def remove_replica_dir(disk_path: str, dir_name: str, expected_uuid: str, *, quiet_for: float = 0.0,
                       clock_ns: Callable[[], int] = time.time_ns, act: Act | None = None) -> RemovalResult:
    """Remove ``<disk_path>/replicas/<dir_name>`` after re-verifying the disk it is on.

    Its ``volume.meta`` is read again first, and with ``quiet_for`` (seconds) a directory in
    which anything was modified more recently than that is refused ("RecentlyWritten").
    ``act``: what to do instead of removing, once every check passed (the quarantine's move).
    """
    target = safe_target(disk_path, dir_name)
    shown = target or f"{disk_path}/{REPLICAS_DIR}/{dir_name!r}"
    if target is None:
        return RemovalResult(RemovalOutcome.REFUSED, shown, "InvalidName", "not a replica directory path")
    try:
        disk_fd = os.open(disk_path, _DIR_FLAGS)
    except OSError as exc:
        return RemovalResult(RemovalOutcome.REFUSED, target, "DiskUnreadable", _describe(exc))
    try:
        return _remove_verified(disk_fd, target, dir_name, expected_uuid, quiet_for=quiet_for,
                                clock_ns=clock_ns, act=act)
    finally:
        os.close(disk_fd)


def _live_or_invalid(replicas_fd: int, dir_name: str, target: str, quiet_for: float,
                     clock_ns: Callable[[], int]) -> RemovalResult | None:
    """A refusal when the directory's ``volume.meta`` is not valid now or it was written recently."""
    fd = os.open(dir_name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=replicas_fd)
    try:
        why = _meta_error(fd)
        if why:
            return RemovalResult(RemovalOutcome.REFUSED, target, "MetaInvalid",
                                 f"read again at removal: {why}")
        idle = (clock_ns() - _newest_mtime_ns(fd)) / 1e9
    finally:
        os.close(fd)
    if idle < quiet_for:
        return RemovalResult(RemovalOutcome.REFUSED, target, "RecentlyWritten",
                             f"written {idle:.0f}s ago, within {quiet_for:.0f}s: live data")
    return None


def _remove_verified(disk_fd: int, target: str, dir_name: str, expected_uuid: str, *, quiet_for: float,
                     clock_ns: Callable[[], int], act: Act | None = None) -> RemovalResult:
    refused, failed = RemovalOutcome.REFUSED, RemovalOutcome.FAILED
    try:
        disk_dev = os.fstat(disk_fd).st_dev
        found_uuid, why = _read_disk_uuid(disk_fd)
        if found_uuid is None:
            return RemovalResult(refused, target, "DiskUUIDUnknown", why)
        if not expected_uuid or found_uuid != expected_uuid:
            return RemovalResult(
                refused, target, "DiskUUIDMismatch", f"disk has UUID {found_uuid}, expected {expected_uuid!r}"
            )
        try:
            replicas_fd = os.open(REPLICAS_DIR, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=disk_fd)
        except FileNotFoundError:
            return RemovalResult(RemovalOutcome.ALREADY_ABSENT, target, "NotFound")
    except OSError as exc:
        return RemovalResult(refused, target, "DiskUnreadable", _describe(exc))
    try:
        if os.fstat(replicas_fd).st_dev != disk_dev:
            return RemovalResult(refused, target, "OtherFilesystem", f"{REPLICAS_DIR} is another filesystem")
        try:
            st = os.stat(dir_name, dir_fd=replicas_fd, follow_symlinks=False)
        except FileNotFoundError:
            return RemovalResult(RemovalOutcome.ALREADY_ABSENT, target, "NotFound")
        if not stat.S_ISDIR(st.st_mode):
            return RemovalResult(
                refused, target, "NotADirectory", "a symlink or a file, not a replica directory"
            )
        if st.st_dev != disk_dev:
            return RemovalResult(refused, target, "OtherFilesystem", "a mount point, not a replica directory")
        replicas_mnt = mount_id_of_fd(replicas_fd)
        target_mnt = mount_id_at(replicas_fd, dir_name)
        if replicas_mnt is None or target_mnt is None:
            return RemovalResult(refused, target, "MountUnknown",
                                 "mount IDs cannot be read (no statx STATX_MNT_ID, no /proc/self/fdinfo)")
        if target_mnt != replicas_mnt:
            return RemovalResult(refused, target, "MountPoint", "a mount point, not a replica directory")
        mountinfo = read_mountinfo()
        if mountinfo is None:
            return RemovalResult(refused, target, "MountUnknown", "/proc/self/mountinfo cannot be read")
        inside = mounts_below(os.path.realpath(target), mountinfo)
        if inside:
            return RemovalResult(refused, target, "MountInside",
                                 f"mount point(s) inside: {', '.join(inside[:5])}; unmount them first")
        refused_now = _live_or_invalid(replicas_fd, dir_name, target, quiet_for, clock_ns)
        if refused_now is not None:
            return refused_now
        if act is not None:
            return act(VerifiedDir(disk_fd, replicas_fd, dir_name, disk_dev, target_mnt, st.st_ino, target))
        try:
            _remove_tree(replicas_fd, dir_name, disk_dev, target_mnt, 0)
        except _UnsafeToRemoveError as exc:
            return RemovalResult(failed, target, "Unsafe", str(exc))
        return RemovalResult(RemovalOutcome.REMOVED, target, "Removed")
    except OSError as exc:
        return RemovalResult(failed, target, "RemoveFailed", f"{exc.filename or target}: {_describe(exc)}")
    finally:
        os.close(replicas_fd)
