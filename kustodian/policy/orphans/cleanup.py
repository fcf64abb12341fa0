"""When the data behind an Orphan may really be removed.

Deleting an Orphan object is a request, not an order.  The node agent removes the
directory only when, judged on a scan and a Replica list taken just now:

* the Orphan belongs to this node,
* ownership is known (a Longhorn Node for this node, a complete Replica list) and
  Longhorn considers node and disk usable (not down, not evicted, disk Ready with the
  same name, path and UUID: Longhorn's ``NodeUnavailable``, ``NodeEvicted``,
  ``DiskInvalid``, ``DiskChanged``, ``DiskEvicted``),
* the delete was requested while the node was up and this agent running (a request
  made while it was down was judged on a stale ``DataCleanable``: the finalizer is
  dropped, the data kept, and the next scan reports the directory afresh),
* its disk is trusted (:func:`policy.orphans.detect.disk_condition`) and still has the
  UUID recorded on the Orphan (a different disk mounted at the same path is never
  cleaned),
* the directory is still there, still a real directory with a valid ``volume.meta``,
* no Replica object names it,
* nobody asked to keep the data (``kustodian.io/keep-data: "true"``).

In every other case the finalizer is dropped and the data stays: dropping a
finalizer can at worst leak a directory, which the next scan finds again.

Automatic deletion (Longhorn's ``orphan-auto-deletion``) only deletes an Orphan
whose data is cleanable right now, that has existed for ``grace``, and whose disk
is not held by the mass-orphan brake (:func:`policy.orphans.ownership.mass_orphan_brake`): Longhorn
deleted replica data of volumes that were merely being rebuilt or whose node was
briefly away (longhorn#7795); a grace period plus a fresh cleanability check closes
that gap.  The ``DataCleanable`` condition tells people in advance what a delete
would do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kustodian.policy.objects import (
    RawObject,
    field,
    is_deleting,
    list_field,
    name,
    namespace,
    str_field,
    uid,
)
from kustodian.policy.orphans.detect import (
    disk_condition,
    is_orphan_candidate,
    same_disk_path,
    tracked_dir_names,
)
from kustodian.policy.orphans.model import DiskScan
from kustodian.policy.orphans.names import normalize_disk_path, safe_target
from kustodian.policy.orphans.ownership import Ownership, deferred_delete, longhorn_disk_verdict
from kustodian.policy.orphans.reasons import OrphanReason
from kustodian.policy.orphans.resource import (
    CONDITION_DATA_CLEANABLE,
    PARAM_DATA_NAME,
    PARAM_DISK_NAME,
    PARAM_DISK_PATH,
    PARAM_DISK_UUID,
    has_finalizer,
    keep_data,
    orphan_node,
    orphan_param,
)
from kustodian.policy.timestamps import format_rfc3339, parse_rfc3339


@dataclass(frozen=True)
class RemoveDir:
    """Remove ``<disk_path>/replicas/<dir_name>`` (``path``), re-verifying the disk UUID first.

    Drop the finalizer only once the removal reports success (or the directory is
    already gone); otherwise re-evaluate.
    """

    disk_path: str
    dir_name: str
    expected_uuid: str
    path: str


@dataclass(frozen=True)
class DropFinalizer:
    """Release the Orphan without touching any data."""

    reason: OrphanReason
    message: str = ""


@dataclass(frozen=True)
class DeleteOrphan:
    """Delete the Orphan object (``preconditions.uid == uid``): auto-deletion."""

    namespace: str
    name: str
    uid: str
    reason: OrphanReason = OrphanReason.AUTO_DELETE


@dataclass(frozen=True)
class Wait:
    requeue_at: datetime
    reason: OrphanReason = OrphanReason.GRACE_PENDING


@dataclass(frozen=True)
class NoAction:
    reason: OrphanReason
    message: str = ""


OrphanAction = RemoveDir | DropFinalizer | DeleteOrphan | Wait | NoAction


@dataclass(frozen=True)
class Cleanability:
    cleanable: bool
    reason: OrphanReason
    message: str = ""
    target: RemoveDir | None = None


@dataclass(frozen=True)
class OrphanDecision:
    """What to do with one Orphan, and the ``DataCleanable`` condition to report."""

    action: OrphanAction
    condition: Mapping[str, str]


def _not(reason: OrphanReason, message: str) -> Cleanability:
    return Cleanability(False, reason, message)


def data_cleanability(
    orphan: RawObject,
    scans_now: Sequence[DiskScan],
    owners_now: Ownership,
    *,
    node: str,
) -> Cleanability:
    """May the agent on ``node`` remove the directory behind ``orphan`` right now?"""
    owner = orphan_node(orphan)
    if not owner or owner != node:
        return _not(
            OrphanReason.NODE_UNAVAILABLE, f"data is on node {owner or '<unset>'}, not on {node or '<unset>'}"
        )
    data_name = orphan_param(orphan, PARAM_DATA_NAME)
    disk_path = orphan_param(orphan, PARAM_DISK_PATH)
    disk_uuid = orphan_param(orphan, PARAM_DISK_UUID)
    missing = [
        k
        for k, v in ((PARAM_DATA_NAME, data_name), (PARAM_DISK_PATH, disk_path), (PARAM_DISK_UUID, disk_uuid))
        if not v
    ]
    if missing:
        return _not(OrphanReason.PARAMETERS_INVALID,
                    "; ".join(f"spec.parameters.{k}: required" for k in missing))
    path = safe_target(disk_path, data_name)
    if path is None:
        return _not(OrphanReason.DATA_NAME_INVALID,
                    f"{disk_path!r}/{data_name!r} is not a replica directory path")
    if not owners_now.known or owners_now.node is None or owners_now.tracked is None:
        no_node = owners_now.reason == OrphanReason.LONGHORN_NODE_MISSING
        return _not(OrphanReason.NODE_UNAVAILABLE if no_node else owners_now.reason, owners_now.message)
    scan = next((s for s in scans_now if same_disk_path(s.disk_path, disk_path)), None)
    if scan is None:
        return _not(OrphanReason.DISK_INVALID, f"disk {disk_path} is not configured on node {node}")
    verdict = longhorn_disk_verdict(owners_now.node, scan)
    if not verdict.ok:
        return _not(verdict.reason, verdict.message)
    lh_disk = owners_now.node.disk_at(disk_path)
    disk_name = orphan_param(orphan, PARAM_DISK_NAME)
    if lh_disk is None or lh_disk.uuid != disk_uuid or (disk_name and lh_disk.name != disk_name):
        now_there = f"{lh_disk.name} ({lh_disk.uuid})" if lh_disk else "no disk"
        return _not(OrphanReason.DISK_CHANGED,
                    f"the orphan was found on disk {disk_name or '?'} ({disk_uuid}) at {disk_path}; "
                    f"Longhorn now has {now_there} there")
    if scan.expected_uuid != disk_uuid or (scan.found_uuid is not None and scan.found_uuid != disk_uuid):
        return _not(
            OrphanReason.DISK_CHANGED,
            f"disk at {disk_path} is now {scan.found_uuid or scan.expected_uuid}, "
            f"the orphan was found on {disk_uuid}",
        )
    condition = disk_condition(scan, scans_now)
    if not condition.ok:
        return _not(OrphanReason.DISK_INVALID, f"{condition.reason}: {condition.message}")
    entry = scan.entries.get(data_name)
    if entry is None or not entry.is_dir or entry.is_symlink:
        return _not(OrphanReason.DATA_MISSING, f"{path} is no longer a directory")
    if not is_orphan_candidate(entry):
        return _not(OrphanReason.DATA_INVALID,
                    f"{path} has no valid volume.meta: {entry.error or 'unreadable'}")
    if data_name in tracked_dir_names(owners_now.tracked):
        return _not(OrphanReason.DATA_TRACKED, f"a Replica uses {data_name} again")
    disk = normalize_disk_path(disk_path) or disk_path
    return Cleanability(
        True, OrphanReason.CLEANABLE, f"{path} can be removed", RemoveDir(disk, data_name, disk_uuid, path)
    )


def data_cleanable_condition(
    cleanability: Cleanability, *, now: datetime, previous: Sequence[Any] = ()
) -> dict[str, str]:
    """The ``DataCleanable`` condition; ``lastTransitionTime`` only moves when the status flips."""
    status = "True" if cleanability.cleanable else "False"
    before = next((c for c in previous if field(c, "type") == CONDITION_DATA_CLEANABLE), None)
    since = str_field(before, "lastTransitionTime")
    if str_field(before, "status") != status or not since:
        since = format_rfc3339(now)
    return {
        "type": CONDITION_DATA_CLEANABLE,
        "status": status,
        "reason": str(cleanability.reason),
        "message": cleanability.message,
        "lastTransitionTime": since,
    }


def cleanup_decision(
    orphan_obj: RawObject,
    scans_now: Sequence[DiskScan],
    owners_now: Ownership,
    *,
    node: str,
    auto_delete: bool,
    grace: timedelta,
    now: datetime,
    agent_since: datetime | None = None,
    held_disks: Mapping[str, str] | None = None,
) -> OrphanDecision:
    """The node agent's step for one Orphan, from a fresh scan and a fresh ownership verdict.

    ``agent_since`` is when this agent started watching (deletes requested before are
    deferred ones); ``held_disks`` maps a normalized disk path to the mass-orphan brake's
    message for disks whose auto-deletion is held.
    """
    cleanability = data_cleanability(orphan_obj, scans_now, owners_now, node=node)
    condition = data_cleanable_condition(
        cleanability, now=now, previous=list_field(orphan_obj, "status", "conditions")
    )

    if is_deleting(orphan_obj):
        if not has_finalizer(orphan_obj):
            return OrphanDecision(NoAction(OrphanReason.NO_FINALIZER), condition)
        if keep_data(orphan_obj):
            return OrphanDecision(DropFinalizer(OrphanReason.KEEP_DATA, "kustodian.io/keep-data is set"),
                                  condition)
        deferred = deferred_delete(
            parse_rfc3339(str_field(orphan_obj, "metadata", "deletionTimestamp")),
            owners_now.node if owners_now.known else None,
            agent_since,
        )
        if deferred:
            return OrphanDecision(DropFinalizer(OrphanReason.DEFERRED_DELETE, deferred), condition)
        if cleanability.target is not None:
            return OrphanDecision(cleanability.target, condition)
        return OrphanDecision(DropFinalizer(cleanability.reason, cleanability.message), condition)

    if not auto_delete:
        return OrphanDecision(NoAction(OrphanReason.AUTO_DELETE_DISABLED), condition)
    if keep_data(orphan_obj):
        # Auto-deleting it would only drop the finalizer, then the next scan would
        # recreate the Orphan without the annotation: keep it instead.
        return OrphanDecision(NoAction(OrphanReason.KEEP_DATA), condition)
    created = parse_rfc3339(str_field(orphan_obj, "metadata", "creationTimestamp"))
    if created is None:
        return OrphanDecision(NoAction(OrphanReason.NO_CREATION_TIMESTAMP), condition)
    if now < created + grace:
        return OrphanDecision(Wait(created + grace), condition)
    if not cleanability.cleanable:
        return OrphanDecision(NoAction(cleanability.reason, cleanability.message), condition)
    held = (held_disks or {}).get(normalize_disk_path(orphan_param(orphan_obj, PARAM_DISK_PATH)) or "")
    if held:
        return OrphanDecision(NoAction(OrphanReason.MASS_ORPHAN_BRAKE, held), condition)
    if not uid(orphan_obj):
        return OrphanDecision(NoAction(OrphanReason.MISSING_UID, "metadata.uid: absent"), condition)
    return OrphanDecision(DeleteOrphan(namespace(orphan_obj), name(orphan_obj), uid(orphan_obj)), condition)
