"""Quarantine before removal: what happens to a deleted Orphan's directory, and when (pure).

Deleting an OrphanedReplicaDir no longer removes its directory at once.  Once every check of
:func:`policy.orphans.cleanup.data_cleanability` passed, the node agent moves the directory
with one ``rename(2)`` on the same filesystem (never across a mount) from
``<disk>/replicas/<name>`` to ``<disk>/kustodian-quarantine/<name>``: Longhorn only ever
looks at ``<disk>/replicas/`` for replica data (its disk monitor lists that folder, and
``policy.orphans.names.REPLICAS_DIR`` is the same name), so a folder beside it is never
taken for a replica, and the move copies nothing (same inode, same bytes).

The Orphan keeps its finalizer while its directory is in quarantine, so the object outlives
the move and says what became of the data: ``status.state`` goes ``Reported`` ->
``Quarantined`` -> ``Removed`` (after the retention) or ``Restored`` (``kustodian orphans
restore``), ``status.quarantinedAt`` and ``status.removeAfter`` say when.  The finalizer is
the promise "the agent still holds data for this object"; dropping it is the last act of both
ends, so the object disappears then (a restored directory is reported afresh by the next scan).

The retention is a setting with a floor: a disk under pressure (its free share below
``pressure_free_share``) keeps quarantined data only for ``floor``; never less.  That is the
whole pressure rule: a disk either has room (``retention``) or not (``floor``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from kustodian.policy.objects import RawObject, map_field, str_field
from kustodian.policy.orphans.names import is_replica_dir_name, normalize_disk_path

QUARANTINE_DIR = "kustodian-quarantine"
ANNOTATION_RESTORE = "kustodian.io/restore"

STATE_REPORTED = "Reported"
STATE_QUARANTINED = "Quarantined"
STATE_REMOVED = "Removed"
STATE_RESTORED = "Restored"

RESTORE_RESTORED = "Restored"
RESTORE_REFUSED = "Refused"

__all__ = [
    "ANNOTATION_RESTORE",
    "QUARANTINE_DIR",
    "RESTORE_REFUSED",
    "RESTORE_RESTORED",
    "STATE_QUARANTINED",
    "STATE_REMOVED",
    "STATE_REPORTED",
    "STATE_RESTORED",
    "QuarantinePolicy",
    "QuarantineProbe",
    "quarantine_deadline",
    "quarantine_path",
    "restore_request",
    "under_pressure",
]


@dataclass(frozen=True)
class QuarantinePolicy:
    """How long quarantined data is kept: ``retention``, or ``floor`` on a disk whose free share is
    below ``pressure_free_share`` (0: never shortened).  ``floor <= retention`` (the settings refuse
    anything else)."""

    retention: timedelta = timedelta(hours=24)
    floor: timedelta = timedelta(hours=1)
    pressure_free_share: float = 0.1


@dataclass(frozen=True, slots=True)
class QuarantineProbe:
    """One Orphan's directory looked at in quarantine, now.

    ``exists``: ``<disk>/kustodian-quarantine/<name>`` is a real directory (not a symlink);
    ``original_exists``: something (anything) is at ``<disk>/replicas/<name>`` now;
    ``free_share``: the disk's free share (``f_bavail / f_blocks``), ``None`` when unknown;
    ``error``: why it could not be looked at (then ``exists`` is ``True``: unknown is not gone).
    """

    exists: bool
    original_exists: bool = False
    free_share: float | None = None
    error: str = ""


def quarantine_path(disk_path: str, dir_name: str) -> str | None:
    """``<disk>/kustodian-quarantine/<dir_name>``, or ``None`` for a name that is no replica directory."""
    disk = normalize_disk_path(disk_path)
    if disk is None or not is_replica_dir_name(dir_name):
        return None
    return f"{disk.rstrip('/')}/{QUARANTINE_DIR}/{dir_name}"


def under_pressure(policy: QuarantinePolicy, free_share: float | None) -> bool:
    """The disk has less free room than ``pressure_free_share`` (unknown room is no pressure: the
    data is kept the longer time)."""
    limit = policy.pressure_free_share
    return free_share is not None and limit > 0 and free_share < limit


def quarantine_deadline(quarantined_at: datetime, policy: QuarantinePolicy,
                        free_share: float | None) -> datetime:
    """When quarantined data is removed for good: ``retention`` after the move, or ``floor`` after it
    on a disk under pressure; never earlier than ``floor``."""
    keep = policy.floor if under_pressure(policy, free_share) else max(policy.retention, policy.floor)
    return quarantined_at + keep


def restore_request(orphan: RawObject) -> str:
    """The restore request on ``orphan`` not answered yet (the annotation's value), or ``""``."""
    asked = map_field(orphan, "metadata", "annotations").get(ANNOTATION_RESTORE)
    if not isinstance(asked, str) or not asked:
        return ""
    if str_field(orphan, "status", "restore", "request") == asked:
        return ""  # answered already
    return asked
