"""The disk monitor: scan the disks, ask who owns what, decide the brakes, publish one frozen state.

Each pass (a :class:`~kustodian.runtime.periodic.Periodic` every ``scan_interval``, or at
once when woken: Longhorn's Node changed) scans every configured disk
(:func:`controllers.orphans.scan.scan_disk` reuses what did not change, and a disk
configured without a UUID is trusted with the first one found, recorded in the node's disk
record), asks Longhorn for the ownership (:mod:`controllers.orphans.tracker`: an unknown
answer is reported, never read as "nothing is owned"), has the pure
:func:`policy.orphans.decide_brakes` say which disks hold auto-deletion, tells people what
changed (:mod:`controllers.orphans.report`) and publishes one :class:`DiskState`.  Then it
tells its listeners (the orphan-sync reconciler, which decides what to create and prune).

It decides nothing about an Orphan and writes none: that is the reconcilers' job, on the
state it publishes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace

from kustodian.controllers.orphans.disks import DiskRegistry
from kustodian.controllers.orphans.report import DiskReport
from kustodian.controllers.orphans.scan import scan_disk
from kustodian.controllers.orphans.state import AgentOptions, AutoDeletionSource, DiskState
from kustodian.controllers.orphans.tracker import ReplicaTracker
from kustodian.errors import ConfigError
from kustodian.kube.errors import KubeError, NotFound
from kustodian.policy.orphans import BrakeInput, DiskScan, decide_brakes
from kustodian.runtime import Periodic

__all__ = ["DiskMonitor"]

log = logging.getLogger(__name__)


class DiskMonitor:
    """One node's disks, scanned and judged; :attr:`state` is the last pass, swapped whole."""

    def __init__(self, options: AgentOptions, registry: DiskRegistry, tracker: ReplicaTracker,
                 report: DiskReport, auto_deletion: AutoDeletionSource) -> None:
        self.options = options
        self.registry = registry
        self.tracker = tracker
        self.report = report
        self.auto_deletion = auto_deletion
        self.state = DiskState()
        self._listeners: list[Callable[[DiskState], None]] = []
        self._lock = threading.Lock()  # one pass at a time (the runnable's, or a caller's scan_once)
        self._runnable: Periodic | None = None

    def prepare(self, scan_interval: float) -> None:
        """Load the disk record before the first scan or reconcile (the Manager calls this once the
        caches synced, through the cleanup reconciler).

        Its namespace missing is a setting to fix (the chart runs the agent in the release
        namespace; by hand ``--namespace`` may name one that does not exist): one line naming
        it and exit 2, rather than an API error."""
        namespace = self.options.namespace
        try:
            self.registry.load()
        except NotFound as exc:
            details = exc.details if isinstance(exc.details, dict) else {}
            if details.get("kind") == "namespaces" and details.get("name") == namespace:
                raise ConfigError.at(f"--namespace / KUSTODIAN_KUBE__NAMESPACE {namespace}",
                                     "no such namespace: the node agent records its disks and orphans "
                                     "there; create it or name the one Kustodian is installed in") from None
            raise
        policy = self.auto_deletion()
        log.info("node agent running on %s: %d disk(s), scan every %.0fs, auto-delete %s after %s (%s)",
                 self.options.node, len(self.options.disks), scan_interval, "on" if policy.enabled else "off",
                 policy.grace, policy.source)

    def listen(self, listener: Callable[[DiskState], None]) -> None:
        """Call ``listener(state)`` after each pass of the runnable (keep it fast: it enqueues)."""
        self._listeners.append(listener)

    def runnable(self, interval: float) -> Periodic:
        """The monitor as a runnable: a pass every ``interval`` seconds, each followed by the listeners."""
        if self._runnable is None:
            self._runnable = Periodic("disk-monitor", self._pass, interval, join_timeout=10)
        return self._runnable

    def wake(self) -> None:
        """Scan now instead of at the end of the interval (nothing when the runnable is not installed)."""
        if self._runnable is not None:
            self._runnable.wake()

    def _pass(self) -> None:
        state = self.scan_once()
        for listener in list(self._listeners):
            listener(state)

    def scan_disks(self, *, record: bool) -> list[DiskScan]:
        """Scan every disk now, reusing the last scans; ``record`` first-seen UUIDs (a pass only)."""
        previous = self.state.by_path
        scans = []
        for disk in self.options.disks:
            expected = self.registry.expected_uuid(disk)
            scan = scan_disk(disk.path, disk.name, expected, previous.get(disk.path))
            if not expected and record and scan.found_uuid:
                try:
                    scan = replace(scan, expected_uuid=self.registry.record(disk, scan.found_uuid))
                except KubeError as exc:
                    log.warning("disk %s at %s: cannot record UUID %s, skipping the disk: %s",
                                disk.name, disk.path, scan.found_uuid, exc)
            scans.append(scan)
        return scans

    def scan_once(self) -> DiskState:
        """One pass: scan, judge, report, publish; the state published."""
        with self._lock:
            before = self.state
            scans = tuple(self.scan_disks(record=True))
            owners = self.tracker.ownership()
            self.report.ownership(owners)
            brakes = decide_brakes(BrakeInput(
                self.options.node, scans, owners, self.auto_deletion().enabled, self.options.brake_share,
                self.options.brake_min_orphans, before.orphans_seen, before.held))
            self.report.brakes(brakes.changes)
            self.report.disks(scans, owners, brakes.held)
            self.state = DiskState(scans, owners, brakes.held, brakes.orphans_seen, before.passes + 1)
            return self.state
