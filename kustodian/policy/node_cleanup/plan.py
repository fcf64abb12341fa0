"""``kustodian node-cleanup plan``: what node cleanup would clean, and when, as rows.

A plan is the controller's own decision (:func:`~.inputs.decide_node_cleanup`) over the same
:class:`~.inputs.NodeCleanupInput`, read for what it says rather than acted on, so the plan cannot
drift from what the controller does: the claim's deadline is the node-missing stamp the decision
uses (the one on the PV, or the one it would write now) plus the delay, and every PV left alone
carries the decision's own reason.

The plan is made by a process that has watched nothing, as a controller that starts now: a stamp
whose last check is older than ``CONTINUITY`` (no controller is counting) restarts the timer at
``now``, exactly as the controller would; a stamp the running controller refreshes is used as it
is.  A controller that may not patch PVs keeps its timer in memory, where no plan can read it: the
plan then shows the latest the claim can go (``now`` plus the delay), never an earlier time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from kustodian.policy.node_cleanup.affinity import affinity_node_names
from kustodian.policy.node_cleanup.classify import classify_pv
from kustodian.policy.node_cleanup.decisions import (
    ANNOTATION_NODE_MISSING_SINCE,
    DeleteClaim,
    DeleteVolume,
    KeepClaim,
    WarnNodeGone,
    missing_since,
)
from kustodian.policy.node_cleanup.inputs import NodeCleanupInput, decide_node_cleanup
from kustodian.policy.node_cleanup.reasons import NodeCleanupReason
from kustodian.policy.node_cleanup.timefmt import parse_rfc3339
from kustodian.policy.objects import name, namespace, str_field

__all__ = ["ClaimPlan", "PlannedVolume", "VolumePlan", "plan_node_cleanup", "plan_volume"]


class ClaimPlan(StrEnum):
    DELETE = "Delete"  # the delay has passed: the next pass deletes the PVC
    WAIT = "Wait"  # the node is gone: the PVC is deleted at ``eligible_at`` if it stays gone
    KEEP = "Keep"  # never, as things are (``reason``)


class VolumePlan(StrEnum):
    DELETE = "Delete"  # unused and stale: the next pass deletes the PV
    AFTER_CLAIM = "AfterClaim"  # deleted once its claim is gone and it is Released (reclaim policy Delete)
    KEEP = "Keep"


@dataclass(frozen=True)
class PlannedVolume:
    """One local PV: what happens to its claim and to itself, when, and why."""

    volume: str
    nodes: tuple[str, ...]
    claim_namespace: str
    claim_name: str
    claim: ClaimPlan
    # when the first delete may be made: the PVC's (the node-missing stamp + the delay), or, for an
    # unused stale PV, the PV's (now); None: nothing is deleted as things are
    eligible_at: datetime | None
    timer_starts_now: bool  # no usable stamp on the PV: the controller would start the delay now
    volume_action: VolumePlan
    reason: NodeCleanupReason
    detail: str

    @property
    def cleaned(self) -> bool:
        return self.claim is not ClaimPlan.KEEP or self.volume_action is not VolumePlan.KEEP


def plan_volume(observed: NodeCleanupInput, now: datetime) -> PlannedVolume:
    """The controller's decision for one PV, as a plan row."""
    decision = decide_node_cleanup(observed, now)
    pv = observed.volume
    action = decision.claim.action
    written = decision.claim.pv_annotations.get(ANNOTATION_NODE_MISSING_SINCE)
    since = parse_rfc3339(written) if written else missing_since(pv)
    deadline = since + observed.rules.delay if since is not None else None
    claim_ns = str_field(pv, "spec", "claimRef", "namespace")
    claim_name = str_field(pv, "spec", "claimRef", "name")
    if observed.claim is not None:
        claim_ns, claim_name = namespace(observed.claim), name(observed.claim)
    reason: NodeCleanupReason
    detail = ""
    if isinstance(action, DeleteClaim):
        claim, eligible, reason = ClaimPlan.DELETE, deadline, action.reason
    elif isinstance(action, WarnNodeGone):  # why the PV is stale: its node is missing, or recreated
        rules = observed.rules
        reason = classify_pv(pv, observed.nodes, rules.opted_in_classes,
                             detect_recreated=rules.detect_recreated).reason
        claim, eligible = ClaimPlan.WAIT, deadline
    else:
        assert isinstance(action, KeepClaim)
        claim, eligible, reason, detail = ClaimPlan.KEEP, None, action.reason, action.detail
    volume = decision.volume
    if isinstance(volume, DeleteVolume):
        volume_action = VolumePlan.DELETE
        if claim is ClaimPlan.KEEP:  # the PV alone, unused: it goes on the next pass
            eligible, reason = now, volume.reason
            detail = f"PV {str_field(pv, 'status', 'phase')}: no claim uses it"
    elif claim is not ClaimPlan.KEEP and str_field(pv, "spec", "persistentVolumeReclaimPolicy") == "Delete":
        volume_action = VolumePlan.AFTER_CLAIM
    else:
        volume_action = VolumePlan.KEEP
        if claim is not ClaimPlan.KEEP:
            detail = volume.detail  # the claim goes; the PV stays (reclaim policy Retain, ...)
    nodes = tuple(sorted(affinity_node_names(pv).node_names))
    starts_now = written is not None and claim is not ClaimPlan.KEEP
    return PlannedVolume(name(pv), nodes, claim_ns, claim_name, claim, eligible, starts_now,
                         volume_action, reason, detail)


def plan_node_cleanup(observed: Iterable[NodeCleanupInput], now: datetime) -> list[PlannedVolume]:
    """A row per local PV (a PV without ``spec.local`` is none of node cleanup's business): the ones
    cleaned first, soonest first, then the kept ones, each by PV name."""
    rows = [plan_volume(o, now) for o in observed]
    rows = [r for r in rows if r.reason is not NodeCleanupReason.NOT_LOCAL]
    return sorted(rows, key=lambda r: (not r.cleaned, r.eligible_at or now, r.volume))
