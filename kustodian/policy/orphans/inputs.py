"""The one frozen input of a decision about one Orphan, and the decision over it.

cert-manager's shape, as node cleanup has it: the node agent gathers one input per Orphan
(the object, the disk scans, the ownership Longhorn gives, the mass-orphan brakes, the
rules in force), this pure function decides, the agent acts.  The first gather reads what
the agent already holds: the Orphan cache, the monitor's last scans and Longhorn's watch
caches.  Before it acts on a deleting Orphan (removing its directory, or releasing it with
the data kept) the agent gathers the same input again from the API server and a fresh disk
read, runs the same function and compares (:func:`confirms`).  Where the input came from is
none of the decision's business, so both gathers fill this one type.

The monitor's decision has the same shape: :class:`OrphanSyncInput` (this node's disks just
scanned, the ownership, its Orphans) and :func:`decide_orphan_sync`; a prune (an Orphan
deleted, its data kept) is made only when the same decision on the ownership and the
Orphans read from the API server prunes it too (:func:`confirms_prune`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from kustodian.policy.objects import RawObject
from kustodian.policy.orphans.cleanup import OrphanAction, OrphanDecision, RemoveDir, cleanup_decision
from kustodian.policy.orphans.detect import OrphanSync, PruneOrphan, sync_orphans
from kustodian.policy.orphans.model import DirProbe, DiskScan
from kustodian.policy.orphans.ownership import Ownership
from kustodian.policy.orphans.quarantine import QuarantinePolicy, QuarantineProbe

__all__ = [
    "OrphanCleanupInput",
    "OrphanCleanupRules",
    "OrphanSyncInput",
    "confirms",
    "confirms_prune",
    "decide_orphan_cleanup",
    "decide_orphan_sync",
]


@dataclass(frozen=True)
class OrphanCleanupRules:
    """What the agent runs with: its node, auto-deletion as in force, when it started watching.

    ``agent_since``: deletes requested before it are deferred ones (see ``deferred_delete``);
    ``write_grace``: a directory written more recently than this is live and never removed;
    ``quarantine``: how long a deleted Orphan's directory is kept in quarantine.
    """

    node: str
    auto_delete: bool
    grace: timedelta
    agent_since: datetime | None = None
    write_grace: timedelta = timedelta(minutes=10)
    quarantine: QuarantinePolicy = field(default_factory=QuarantinePolicy)


@dataclass(frozen=True)
class OrphanCleanupInput:
    """Everything one decision about one Orphan reads, gathered once.

    ``scans`` are this node's disks as last looked at (or just now, when confirming);
    ``owners`` is Longhorn's ownership verdict; ``held_disks`` maps a normalized disk path
    to the mass-orphan brake's message, for the disks whose auto-deletion is held; ``probe``
    is the Orphan's directory looked at during this very gather (``volume.meta`` read again,
    the newest modification time), ``None`` when the Orphan names no valid directory;
    ``quarantine`` the same directory looked at in quarantine during this gather.
    """

    orphan: RawObject
    scans: tuple[DiskScan, ...]
    owners: Ownership
    held_disks: Mapping[str, str]
    rules: OrphanCleanupRules
    probe: DirProbe | None = None
    quarantine: QuarantineProbe | None = None


def decide_orphan_cleanup(observed: OrphanCleanupInput, now: datetime) -> OrphanDecision:
    """What to do with the Orphan in ``observed``, and its ``DataCleanable`` condition."""
    rules = observed.rules
    return cleanup_decision(observed.orphan, observed.scans, observed.owners, node=rules.node,
                            auto_delete=rules.auto_delete, grace=rules.grace, now=now,
                            agent_since=rules.agent_since, held_disks=observed.held_disks,
                            probe=observed.probe, write_grace=rules.write_grace,
                            quarantine=observed.quarantine, retention=rules.quarantine)


def confirms(fresh: OrphanDecision, action: OrphanAction) -> bool:
    """Whether the decision on a fresh gather makes ``action`` too.

    A removal is confirmed only by the very same removal (same disk, directory and UUID);
    any other action by an action of the same kind.
    """
    if isinstance(action, RemoveDir):
        return fresh.action == action
    return type(fresh.action) is type(action)


@dataclass(frozen=True)
class OrphanSyncInput:
    """Everything one monitor decision reads: ``node``'s disk scans, the ownership, its Orphans."""

    node: str
    scans: tuple[DiskScan, ...]
    owners: Ownership
    orphans: tuple[RawObject, ...]


def decide_orphan_sync(observed: OrphanSyncInput) -> OrphanSync:
    """The Orphans to create and to prune on the node of ``observed``."""
    return sync_orphans(observed.node, observed.scans, observed.owners, observed.orphans)


def confirms_prune(fresh: OrphanSync, prune: PruneOrphan) -> bool:
    """Whether the decision on a fresh gather prunes the same Orphan (same name, same UID) too."""
    return any(p.name == prune.name and p.uid == prune.uid for p in fresh.prune)

