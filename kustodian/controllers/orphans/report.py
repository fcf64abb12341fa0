"""What the disk monitor tells people: conditions in ``kustodian-disks-<node>`` and Events about it.

The monitor decides (the scans, the ownership, the brakes); this adapter writes what changed:
the ``OwnershipKnown`` condition, each disk's ``Ready`` and ``AutoDeleteHeld`` conditions
(``kubectl get cm kustodian-disks-<node> -o yaml`` shows why a disk is skipped), and a
Warning Event when something cannot be trusted (a Normal one when it can again).  It keeps
only what it last wrote, so each change is told once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from kustodian.controllers.orphans.disks import CONDITION_READY, OWNERSHIP_KEY, DiskRegistry
from kustodian.kube.errors import KubeError
from kustodian.kube.events import EventRecorder
from kustodian.policy.orphans import (
    BrakeChange,
    DiskCondition,
    DiskScan,
    OrphanReason,
    Ownership,
    disk_condition,
    disk_verdict,
    normalize_disk_path,
)
from kustodian.policy.timestamps import format_rfc3339

__all__ = ["CONDITION_AUTO_DELETE_HELD", "CONDITION_OWNERSHIP", "DiskReport"]

log = logging.getLogger(__name__)

CONDITION_OWNERSHIP = "OwnershipKnown"
CONDITION_AUTO_DELETE_HELD = "AutoDeleteHeld"


class DiskReport:
    """The disk record's conditions and the Events about them, written when they change."""

    def __init__(self, registry: DiskRegistry, recorder: EventRecorder, *, node: str,
                 clock: Callable[[], datetime]) -> None:
        self.registry, self.recorder, self.node, self.clock = registry, recorder, node, clock
        self._owners_reported: Ownership | None = None
        self._disk_conditions: dict[str, DiskCondition] = {}
        self._since: dict[str, str] = {}

    def _event(self, event_type: str, reason: str, message: str) -> None:
        self.recorder.record(self.registry.config_map, event_type, reason, message)

    def ownership(self, owners: Ownership) -> None:
        before = self._owners_reported
        if before is not None and (before.known, before.reason, before.message) == (
                owners.known, owners.reason, owners.message):
            return
        self._owners_reported = owners
        cond = {"type": CONDITION_OWNERSHIP, "status": "True" if owners.known else "False",
                "reason": str(owners.reason), "message": owners.message,
                "lastTransitionTime": format_rfc3339(self.clock())}
        try:
            self.registry.publish(OWNERSHIP_KEY, [cond])
        except KubeError as exc:
            log.warning("cannot publish ownership in %s/%s: %s", self.registry.namespace, self.registry.name,
                        exc)
        if not owners.known:
            message = f"node {self.node}: ownership of replica data unknown: {owners.message}"
            log.warning("%s (%s)", message, owners.reason)
            self._event("Warning", str(owners.reason), message)
        elif before is not None and not before.known:
            message = f"node {self.node}: ownership known again ({owners.message})"
            log.info(message)
            self._event("Normal", str(owners.reason), message)

    def brakes(self, changes: Sequence[BrakeChange]) -> None:
        for change in changes:
            if change.engaged:
                log.warning(change.message)
                self._event("Warning", str(OrphanReason.MASS_ORPHAN_BRAKE), change.message)
            else:
                log.info(change.message)
                self._event("Normal", "MassOrphanBrakeReleased", change.message)

    def disks(self, scans: Sequence[DiskScan], owners: Ownership, held: Mapping[str, str]) -> None:
        now = format_rfc3339(self.clock())
        status = []
        for scan in scans:
            cond = disk_condition(scan, scans)
            if cond.ok and owners.known:
                cond = disk_verdict(scan, scans, owners)
            before = self._disk_conditions.get(scan.disk_path)
            if before != cond:
                self._disk_conditions[scan.disk_path] = cond
                if before is None or before.ok != cond.ok:
                    self._since[scan.disk_path] = now
                self._announce(scan, cond, before)
            conditions = [{"type": CONDITION_READY, "status": "True" if cond.ok else "False",
                           "reason": str(cond.reason), "message": cond.message,
                           "lastTransitionTime": self._since[scan.disk_path]}]
            why_held = held.get(normalize_disk_path(scan.disk_path) or scan.disk_path)
            if why_held:
                conditions.append({"type": CONDITION_AUTO_DELETE_HELD, "status": "True",
                                   "reason": str(OrphanReason.MASS_ORPHAN_BRAKE), "message": why_held})
            status.append({
                "name": scan.disk_name, "path": scan.disk_path, "diskUUID": scan.expected_uuid,
                "conditions": conditions,
            })
        try:
            self.registry.publish_status(status)
        except KubeError as exc:
            log.warning("cannot publish disk status in %s/%s: %s", self.registry.namespace,
                        self.registry.name, exc)

    def _announce(self, scan: DiskScan, cond: DiskCondition, before: DiskCondition | None) -> None:
        if not cond.ok:
            message = (f"disk {scan.disk_name} at {scan.disk_path} on node {self.node} is skipped: "
                       f"{cond.message}")
            log.warning("%s (%s)", message, cond.reason)
            self._event("Warning", str(cond.reason), message)
        elif before is not None and not before.ok:
            message = f"disk {scan.disk_name} at {scan.disk_path} on node {self.node} is scanned again"
            log.info(message)
            self._event("Normal", str(cond.reason), message)
