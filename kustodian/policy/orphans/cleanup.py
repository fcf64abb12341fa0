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
* looked at just now (a :class:`DirProbe`, never the cached scan): its ``volume.meta`` read
  again is still valid, and nothing in it was written within ``write_grace`` (an engine
  writing a replica modifies its head file all the time; data being written is live,
  whatever the ownership sources say),
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
from dataclasses import field as dc_field
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
from kustodian.policy.orphans.model import DirProbe, DiskScan
from kustodian.policy.orphans.names import normalize_disk_path, safe_target
from kustodian.policy.orphans.ownership import Ownership, deferred_delete, longhorn_disk_verdict
from kustodian.policy.orphans.quarantine import (
    STATE_QUARANTINED,
    STATE_REPORTED,
    QuarantinePolicy,
    QuarantineProbe,
    quarantine_deadline,
    quarantine_path,
    restore_request,
)
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
    """Take ``<disk_path>/replicas/<dir_name>`` (``path``) away, re-verifying the disk UUID first.

    The node agent moves it into quarantine (:mod:`policy.orphans.quarantine`): one rename on
    the same filesystem, after the same checks a removal makes; the finalizer stays until
    the quarantined data is removed for good or restored.
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


@dataclass(frozen=True)
class PurgeQuarantined:
    """The retention has passed: remove ``<disk>/kustodian-quarantine/<dir_name>`` for good (the disk
    UUID re-verified, no mount or symlink crossed), then drop the finalizer."""

    disk_path: str
    dir_name: str
    expected_uuid: str
    path: str


@dataclass(frozen=True)
class RestoreDir:
    """Rename the quarantined directory back to ``<disk>/replicas/<dir_name>`` (answering restore
    ``request``), every check made again right before; then drop the finalizer."""

    disk_path: str
    dir_name: str
    expected_uuid: str
    path: str
    request: str


@dataclass(frozen=True)
class RefuseRestore:
    """Answer restore ``request`` with a refusal; nothing is moved."""

    request: str
    reason: OrphanReason
    message: str


@dataclass(frozen=True)
class HoldQuarantined:
    """Keep the quarantined data; look again at ``remove_at`` (``None``: kept, keep-data is set)."""

    remove_at: datetime | None
    message: str = ""


OrphanAction = (RemoveDir | DropFinalizer | DeleteOrphan | Wait | NoAction | PurgeQuarantined | RestoreDir
                | RefuseRestore | HoldQuarantined)


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
    status: Mapping[str, str | None] = dc_field(default_factory=dict)  # status fields to merge (state, ...)


def _not(reason: OrphanReason, message: str) -> Cleanability:
    return Cleanability(False, reason, message)


def _probe_verdict(probe: DirProbe, path: str, write_grace: timedelta) -> Cleanability | None:
    """Why the directory looked at just now must stay, or ``None``."""
    if not probe.exists:
        return _not(OrphanReason.DATA_MISSING, f"{path} is no longer a directory")
    if probe.error:
        return _not(OrphanReason.DATA_INVALID, f"{path} cannot be looked at now: {probe.error}")
    if probe.meta_error:
        return _not(OrphanReason.DATA_INVALID,
                    f"{path}: volume.meta read again is not valid ({probe.meta_error}); not removed")
    if probe.idle is None:
        return _not(OrphanReason.DATA_IN_USE, f"{path}: when it was last written cannot be told; not removed")
    if probe.idle < write_grace.total_seconds():
        ago = f"{probe.idle:.0f}s ago" if probe.idle >= 0 else "in the future"
        return _not(OrphanReason.DATA_IN_USE,
                    f"{path} was written {ago}, within the write grace of {write_grace}: "
                    "live data is never removed")
    return None


def data_cleanability(
    orphan: RawObject,
    scans_now: Sequence[DiskScan],
    owners_now: Ownership,
    *,
    node: str,
    probe: DirProbe | None = None,
    write_grace: timedelta = timedelta(0),
) -> Cleanability:
    """May the agent on ``node`` remove the directory behind ``orphan`` right now?

    ``probe`` is the directory looked at just now (``None``: not looked at, only for callers
    that judge a scan alone; the node agent always passes one).
    """
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
    if probe is not None:
        live = _probe_verdict(probe, path, write_grace)
        if live is not None:
            return live
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
    probe: DirProbe | None = None,
    write_grace: timedelta = timedelta(0),
    quarantine: QuarantineProbe | None = None,
    retention: QuarantinePolicy | None = None,
) -> OrphanDecision:
    """The node agent's step for one Orphan, from a fresh scan and a fresh ownership verdict.

    ``agent_since`` is when this agent started watching (deletes requested before are
    deferred ones); ``held_disks`` maps a normalized disk path to the mass-orphan brake's
    message for disks whose auto-deletion is held; ``probe`` the directory looked at just
    now and ``write_grace`` how long ago it must last have been written (see
    :func:`data_cleanability`); ``quarantine`` the Orphan's directory looked at in quarantine just
    now and ``retention`` how long quarantined data is kept (see :mod:`policy.orphans.quarantine`).
    """
    cleanability = data_cleanability(orphan_obj, scans_now, owners_now, node=node, probe=probe,
                                     write_grace=write_grace)
    condition = data_cleanable_condition(
        cleanability, now=now, previous=list_field(orphan_obj, "status", "conditions")
    )

    if is_deleting(orphan_obj):
        if not has_finalizer(orphan_obj):
            return OrphanDecision(NoAction(OrphanReason.NO_FINALIZER), condition)
        if quarantine is not None and quarantine.exists:
            return _quarantined(orphan_obj, scans_now, owners_now, quarantine,
                                retention=retention or QuarantinePolicy(), now=now, condition=condition)
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

    return _reported(_live_decision(orphan_obj, cleanability, condition, auto_delete=auto_delete, grace=grace,
                                    now=now, held_disks=held_disks))


def _reported(decision: OrphanDecision) -> OrphanDecision:
    return OrphanDecision(decision.action, decision.condition,
                          {"state": STATE_REPORTED, "quarantinedAt": None, "removeAfter": None})


def _live_decision(orphan_obj: RawObject, cleanability: Cleanability, condition: dict[str, str], *,
                   auto_delete: bool, grace: timedelta, now: datetime,
                   held_disks: Mapping[str, str] | None) -> OrphanDecision:
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


def _restore_refusal(orphan: RawObject, scans_now: Sequence[DiskScan], owners_now: Ownership,
                     quarantine: QuarantineProbe) -> Cleanability | None:
    """Why the quarantined directory of ``orphan`` may not go back now, or ``None``."""
    data_name = orphan_param(orphan, PARAM_DATA_NAME)
    disk_path = orphan_param(orphan, PARAM_DISK_PATH)
    disk_uuid = orphan_param(orphan, PARAM_DISK_UUID)
    back = safe_target(disk_path, data_name) or f"{disk_path}/replicas/{data_name}"
    if quarantine.error:
        return _not(OrphanReason.DATA_INVALID,
                    f"the quarantined directory cannot be looked at: {quarantine.error}")
    if quarantine.original_exists:
        return _not(OrphanReason.DATA_IN_USE, f"{back} exists again: something now lives there; not restored")
    if not owners_now.known or owners_now.tracked is None:
        return _not(owners_now.reason,
                    f"ownership unknown ({owners_now.message}); not restored, ask again later")
    if data_name in tracked_dir_names(owners_now.tracked):
        return _not(OrphanReason.DATA_TRACKED, f"a Replica names {data_name} now; not restored")
    scan = next((s for s in scans_now if same_disk_path(s.disk_path, disk_path)), None)
    if scan is None:
        return _not(OrphanReason.DISK_INVALID, f"disk {disk_path} is not configured here")
    if scan.expected_uuid != disk_uuid or (scan.found_uuid is not None and scan.found_uuid != disk_uuid):
        return _not(OrphanReason.DISK_CHANGED,
                    f"disk at {disk_path} is now {scan.found_uuid or scan.expected_uuid}, "
                    f"the data was on {disk_uuid}")
    condition = disk_condition(scan, scans_now)
    if not condition.ok:
        return _not(OrphanReason.DISK_INVALID, f"{condition.reason}: {condition.message}")
    return None


def _quarantined(orphan: RawObject, scans_now: Sequence[DiskScan], owners_now: Ownership,
                 quarantine: QuarantineProbe, *, retention: QuarantinePolicy, now: datetime,
                 condition: dict[str, str]) -> OrphanDecision:
    """A deleting Orphan whose directory sits in quarantine: restore it on request, remove it for good
    once the retention has passed, else keep it until then."""
    data_name = orphan_param(orphan, PARAM_DATA_NAME)
    disk = normalize_disk_path(orphan_param(orphan, PARAM_DISK_PATH)) or orphan_param(orphan, PARAM_DISK_PATH)
    disk_uuid = orphan_param(orphan, PARAM_DISK_UUID)
    held_at = quarantine_path(disk, data_name) or f"{disk}/?/{data_name}"
    since = parse_rfc3339(str_field(orphan, "status", "quarantinedAt")) or now
    deadline = quarantine_deadline(since, retention, quarantine.free_share)
    status: dict[str, str | None] = {"state": STATE_QUARANTINED, "quarantinedAt": format_rfc3339(since),
                                     "removeAfter": format_rfc3339(deadline)}
    request = restore_request(orphan)
    if request:
        refusal = _restore_refusal(orphan, scans_now, owners_now, quarantine)
        if refusal is not None:
            return OrphanDecision(RefuseRestore(request, refusal.reason, refusal.message), condition, status)
        back = safe_target(disk, data_name) or ""
        return OrphanDecision(RestoreDir(disk, data_name, disk_uuid, back, request), condition, status)
    if keep_data(orphan):
        # the record released, the data kept where it is: never removed, no longer reported
        kept = (f"kustodian.io/keep-data is set: the record is released and the data stays in {held_at} "
                "(not scanned; move it back or remove it by hand)")
        return OrphanDecision(DropFinalizer(OrphanReason.KEEP_DATA, kept), condition,
                              {**status, "removeAfter": None})
    if now >= deadline:
        return OrphanDecision(PurgeQuarantined(disk, data_name, disk_uuid, held_at), condition, status)
    return OrphanDecision(HoldQuarantined(deadline, f"{held_at} kept until {format_rfc3339(deadline)}"),
                          condition, status)


def agent_gone(node: str, renew_time: str, lease_seconds: object, now: datetime) -> str:
    """Why the agent of ``node`` counts as gone by its heartbeat, or ``""``.

    ``renew_time`` is the heartbeat Lease's ``spec.renewTime`` and ``lease_seconds`` its
    ``spec.leaseDurationSeconds``; a heartbeat that cannot be read says nothing (``""``).
    """
    renewed = parse_rfc3339(renew_time)
    if renewed is None or not isinstance(lease_seconds, int) or isinstance(lease_seconds, bool) \
            or lease_seconds <= 0:
        return ""
    expires = renewed + timedelta(seconds=lease_seconds)
    if now <= expires:
        return ""
    return (f"the node agent of {node} last renewed its heartbeat at {format_rfc3339(renewed)} "
            f"(valid {lease_seconds}s): the node or its agent is gone, nothing checks this data; "
            "a delete is answered when the agent returns (the data kept) or the node is removed from "
            "Longhorn (the Orphan released, the data left)")


def agent_gone_condition(orphan: RawObject, why: str, now: datetime) -> dict[str, str] | None:
    """The ``DataCleanable=False`` (``NodeAgentGone``) condition to write on ``orphan``, or ``None``
    when it already says so."""
    previous = list_field(orphan, "status", "conditions")
    current = next((c for c in previous if field(c, "type") == CONDITION_DATA_CLEANABLE), None)
    reason = str_field(current, "reason")
    if str_field(current, "status") == "False" and reason == OrphanReason.NODE_AGENT_GONE:
        return None
    return data_cleanable_condition(Cleanability(False, OrphanReason.NODE_AGENT_GONE, why), now=now,
                                    previous=previous)
