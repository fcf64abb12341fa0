"""The one frozen input of a node-cleanup decision, and the decision over it.

cert-manager's shape (``internal/controller/certificates/policies``): a gatherer fills one
input from the watch caches, a pure function decides, the controller acts; before a
destructive act the controller gathers the same input again from the API server itself and
runs the same function on it; only the deletes both decisions agree on are made.  Where the
input came from is none of the decision's business, so both gathers fill this one type.

One decision answers both of upstream's loops for one PV: what happens to its claim (warn,
wait, delete; and the timer annotations to write on the PV first), and whether the PV
itself is deleted.  Each reconciler acts on its part.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from kustodian.policy.node_cleanup.classify import classify_pv
from kustodian.policy.node_cleanup.decisions import (
    CONTINUITY,
    ClaimCleanupDecision,
    DeleteClaim,
    DeleteVolume,
    VolumeAction,
    claim_step,
    volume_step,
)
from kustodian.policy.node_cleanup.nodes import NodeDirectory
from kustodian.policy.objects import RawObject


@dataclass(frozen=True)
class NodeCleanupRules:
    """What the operator configured: the opted-in StorageClasses, the grace delay, and the options."""

    opted_in_classes: frozenset[str]
    delay: timedelta
    detect_recreated: bool = False
    # see decisions' module docstring; None trusts any valid stamp (the plain timer)
    continuity: timedelta | None = CONTINUITY


@dataclass(frozen=True)
class NodeCleanupInput:
    """Everything one decision about one local PV reads, gathered once.

    ``volume`` is the PV (with the node-missing annotations the controller keeps in memory
    laid over it, where it may not write them on the PV); ``claim`` the PVC its
    ``spec.claimRef`` names, ``None`` when there is none or it does not exist; ``nodes``
    holds at least the Nodes the PV's affinity names, by name and by hostname label.
    ``watched_since`` is since when the process that gathered it has watched the Nodes without
    a gap (its first full list, or its last re-list); a node-missing stamp older than that is no
    proof that the node stayed gone, and the timer restarts.  ``None``: no such rule.
    """

    volume: RawObject
    claim: RawObject | None
    nodes: NodeDirectory
    rules: NodeCleanupRules
    watched_since: datetime | None = None


@dataclass(frozen=True)
class NodeCleanupDecision:
    """What happens to one local PV and its claim in one pass."""

    claim: ClaimCleanupDecision
    volume: VolumeAction

    @property
    def deletes(self) -> tuple[DeleteClaim | DeleteVolume, ...]:
        """The destructive parts, each to be confirmed on a fresh gather before it is made."""
        found: list[DeleteClaim | DeleteVolume] = []
        if isinstance(self.claim.action, DeleteClaim):
            found.append(self.claim.action)
        if isinstance(self.volume, DeleteVolume):
            found.append(self.volume)
        return tuple(found)


def decide_node_cleanup(observed: NodeCleanupInput, now: datetime) -> NodeCleanupDecision:
    """The claim step and the volume step for ``observed``, the PV classified once for both."""
    rules = observed.rules
    status = classify_pv(observed.volume, observed.nodes, rules.opted_in_classes,
                         detect_recreated=rules.detect_recreated)
    claim = claim_step(observed.volume, observed.claim, status, delay=rules.delay, now=now,
                        first_missing_at=None, continuity=rules.continuity,
                        watched_since=observed.watched_since)
    return NodeCleanupDecision(claim, volume_step(observed.volume, status))


def confirms(fresh: NodeCleanupDecision, delete: DeleteClaim | DeleteVolume) -> bool:
    """Whether the decision on a fresh gather makes ``delete`` too: the same object, the same UID."""
    return any(type(d) is type(delete) and d.uid == delete.uid and d.name == delete.name
               for d in fresh.deletes)
