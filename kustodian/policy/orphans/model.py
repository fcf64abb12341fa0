"""The data the orphan decisions work on: disk scans, tracked replicas, orphans.

The node agent's scanner (``controllers.orphans.scan``) is the only code that reads a
disk; it fills a :class:`DiskScan` and never decides anything.  The Longhorn Replica
objects of the cluster become a set of :class:`TrackedReplica`.  Keeping both as
frozen plain data lets every "is this an orphan, may it be removed" question be
answered (and tested) without a filesystem or an API server.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kustodian.policy.objects import RawObject, str_field


@dataclass(frozen=True, slots=True)
class ReplicaDirEntry:
    """One name found in ``<disk>/replicas``, as seen without following symlinks.

    ``has_valid_meta`` is only ever evaluated for real directories with a valid
    replica name; ``error`` says why it is ``False`` when ``volume.meta`` was read.
    """

    name: str
    is_dir: bool
    is_symlink: bool
    has_valid_meta: bool = False
    error: str = ""


@dataclass(frozen=True)
class DiskScan:
    """One look at one Longhorn disk.

    ``expected_uuid`` is the UUID the node configuration says the disk has,
    ``found_uuid`` the one in the disk's ``longhorn-disk.cfg`` (``None`` when that
    file is missing or unreadable).  ``fsid`` identifies the filesystem, so that two
    disk paths on one filesystem (a bind mount, a mis-typed path) are recognised.
    ``readable`` is ``False`` when the disk or its ``replicas`` directory could not be
    examined; ``error`` then says why.  A disk without a ``replicas`` directory is
    readable and simply holds no replicas.

    ``replicas_mtime_ns``, ``listing_token`` and ``unproven`` are the scanner's bookkeeping
    for cheap rescans (the token fingerprints the ``replicas`` directory inode and is only
    set when that directory had settled before it was listed; ``unproven`` names the replica
    directories whose ``volume.meta`` was missing or invalid, read again on every rescan,
    ``None`` when not recorded: then every entry is looked at); decisions ignore them.
    """

    disk_path: str
    disk_name: str
    expected_uuid: str
    found_uuid: str | None = None
    fsid: str | None = None
    readable: bool = False
    error: str = ""
    entries: Mapping[str, ReplicaDirEntry] = field(default_factory=dict)
    replicas_mtime_ns: int | None = None
    listing_token: tuple[int, ...] | None = None
    unproven: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class DirProbe:
    """One replica directory looked at just now, never from a cached scan.

    ``meta_error`` is ``""`` when ``volume.meta`` was read again and is valid, else why
    not; ``idle`` is how many seconds ago anything in the directory (the directory itself
    or a file in it) was last modified, by the wall clock (``None`` when that could not be
    told; negative when a modification time lies in the future).  ``error`` says why the
    directory could not be looked at (``exists`` is then ``True``: unknown is not gone).
    """

    exists: bool
    meta_error: str = ""
    idle: float | None = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class TrackedReplica:
    """Where a Longhorn Replica object says its data lives."""

    node: str
    disk_uuid: str
    disk_path: str
    data_dir_name: str
    name: str = ""  # the Replica object's name (Longhorn Node lists scheduled replicas by it)


def tracked_replica(replica: RawObject) -> TrackedReplica | None:
    """Read a ``replicas.longhorn.io`` object; ``None`` when it names no data directory.

    ``spec.dataDirectoryName`` is current Longhorn; ``spec.dataPath`` (the full path)
    is what older objects carry, so its last component counts too.
    """
    data_dir = str_field(replica, "spec", "dataDirectoryName")
    if not data_dir:
        data_dir = posixpath.basename(str_field(replica, "spec", "dataPath").rstrip("/"))
    if not data_dir:
        return None
    return TrackedReplica(
        node=str_field(replica, "spec", "nodeID"),
        disk_uuid=str_field(replica, "spec", "diskID"),
        disk_path=str_field(replica, "spec", "diskPath"),
        data_dir_name=data_dir,
        name=str_field(replica, "metadata", "name"),
    )


def tracked_replicas(replicas: Iterable[RawObject]) -> frozenset[TrackedReplica]:
    found = (tracked_replica(r) for r in replicas)
    return frozenset(t for t in found if t is not None)


@dataclass(frozen=True)
class OrphanedReplicaDir:
    """A replica directory on this node that no Replica object accounts for."""

    node: str
    disk_name: str
    disk_uuid: str
    disk_path: str
    dir_name: str
