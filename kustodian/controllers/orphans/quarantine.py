"""The quarantine's acts on a disk: move in, remove for good, move back, look, measure.

What to do and when is decided in :mod:`policy.orphans.quarantine`; this module only acts, and
re-verifies right before each act what it acts on:

* :func:`quarantine_replica_dir` makes every check :func:`controllers.orphans.scan.remove_replica_dir`
  makes (disk UUID in ``longhorn-disk.cfg``, a real directory with a valid ``volume.meta`` on the
  disk's own filesystem and mount, no mount point below it, nothing written within the write
  grace) and then, instead of deleting, renames ``<disk>/replicas/<name>`` to
  ``<disk>/kustodian-quarantine/<name>``: one ``renameat2(RENAME_NOREPLACE)`` between two
  directory descriptors of the same filesystem and the same mount (both checked first: the
  rename never crosses a mount, nothing is copied, the inode stays the same);
* :func:`purge_quarantined` removes the quarantined directory for good, with the removal's own
  walk (no symlink followed, no mount or filesystem crossed, ``volume.meta`` last);
* :func:`restore_quarantined` renames it back, refusing when anything is at the original path
  now (``RENAME_NOREPLACE`` makes that check and the move one step);
* :func:`probe_quarantine` looks at the quarantined directory and the disk's free share for a
  decision; :func:`apparent_size` measures a directory as ``du -sb`` does, for the sizer (a
  separate low-priority loop, never the scan).

Where the kernel or libc has no ``renameat2`` the rename falls back to looking first and
``rename(2)`` then (which only ever replaces an *empty* directory).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import stat
import time
from collections.abc import Callable
from typing import Any

from kustodian.controllers.orphans.mounts import mount_id_at, mount_id_of_fd, mounts_below, read_mountinfo
from kustodian.controllers.orphans.scan import (
    RemovalOutcome,
    RemovalResult,
    VerifiedDir,
    remove_replica_dir,
)
from kustodian.controllers.orphans.scan import _describe as describe
from kustodian.controllers.orphans.scan import _meta_error as meta_error
from kustodian.controllers.orphans.scan import _read_disk_uuid as read_disk_uuid
from kustodian.controllers.orphans.scan import _remove_tree as remove_tree
from kustodian.controllers.orphans.scan import _UnsafeToRemoveError as UnsafeToRemoveError
from kustodian.policy.orphans import (
    QUARANTINE_DIR,
    REPLICAS_DIR,
    QuarantineProbe,
    quarantine_path,
    safe_target,
)

__all__ = ["apparent_size", "probe_quarantine", "purge_quarantined", "quarantine_replica_dir",
           "restore_quarantined"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW_DIR = _DIR_FLAGS | os.O_NOFOLLOW
_RENAME_NOREPLACE = 1
_MAX_DEPTH = 64


def _load_renameat2() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _load_renameat2()


def rename_noreplace(src_fd: int, name: str, dst_fd: int) -> None:
    """Rename ``name`` from directory ``src_fd`` to ``dst_fd`` in one step; ``FileExistsError`` when
    anything is at the destination."""
    if _renameat2 is not None:
        encoded = os.fsencode(name)
        if _renameat2(src_fd, encoded, dst_fd, encoded, _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(err, os.strerror(err), name)
    try:  # no RENAME_NOREPLACE here: look first (rename(2) only replaces an empty directory)
        os.lstat(name, dir_fd=dst_fd)
    except FileNotFoundError:
        os.rename(name, name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return
    raise FileExistsError(errno.EEXIST, "exists", name)


def _open_quarantine(disk_fd: int, *, create: bool) -> int:
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(QUARANTINE_DIR, 0o700, dir_fd=disk_fd)
    return os.open(QUARANTINE_DIR, _NOFOLLOW_DIR, dir_fd=disk_fd)


def quarantine_replica_dir(disk_path: str, dir_name: str, expected_uuid: str, *, quiet_for: float = 0.0,
                           clock_ns: Callable[[], int] = time.time_ns) -> RemovalResult:
    """Move ``<disk>/replicas/<dir_name>`` into ``<disk>/kustodian-quarantine/`` after every check a
    removal makes; ``QUARANTINED`` (message: where to, the inode) or why not."""
    return remove_replica_dir(disk_path, dir_name, expected_uuid, quiet_for=quiet_for, clock_ns=clock_ns,
                              act=_move_in)


def _move_in(found: VerifiedDir) -> RemovalResult:
    refused = RemovalOutcome.REFUSED
    held = f"{os.path.dirname(os.path.dirname(found.path))}/{QUARANTINE_DIR}/{found.name}"
    try:
        q_fd = _open_quarantine(found.disk_fd, create=True)
    except OSError as exc:  # ELOOP: the quarantine folder is a symlink; ENOTDIR: a file
        return RemovalResult(refused, found.path, "QuarantineUnusable", f"{QUARANTINE_DIR}: {describe(exc)}")
    try:
        q_st = os.fstat(q_fd)
        src = os.stat(found.name, dir_fd=found.replicas_fd, follow_symlinks=False)
        if (src.st_dev, src.st_ino) != (found.dev, found.inode):
            return RemovalResult(refused, found.path, "Replaced", "replaced while being checked")
        if q_st.st_dev != src.st_dev:
            return RemovalResult(refused, found.path, "QuarantineOtherFilesystem",
                                 f"{QUARANTINE_DIR} is on another filesystem than {REPLICAS_DIR}")
        if mount_id_of_fd(q_fd) != found.mount_id:
            return RemovalResult(refused, found.path, "QuarantineOtherMount",
                                 f"{QUARANTINE_DIR} is another mount than {REPLICAS_DIR}")
        try:
            rename_noreplace(found.replicas_fd, found.name, q_fd)
        except FileExistsError:
            return RemovalResult(refused, found.path, "QuarantineOccupied", f"{held} exists already")
        moved = os.stat(found.name, dir_fd=q_fd, follow_symlinks=False)
        return RemovalResult(RemovalOutcome.QUARANTINED, found.path, "Quarantined",
                             f"moved to {held} (inode {moved.st_ino}, nothing copied)")
    finally:
        os.close(q_fd)


def _verified_disk(disk_path: str, expected_uuid: str, shown: str) -> tuple[int, RemovalResult | None]:
    """The disk open, its UUID checked; a refusal (and no descriptor) otherwise."""
    refused = RemovalOutcome.REFUSED
    try:
        disk_fd = os.open(disk_path, _DIR_FLAGS)
    except OSError as exc:
        return -1, RemovalResult(refused, shown, "DiskUnreadable", describe(exc))
    found_uuid, why = read_disk_uuid(disk_fd)
    if found_uuid is None or not expected_uuid or found_uuid != expected_uuid:
        os.close(disk_fd)
        if found_uuid is None:
            return -1, RemovalResult(refused, shown, "DiskUUIDUnknown", why)
        return -1, RemovalResult(refused, shown, "DiskUUIDMismatch",
                                 f"disk has UUID {found_uuid}, expected {expected_uuid!r}")
    return disk_fd, None


def _check_held(q_fd: int, name: str, dev: int, shown: str) -> tuple[int, RemovalResult | None]:
    """The quarantined directory is a real directory of the disk's filesystem and mount, with no
    mount point below it: its mount ID, or a refusal."""
    refused = RemovalOutcome.REFUSED
    st = os.stat(name, dir_fd=q_fd, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        return 0, RemovalResult(refused, shown, "NotADirectory",
                                "a symlink or a file, not a replica directory")
    if st.st_dev != dev:
        return 0, RemovalResult(refused, shown, "OtherFilesystem", "a mount point, not a replica directory")
    q_mnt, entry_mnt = mount_id_of_fd(q_fd), mount_id_at(q_fd, name)
    if q_mnt is None or entry_mnt is None:
        return 0, RemovalResult(refused, shown, "MountUnknown", "mount IDs cannot be read")
    if q_mnt != entry_mnt:
        return 0, RemovalResult(refused, shown, "MountPoint", "a mount point, not a replica directory")
    mountinfo = read_mountinfo()
    if mountinfo is None:
        return 0, RemovalResult(refused, shown, "MountUnknown", "/proc/self/mountinfo cannot be read")
    inside = mounts_below(os.path.realpath(shown), mountinfo)
    if inside:
        return 0, RemovalResult(refused, shown, "MountInside",
                                f"mount point(s) inside: {', '.join(inside[:5])}; unmount them first")
    return q_mnt, None


def purge_quarantined(disk_path: str, dir_name: str, expected_uuid: str) -> RemovalResult:
    """Remove ``<disk>/kustodian-quarantine/<dir_name>`` for good, the disk UUID verified first."""
    shown = quarantine_path(disk_path, dir_name)
    if shown is None:
        return RemovalResult(RemovalOutcome.REFUSED, f"{disk_path}/{QUARANTINE_DIR}/{dir_name!r}",
                             "InvalidName", "not a replica directory name")
    disk_fd, refusal = _verified_disk(disk_path, expected_uuid, shown)
    if refusal is not None:
        return refusal
    try:
        dev = os.fstat(disk_fd).st_dev
        try:
            q_fd = _open_quarantine(disk_fd, create=False)
        except FileNotFoundError:
            return RemovalResult(RemovalOutcome.ALREADY_ABSENT, shown, "NotFound")
        try:
            if os.fstat(q_fd).st_dev != dev:
                return RemovalResult(RemovalOutcome.REFUSED, shown, "OtherFilesystem",
                                     f"{QUARANTINE_DIR} is another filesystem")
            try:
                mnt, refusal = _check_held(q_fd, dir_name, dev, shown)
            except FileNotFoundError:
                return RemovalResult(RemovalOutcome.ALREADY_ABSENT, shown, "NotFound")
            if refusal is not None:
                return refusal
            try:
                remove_tree(q_fd, dir_name, dev, mnt, 0)
            except UnsafeToRemoveError as exc:
                return RemovalResult(RemovalOutcome.FAILED, shown, "Unsafe", str(exc))
            return RemovalResult(RemovalOutcome.REMOVED, shown, "Removed")
        finally:
            os.close(q_fd)
    except OSError as exc:
        return RemovalResult(RemovalOutcome.FAILED, shown, "RemoveFailed", f"{exc.filename or shown}: "
                             f"{describe(exc)}")
    finally:
        os.close(disk_fd)


def restore_quarantined(disk_path: str, dir_name: str, expected_uuid: str) -> RemovalResult:
    """Rename ``<disk>/kustodian-quarantine/<dir_name>`` back to ``<disk>/replicas/<dir_name>``, every
    check made again first; refused ("TargetInUse") when anything is at the original path."""
    shown, back = quarantine_path(disk_path, dir_name), safe_target(disk_path, dir_name)
    refused = RemovalOutcome.REFUSED
    if shown is None or back is None:
        return RemovalResult(refused, f"{disk_path}/{QUARANTINE_DIR}/{dir_name!r}", "InvalidName",
                             "not a replica directory name")
    disk_fd, refusal = _verified_disk(disk_path, expected_uuid, shown)
    if refusal is not None:
        return refusal
    fds: list[int] = []
    try:
        dev = os.fstat(disk_fd).st_dev
        try:
            fds.append(_open_quarantine(disk_fd, create=False))
            mnt, refusal = _check_held(fds[0], dir_name, dev, shown)
        except FileNotFoundError:
            return RemovalResult(refused, shown, "NotInQuarantine", f"{shown} does not exist")
        if refusal is not None:
            return refusal
        fds.append(os.open(dir_name, _NOFOLLOW_DIR, dir_fd=fds[0]))
        why = meta_error(fds[-1])
        if why:
            return RemovalResult(refused, shown, "MetaInvalid", f"read again before restoring: {why}")
        try:
            fds.append(os.open(REPLICAS_DIR, _NOFOLLOW_DIR, dir_fd=disk_fd))
        except FileNotFoundError:
            return RemovalResult(refused, back, "ReplicasMissing",
                                 f"{REPLICAS_DIR} does not exist on the disk")
        replicas_fd = fds[-1]
        if os.fstat(replicas_fd).st_dev != dev or mount_id_of_fd(replicas_fd) != mnt:
            return RemovalResult(refused, back, "OtherMount",
                                 f"{REPLICAS_DIR} is another filesystem or mount")
        try:
            rename_noreplace(fds[0], dir_name, replicas_fd)
        except FileExistsError:
            return RemovalResult(refused, back, "TargetInUse",
                                 f"{back} exists: something now lives there; not restored")
        return RemovalResult(RemovalOutcome.RESTORED, back, "Restored", f"moved back from {shown}")
    except OSError as exc:
        return RemovalResult(RemovalOutcome.FAILED, shown, "RestoreFailed", f"{exc.filename or shown}: "
                             f"{describe(exc)}")
    finally:
        for fd in reversed(fds):
            os.close(fd)
        os.close(disk_fd)


def probe_quarantine(disk_path: str, dir_name: str) -> QuarantineProbe:
    """Look at ``dir_name`` in the disk's quarantine now, at its original path and at the disk's free
    share.  Never raises; a disk that cannot be opened says "not in quarantine" (the removal's own
    checks then report the disk)."""
    if quarantine_path(disk_path, dir_name) is None:
        return QuarantineProbe(False)
    try:
        disk_fd = os.open(disk_path, _DIR_FLAGS)
    except (OSError, ValueError):
        return QuarantineProbe(False)
    try:
        try:
            vfs = os.statvfs(disk_fd)
            free: float | None = vfs.f_bavail / vfs.f_blocks if vfs.f_blocks else None
        except OSError:
            free = None
        try:
            os.lstat(f"{REPLICAS_DIR}/{dir_name}", dir_fd=disk_fd)
            original = True
        except FileNotFoundError:
            original = False
        except OSError:
            original = True  # cannot tell: counts as in use
        try:
            st = os.lstat(f"{QUARANTINE_DIR}/{dir_name}", dir_fd=disk_fd)
        except (FileNotFoundError, NotADirectoryError):
            return QuarantineProbe(False, original, free)
        except OSError as exc:
            return QuarantineProbe(True, original, free, error=describe(exc))
        return QuarantineProbe(stat.S_ISDIR(st.st_mode), original, free)
    finally:
        os.close(disk_fd)


def apparent_size(disk_path: str, dir_name: str, *, quarantined: bool) -> int | None:
    """The apparent size in bytes of ``<disk>/replicas/<dir_name>`` (or its quarantined place) as
    ``du -sb`` counts it: ``st_size`` of the directory and of everything below it, each inode once
    (hard links), symlinks not followed; it stays on the directory's filesystem.  ``None`` when it
    cannot be measured (gone, unreadable)."""
    if safe_target(disk_path, dir_name) is None:
        return None
    fds: list[int] = []
    try:
        fds.append(os.open(disk_path, _DIR_FLAGS))
        fds.append(os.open(QUARANTINE_DIR if quarantined else REPLICAS_DIR, _NOFOLLOW_DIR, dir_fd=fds[-1]))
        fds.append(os.open(dir_name, _NOFOLLOW_DIR, dir_fd=fds[-1]))
        top = os.fstat(fds[-1])
        seen: set[tuple[int, int]] = {(top.st_dev, top.st_ino)}
        return top.st_size + _size_below(fds[-1], top.st_dev, seen, 0)
    except OSError:
        return None
    finally:
        for fd in reversed(fds):
            os.close(fd)


def _size_below(dir_fd: int, dev: int, seen: set[tuple[int, int]], depth: int) -> int:
    total = 0
    with os.scandir(dir_fd) as it:
        entries = list(it)
    for entry in entries:
        st = entry.stat(follow_symlinks=False)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        total += st.st_size
        if stat.S_ISDIR(st.st_mode) and st.st_dev == dev and depth < _MAX_DEPTH:
            child = os.open(entry.name, _NOFOLLOW_DIR, dir_fd=dir_fd)
            try:
                total += _size_below(child, dev, seen, depth + 1)
            finally:
                os.close(child)
    return total
