"""What node cleanup does with a stale local PV and its claim.

Upstream runs two routines; their decisions are here, and :mod:`.inputs` runs both over one
gathered input (:func:`~.inputs.decide_node_cleanup`):

* the **claim step** (:func:`pvc_cleanup_decision`) waits ``delay`` after a PV's node is
  first seen missing, warning on the PVC meanwhile (:class:`WarnNodeGone`), then deletes the
  bound PVC (:class:`DeleteClaim`) so that its StatefulSet can recreate it on a live node;
* the **volume step** (:func:`pv_delete_decision`) deletes stale PVs nobody uses any more
  (``Available``, or ``Released`` with reclaim policy ``Delete``: :class:`DeleteVolume`).

Upstream keeps its timer in memory: a restart forgets it (the PVC then waits a whole
new delay) or, worse, a resync re-fires it.  Here the first sighting is written on the
PV (``kustodian.io/node-missing-since``) and the deadline is always that stamp plus
``delay``; the decision returns the annotation patch to apply *before* acting on the
action.  (Where the ServiceAccount may not patch PVs, as with upstream's ClusterRole, the
controller keeps the same annotations in memory and the decision is the same.)

A stamp only proves the node stayed gone while somebody watched.  A node that came back
and was lost again while no controller ran (or while its Node watch had a gap) leaves an old
stamp that would delete at once, however short the outage.  So the decision is told since
when the deciding process has watched the Nodes without a gap (``watched_since``: its first
full list of Nodes, or its last re-list), and a stamp older than that is in doubt: the timer
restarts from now.  The PVC is therefore never deleted earlier than ``delay`` after the
controller could last see the node absent continuously; a restart or a watch gap restarts
the delay, it never shortens it.  Every pass that waits also refreshes
``kustodian.io/node-missing-checked`` (at most every ``CHECK_REFRESH``); where no gap-free watch
vouches for a stamp (``watched_since`` unknown: a plan made from listed objects), a stamp whose
last check is older than ``CONTINUITY`` is in doubt too, and so is, always, a stamp with no valid
check at all (written by an older version, or by hand).  An old check never overrules the
watch: a process that watched the Nodes without a gap since before the stamp knows the node
stayed gone, however long its queue kept it from refreshing the check (a zone of 30,000 PVs
lost at once takes minutes to go through; a check that restarted the timer there would restart
it for ever, and no PVC would be deleted).  The pass that deletes writes no check: the PVC goes.

The Warning Event says what upstream's says, byte for byte: the configured delay in Go's
``time.Duration.String`` form (``PVC will be cleaned up in 1m0s``), whatever is left of it
(upstream's controller formats ``pvcDeletionDelay.String()``, never a remaining time), so
alert rules written for upstream's message keep matching.

Every check that guards the delete (node still gone, PVC still bound to this very PV, PVC
not already going away) is re-made in the same call that returns the delete, and the
delete carries the PVC's UID as a precondition.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from kustodian.policy.node_cleanup.classify import ANNOTATION_NODE_UID, PVStatus, classify_pv
from kustodian.policy.node_cleanup.nodes import NodeDirectory
from kustodian.policy.node_cleanup.reasons import NodeCleanupReason
from kustodian.policy.node_cleanup.timefmt import format_rfc3339, go_duration, parse_rfc3339
from kustodian.policy.objects import RawObject, is_deleting, map_field, name, namespace, str_field, uid

ANNOTATION_NODE_MISSING_SINCE = "kustodian.io/node-missing-since"
ANNOTATION_NODE_MISSING_CHECKED = "kustodian.io/node-missing-checked"
# a pass refreshes the check at least this often while it waits; a check older than
# CONTINUITY means nobody watched for a while: the stamp is in doubt and the timer restarts
CHECK_REFRESH = timedelta(seconds=30)
CONTINUITY = timedelta(minutes=2)
EVENT_REASON_NODE_DELETED = "ReferencedNodeDeleted"


@dataclass(frozen=True)
class KeepClaim:
    """The claim is left alone this pass, and why (the PV's timer may still be written)."""

    reason: NodeCleanupReason
    detail: str = ""


@dataclass(frozen=True)
class WarnNodeGone:
    """Emit a Warning Event on the PVC (its node is gone) and reconcile again at ``requeue_at``."""

    namespace: str
    name: str
    uid: str
    message: str
    requeue_at: datetime
    event_reason: str = EVENT_REASON_NODE_DELETED


@dataclass(frozen=True)
class DeleteClaim:
    """Delete the PVC with ``preconditions.uid == uid``.

    ``warning``: the ``ReferencedNodeDeleted`` message to emit on the PVC first, when the timer
    starts and ends in this very pass (a zero delay): upstream warns whenever it starts a timer.
    """

    namespace: str
    name: str
    uid: str
    reason: NodeCleanupReason = NodeCleanupReason.DELAY_ELAPSED
    warning: str | None = None


ClaimAction = KeepClaim | WarnNodeGone | DeleteClaim


@dataclass(frozen=True)
class ClaimCleanupDecision:
    """What happens to a stale PV's claim in one pass.

    ``pv_annotations`` is a merge patch for the PV's annotations (``None`` removes the
    key); apply it first, then the action.
    """

    action: ClaimAction
    pv_annotations: Mapping[str, str | None] = field(default_factory=dict)

    @property
    def requeue_at(self) -> datetime | None:
        return self.action.requeue_at if isinstance(self.action, WarnNodeGone) else None


@dataclass(frozen=True)
class KeepVolume:
    """The PV itself is left alone this pass, and why."""

    reason: NodeCleanupReason
    detail: str = ""


@dataclass(frozen=True)
class DeleteVolume:
    """Delete the PV with ``preconditions.uid == uid``."""

    name: str
    uid: str
    reason: NodeCleanupReason


VolumeAction = KeepVolume | DeleteVolume


def missing_since(pv: RawObject) -> datetime | None:
    """The recorded first sighting of the PV's node missing, if a valid one is recorded."""
    return parse_rfc3339(map_field(pv, "metadata", "annotations").get(ANNOTATION_NODE_MISSING_SINCE))


def node_deleted_message(delay: timedelta) -> str:
    """Upstream's ``ReferencedNodeDeleted`` message for the configured ``delay``, byte for byte.

    Upstream (``pkg/node-cleanup/controller``) writes ``fmt.Sprintf("PVC is tied to a deleted
    Node. PVC will be cleaned up in %s if the Node doesn't come back",
    c.pvcDeletionDelay.String())``: the flag's value, not the time left.
    """
    return (
        "PVC is tied to a deleted Node. PVC will be cleaned up in "
        f"{go_duration(delay)} if the Node doesn't come back"
    )


def _claim_problem(pv: RawObject, pvc: RawObject | None) -> KeepClaim | None:
    claim_uid = str_field(pv, "spec", "claimRef", "uid")
    if not str_field(pv, "spec", "claimRef", "name"):
        return KeepClaim(NodeCleanupReason.NO_CLAIM, "spec.claimRef: absent")
    if pvc is None:
        return KeepClaim(NodeCleanupReason.CLAIM_NOT_FOUND, "the claim named by spec.claimRef does not exist")
    if not uid(pvc) or not claim_uid:
        return KeepClaim(NodeCleanupReason.MISSING_UID, "claim or claimRef has no uid")
    if str_field(pvc, "spec", "volumeName") != name(pv) or claim_uid != uid(pvc):
        return KeepClaim(NodeCleanupReason.CLAIM_NOT_BOUND,
                         f"PVC {namespace(pvc)}/{name(pvc)} is not bound to PV {name(pv)}")
    if is_deleting(pvc):
        return KeepClaim(NodeCleanupReason.CLAIM_DELETING, "PVC already has a deletionTimestamp")
    return None


def _uid_patch(status: PVStatus) -> dict[str, str | None]:
    return {ANNOTATION_NODE_UID: status.record_node_uid} if status.record_node_uid else {}


def pvc_cleanup_decision(
    pv: RawObject,
    pvc: RawObject | None,
    nodes: NodeDirectory,
    *,
    opted_in_classes: Collection[str],
    delay: timedelta,
    now: datetime,
    first_missing_at: datetime | None,
    detect_recreated: bool = False,
    continuity: timedelta | None = None,
    watched_since: datetime | None = None,
) -> ClaimCleanupDecision:
    """The PVC cleanup controller's step for ``pv`` and the claim its ``claimRef`` names.

    ``first_missing_at`` is :func:`missing_since` of the PV as read from the cache;
    when it is ``None`` but the PV carries a valid stamp, the stamp is used, so that a
    caller that forgets to pass it cannot restart the timer.  ``continuity``: see the
    module docstring; the controller passes :data:`CONTINUITY`.  ``None`` trusts any
    valid stamp and writes no check (the plain timer, as the table tests drive it).
    ``watched_since``: since when the deciding process has watched the Nodes without a gap;
    a stamp older than that restarts the timer (``None``: no such rule, as the table tests).
    """
    status = classify_pv(pv, nodes, opted_in_classes, detect_recreated=detect_recreated)
    return claim_step(pv, pvc, status, delay=delay, now=now, first_missing_at=first_missing_at,
                      continuity=continuity, watched_since=watched_since)


def claim_step(pv: RawObject, pvc: RawObject | None, status: PVStatus, *, delay: timedelta, now: datetime,
               first_missing_at: datetime | None, continuity: timedelta | None,
               watched_since: datetime | None = None) -> ClaimCleanupDecision:
    """:func:`pvc_cleanup_decision` for a PV already classified (``status``)."""
    patch = _uid_patch(status)
    annotations = map_field(pv, "metadata", "annotations")
    if not status.stale:
        if status.reason == NodeCleanupReason.NODE_EXISTS:
            for key in (ANNOTATION_NODE_MISSING_SINCE, ANNOTATION_NODE_MISSING_CHECKED):
                if annotations.get(key) is not None:
                    patch[key] = None
        return ClaimCleanupDecision(KeepClaim(status.reason, status.detail), patch)

    since = first_missing_at or missing_since(pv)
    checked = parse_rfc3339(annotations.get(ANNOTATION_NODE_MISSING_CHECKED))
    if since is not None and continuity is not None and (
            checked is None or (watched_since is None and now - checked > continuity)):
        since = None  # nobody watched in between: the node may have come back; restart, never shorten
    if since is not None and watched_since is not None and since < watched_since:
        since = None  # stamped before this process watched without a gap: not proof; restart
    if since is None:
        # the stamp has whole seconds: round up, so a restart can lengthen the delay by
        # under a second but never shorten it
        stamp = now if not now.microsecond else now.replace(microsecond=0) + timedelta(seconds=1)
        since = stamp
        patch[ANNOTATION_NODE_MISSING_SINCE] = format_rfc3339(stamp)
        if continuity is not None:
            patch[ANNOTATION_NODE_MISSING_CHECKED] = format_rfc3339(stamp)
            checked = stamp
    elif continuity is not None and (checked is None or now - checked >= CHECK_REFRESH):
        patch[ANNOTATION_NODE_MISSING_CHECKED] = format_rfc3339(now)
        checked = now
    deadline = since + delay

    problem = _claim_problem(pv, pvc)
    if problem is not None or pvc is None:
        return ClaimCleanupDecision(problem or KeepClaim(NodeCleanupReason.CLAIM_NOT_FOUND), patch)
    if now < deadline:
        # wake up at the deadline, or earlier to refresh the check while waiting: a check
        # at most CONTINUITY/2 old at the deadline leaves room for a late timer
        wake = deadline
        if continuity is not None and checked is not None and deadline - checked > continuity / 2:
            wake = min(deadline, checked + CHECK_REFRESH)
        warn = WarnNodeGone(
            namespace(pvc), name(pvc), uid(pvc), node_deleted_message(delay), wake
        )
        return ClaimCleanupDecision(warn, patch)
    started = ANNOTATION_NODE_MISSING_SINCE in patch  # the timer (re)starts in this pass
    warning = node_deleted_message(delay) if started else None
    if not started:  # the PVC goes now: a refreshed check would be a write for nothing
        patch.pop(ANNOTATION_NODE_MISSING_CHECKED, None)
    return ClaimCleanupDecision(DeleteClaim(namespace(pvc), name(pvc), uid(pvc), warning=warning), patch)


def pv_delete_decision(
    pv: RawObject,
    nodes: NodeDirectory,
    opted_in_classes: Collection[str],
    *,
    detect_recreated: bool = False,
) -> VolumeAction:
    """The volume step (upstream's deleter): delete stale PVs that no claim uses any more."""
    return volume_step(pv, classify_pv(pv, nodes, opted_in_classes, detect_recreated=detect_recreated))


def volume_step(pv: RawObject, status: PVStatus) -> VolumeAction:
    """:func:`pv_delete_decision` for a PV already classified (``status``)."""
    if not status.stale:
        return KeepVolume(status.reason, status.detail)
    if is_deleting(pv):
        return KeepVolume(NodeCleanupReason.PV_DELETING, "PV already has a deletionTimestamp")
    if not uid(pv):
        return KeepVolume(NodeCleanupReason.MISSING_UID, "PV has no metadata.uid")
    phase = str_field(pv, "status", "phase")
    if phase == "Available":
        return DeleteVolume(name(pv), uid(pv), status.reason)
    if phase == "Released":
        policy = str_field(pv, "spec", "persistentVolumeReclaimPolicy")
        if policy == "Delete":
            return DeleteVolume(name(pv), uid(pv), status.reason)
        return KeepVolume(NodeCleanupReason.RECLAIM_NOT_DELETE,
                          f"Released with reclaim policy {policy or '<unset>'}")
    return KeepVolume(NodeCleanupReason.PHASE_NOT_DELETABLE, f"phase {phase or '<unset>'}")
