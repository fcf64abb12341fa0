"""What the node agent's parts share: the Orphan resource, the agent's options, the published disk state.

The disk monitor (:mod:`~controllers.orphans.monitor`) is the only writer of a
:class:`DiskState`: after each pass it swaps in a new frozen one, never under a lock held
across I/O; the orphan-sync and orphan-cleanup reconcilers and the sizer read whichever is
current, so a long scan never blocks them.  Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

from kustodian.kube.resources import Resource
from kustodian.policy.orphans import (
    ORPHAN_KIND,
    AutoDeletion,
    DiskScan,
    OrphanReason,
    Ownership,
    QuarantinePolicy,
    auto_deletion,
    normalize_disk_path,
)
from kustodian.settings import DiskSpec

__all__ = ["NO_SCAN_YET", "ORPHANS", "AgentOptions", "AutoDeletionSource", "DiskState"]

ORPHANS = Resource("kustodian.io", "v1alpha1", "orphanedreplicadirs", ORPHAN_KIND, True)
NO_SCAN_YET = "no full scan yet"
NOT_LOOKED_AT = Ownership(False, OrphanReason.TRACKING_UNKNOWN, "not looked at yet")


class LonghornSettings(Protocol):
    def longhorn_settings(self) -> dict[str, str] | None: ...


@dataclass(frozen=True)
class AgentOptions:
    """The node agent's settings, as its parts read them."""

    node: str
    namespace: str
    disks: tuple[DiskSpec, ...]
    auto_delete: bool | None = None  # None: follow Longhorn's settings
    grace: timedelta | None = None  # None: follow Longhorn's settings
    write_grace: timedelta = timedelta(minutes=10)  # a directory written more recently is live: never removed
    quarantine: QuarantinePolicy = field(default_factory=QuarantinePolicy)
    brake_share: float = 0.5
    brake_min_orphans: int = 3


class AutoDeletionSource:
    """Auto-deletion as configured here, else as Longhorn's Settings say, else off."""

    def __init__(self, options: AgentOptions, tracker: LonghornSettings) -> None:
        self._options, self._tracker = options, tracker

    def __call__(self) -> AutoDeletion:
        return auto_deletion(self._tracker.longhorn_settings(), override_enabled=self._options.auto_delete,
                             override_grace=self._options.grace)


@dataclass(frozen=True)
class DiskState:
    """The disk monitor's last pass: the scans, the ownership they were judged with, the brakes."""

    scans: tuple[DiskScan, ...] = ()
    owners: Ownership = NOT_LOOKED_AT
    held: Mapping[str, str] = field(default_factory=dict)  # normalized disk path -> why auto-deletion is held
    orphans_seen: Mapping[str, frozenset[str]] = field(default_factory=dict)  # the brakes' memory
    passes: int = 0  # 0: no pass yet

    @property
    def by_path(self) -> Mapping[str, DiskScan]:
        return {s.disk_path: s for s in self.scans}

    def held_disks(self, disks: tuple[DiskSpec, ...]) -> Mapping[str, str]:
        """The mass-orphan brakes; until the first pass, every disk is held."""
        if not self.passes:
            return {normalize_disk_path(d.path) or d.path: NO_SCAN_YET for d in disks}
        return self.held
