"""Which mount a file is on: the mount ID, because the device number cannot tell.

A bind mount of another directory of the *same* filesystem into a replica directory
has the same ``st_dev`` as everything around it; only the kernel's mount ID differs.
Removal therefore compares mount IDs as well as device numbers, and before it starts
it refuses any target below which ``/proc/self/mountinfo`` lists a mount point.

The mount ID comes from ``statx(2)`` with ``STATX_MNT_ID`` (Linux 5.8; Python's
``os.statx`` only arrives in 3.15, so through libc), else from ``/proc/self/fdinfo/<fd>``
of an ``O_PATH`` descriptor (``mnt_id:``, Linux 3.15).  When neither answers, the
answer is ``None`` and the caller must not remove anything: being unable to tell mounts
apart is a reason to stop, not to guess.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Any

STATX_MNT_ID = 0x1000
_AT_SYMLINK_NOFOLLOW = 0x100
_AT_EMPTY_PATH = 0x1000
_AT_STATX_DONT_SYNC = 0x4000
_STATX_SIZE = 256
_STX_MNT_ID_OFFSET = 144  # struct statx: ... __u32 stx_dev_minor; __u64 stx_mnt_id;
MOUNTINFO = "/proc/self/mountinfo"


def _load_statx() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.statx
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


_statx = _load_statx()


def _statx_mount_id(dir_fd: int, name: str, flags: int) -> int | None:
    if _statx is None:
        return None
    buf = ctypes.create_string_buffer(_STATX_SIZE)
    rc = _statx(dir_fd, os.fsencode(name), flags | _AT_STATX_DONT_SYNC, STATX_MNT_ID, buf)
    if rc != 0:
        err = ctypes.get_errno()
        if err in (0, 38):  # ENOSYS: no statx in this kernel/seccomp profile
            return None
        raise OSError(err, os.strerror(err), name)
    mask = int.from_bytes(buf.raw[0:4], "little")
    if not mask & STATX_MNT_ID:
        return None
    return int.from_bytes(buf.raw[_STX_MNT_ID_OFFSET:_STX_MNT_ID_OFFSET + 8], "little")


def _fdinfo_mount_id(fd: int) -> int | None:
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key == "mnt_id":
                    return int(value.strip())
    except (OSError, ValueError):
        return None
    return None


def mount_id_at(dir_fd: int, name: str) -> int | None:
    """The mount ID of ``name`` under ``dir_fd`` (not following a final symlink); ``None``: unknown."""
    found = _statx_mount_id(dir_fd, name, _AT_SYMLINK_NOFOLLOW)
    if found is not None:
        return found
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        return _fdinfo_mount_id(fd)
    finally:
        os.close(fd)


def mount_id_of_fd(fd: int) -> int | None:
    """The mount ID of the open file ``fd``; ``None``: unknown."""
    found = _statx_mount_id(fd, "", _AT_EMPTY_PATH)
    return found if found is not None else _fdinfo_mount_id(fd)


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as ``\\ooo``."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mount_points(mountinfo: str) -> list[str]:
    """The mount points (field 5) listed in a ``/proc/<pid>/mountinfo`` text."""
    points = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) >= 5:
            points.append(_unescape(fields[4]))
    return points


def mounts_below(path: str, mountinfo: str) -> list[str]:
    """Mount points strictly inside ``path`` (or on it) per ``mountinfo``; ``path`` must be resolved."""
    base = path.rstrip("/") or "/"
    prefix = base + "/" if base != "/" else "/"
    return sorted(p for p in mount_points(mountinfo) if p == base or p.startswith(prefix))


def read_mountinfo() -> str | None:
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="surrogateescape") as f:
            return f.read()
    except OSError:
        return None
