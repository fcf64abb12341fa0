"""Which disks can be trusted, and which directories on them are orphans.

Longhorn checks a disk before looking inside it (stat, filesystem id, the UUID in
``longhorn-disk.cfg``) and so do we, with two additions from its bug tracker:

* a disk whose identity file does not carry the expected UUID is skipped, whatever
  the reason (another disk mounted at the same path, the mount missing so that the
  path now shows the root filesystem, the file unreadable);
* two configured disk paths on the same filesystem (a bind mount, a path under
  another disk) would each see the other's replicas as untracked: as Longhorn does
  (``findNotReadyAndReadyDiskMaps``), the first healthy disk of the group stays in
  use and only the later ones are skipped.

Longhorn's view comes on top (:mod:`policy.orphans.ownership`): nothing is judged at all
without a Longhorn Node for this node and a complete Replica list, and a disk Longhorn
does not consider usable (node down or evicted, disk not Ready, changed or evicted) is
not looked into either.

A directory is an orphan only when every one of these holds: valid replica name,
real directory (not a symlink), a ``volume.meta`` that parses, and no Replica
object anywhere names it as its data directory.  That last test is stricter than
Longhorn's "not scheduled on this node and disk": the 8 random characters make a
legitimate name collision across nodes practically impossible, while a Replica whose
node or disk field changed (re-added disk, moved node) must not make its data look
orphaned.  When ownership is unknown, nothing is an orphan.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kustodian.policy.objects import RawObject, is_deleting, name, namespace, uid
from kustodian.policy.orphans.model import DiskScan, OrphanedReplicaDir, ReplicaDirEntry, TrackedReplica
from kustodian.policy.orphans.names import is_replica_dir_name, normalize_disk_path, orphan_name
from kustodian.policy.orphans.ownership import Ownership, longhorn_disk_name, longhorn_disk_verdict
from kustodian.policy.orphans.reasons import OrphanReason
from kustodian.policy.orphans.resource import (
    PARAM_DATA_NAME,
    PARAM_DISK_PATH,
    PARAM_DISK_UUID,
    orphan_node,
    orphan_param,
)


@dataclass(frozen=True)
class DiskCondition:
    ok: bool
    reason: OrphanReason
    message: str = ""


def same_disk_path(a: str, b: str) -> bool:
    na, nb = normalize_disk_path(a), normalize_disk_path(b)
    return na is not None and na == nb


def disk_condition(scan: DiskScan, other_scans: Iterable[DiskScan]) -> DiskCondition:
    """Whether the contents of ``scan`` may be trusted; ``other_scans`` may include ``scan``."""
    if not scan.readable:
        return DiskCondition(False, OrphanReason.DISK_UNREADABLE, scan.error or "disk could not be read")
    if normalize_disk_path(scan.disk_path) is None:
        return DiskCondition(
            False, OrphanReason.DISK_UNREADABLE, f"disk path {scan.disk_path!r} is not a safe path"
        )
    if not scan.expected_uuid:
        return DiskCondition(False, OrphanReason.DISK_UUID_UNKNOWN, "no expected disk UUID configured")
    if scan.found_uuid is None:
        return DiskCondition(
            False, OrphanReason.DISK_UUID_UNKNOWN, scan.error or "disk identity file missing or unreadable"
        )
    if scan.found_uuid != scan.expected_uuid:
        return DiskCondition(
            False,
            OrphanReason.DISK_UUID_MISMATCH,
            f"disk identity file has UUID {scan.found_uuid}, expected {scan.expected_uuid}",
        )
    if scan.fsid is None:
        return DiskCondition(False, OrphanReason.DISK_FILESYSTEM_UNKNOWN, "filesystem id unknown")
    # Only a disk listed *before* this one, and itself healthy, pushes it out: the first
    # disk of a shared filesystem keeps working, as in Longhorn.
    for other in other_scans:
        if same_disk_path(other.disk_path, scan.disk_path):
            break
        if other.fsid == scan.fsid and _identity_ok(other):
            return DiskCondition(
                False,
                OrphanReason.DISK_FILESYSTEM_SHARED,
                f"disk {scan.disk_path} shares filesystem {scan.fsid} with disk {other.disk_path}, "
                "which comes first",
            )
    return DiskCondition(True, OrphanReason.DISK_OK)


def _identity_ok(scan: DiskScan) -> bool:
    return (scan.readable and normalize_disk_path(scan.disk_path) is not None and bool(scan.expected_uuid)
            and scan.found_uuid == scan.expected_uuid and scan.fsid is not None)


def disk_verdict(scan: DiskScan, scans: Sequence[DiskScan], owners: Ownership) -> DiskCondition:
    """Whether ``scan`` may be judged at all: ownership known, Longhorn's view, then the disk itself."""
    if not owners.known or owners.node is None:
        return DiskCondition(False, owners.reason, owners.message)
    verdict = longhorn_disk_verdict(owners.node, scan)
    if not verdict.ok:
        return DiskCondition(False, verdict.reason, verdict.message)
    return disk_condition(scan, scans)


def tracked_dir_names(tracked: Iterable[TrackedReplica]) -> frozenset[str]:
    return frozenset(t.data_dir_name for t in tracked)


def is_orphan_candidate(entry: ReplicaDirEntry) -> bool:
    """A replica directory by every local test (name, real directory, valid meta)."""
    return entry.is_dir and not entry.is_symlink and entry.has_valid_meta and is_replica_dir_name(entry.name)


def find_orphans(node: str, scans: Sequence[DiskScan], owners: Ownership) -> list[OrphanedReplicaDir]:
    """Orphaned replica directories on ``node``'s trusted disks, in a stable order.

    Without known ownership (no Longhorn Node, Replicas not listed or incomplete) no
    directory can be shown to be untracked and the answer is empty.
    """
    if not owners.known or owners.tracked is None:
        return []
    claimed = tracked_dir_names(owners.tracked)
    found: list[OrphanedReplicaDir] = []
    for scan in scans:
        if not disk_verdict(scan, scans, owners).ok:
            continue
        disk_path = normalize_disk_path(scan.disk_path) or scan.disk_path
        disk_name = longhorn_disk_name(owners.node, scan)
        for entry in scan.entries.values():
            if entry.name not in claimed and is_orphan_candidate(entry):
                found.append(OrphanedReplicaDir(node, disk_name, scan.expected_uuid, disk_path, entry.name))
    found.sort(key=lambda o: (o.disk_path, o.dir_name))
    return found


def replica_dir_count(scan: DiskScan) -> int:
    """How many real replica directories (valid name and ``volume.meta``) the disk holds."""
    return sum(1 for entry in scan.entries.values() if is_orphan_candidate(entry))


@dataclass(frozen=True)
class PruneOrphan:
    """An Orphan whose directory is no longer orphaned.

    Patch ``kustodian.io/keep-data: "true"`` on it, then delete it with
    ``preconditions.uid == uid``: the finalizer then releases it without touching data.
    """

    namespace: str
    name: str
    uid: str
    reason: OrphanReason


@dataclass(frozen=True)
class OrphanSync:
    create: tuple[OrphanedReplicaDir, ...]
    prune: tuple[PruneOrphan, ...]


def sync_orphans(
    node: str,
    scans: Sequence[DiskScan],
    owners: Ownership,
    existing: Iterable[RawObject],
) -> OrphanSync:
    """Orphans to create for new directories, and Orphans to prune on ``node``.

    An Orphan is only pruned on positive evidence from a trusted disk that still has
    the same UUID: its directory is gone, or a Replica names it again.  A disk that
    cannot be read, changed, or that Longhorn does not consider usable, leaves its
    Orphans alone (their ``DataCleanable`` condition says why); unknown ownership
    leaves everything alone.
    """
    found = find_orphans(node, scans, owners)
    have: set[str] = set()
    prune: list[PruneOrphan] = []
    tracked = owners.tracked if owners.known else None
    claimed = tracked_dir_names(tracked) if tracked is not None else None
    for obj in existing:
        if orphan_node(obj) != node:
            continue
        have.add(name(obj))
        if is_deleting(obj) or claimed is None:
            continue
        data_name = orphan_param(obj, PARAM_DATA_NAME)
        scan = next(
            (s for s in scans if same_disk_path(s.disk_path, orphan_param(obj, PARAM_DISK_PATH))), None
        )
        if scan is None or not disk_verdict(scan, scans, owners).ok:
            continue
        if scan.expected_uuid != orphan_param(obj, PARAM_DISK_UUID):
            continue
        entry = scan.entries.get(data_name)
        if entry is None or not entry.is_dir or entry.is_symlink:
            prune.append(PruneOrphan(namespace(obj), name(obj), uid(obj), OrphanReason.DATA_MISSING))
        elif data_name in claimed:
            prune.append(PruneOrphan(namespace(obj), name(obj), uid(obj), OrphanReason.DATA_TRACKED))
    create = tuple(o for o in found if orphan_name(o.node, o.disk_uuid, o.dir_name) not in have)
    return OrphanSync(create, tuple(prune))
