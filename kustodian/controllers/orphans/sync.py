"""The orphan-sync reconciler: this node's Orphans follow what the disk monitor found.

One key (``sync``), enqueued by the disk monitor after each pass.  Level-based: a pass reads
the monitor's current :class:`~controllers.orphans.state.DiskState` and this node's Orphans,
and only when the scans, the ownership or this node's Orphans changed since the last sync
that went through does it ask :func:`policy.orphans.decide_orphan_sync` (over one frozen
``OrphanSyncInput``) which Orphans to create and which to prune.  A prune is made only when
the same decision on a gather from the API server (Longhorn's Node and Replicas, this node's
Orphans, the disks read again) prunes it too; one the API server does not confirm is decided
again on the next pass.  Writes go through :class:`~controllers.orphans.actions.OrphanActions`.
After a sync the cleanup reconciler looks at every Orphan of this node again (``DataCleanable``
follows the new scan).

The sync never runs on an Orphan's own events (they only mark the Orphans changed): it must
judge a directory on a scan made after its Orphan changed, never on an older one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kustodian.controllers.orphans.actions import OrphanActions
from kustodian.controllers.orphans.gather import OrphanCleanupSource, gather_sync
from kustodian.controllers.orphans.monitor import DiskMonitor
from kustodian.kube.cache import WatchCache
from kustodian.kube.client import Obj
from kustodian.policy.objects import is_deleting, str_field
from kustodian.policy.orphans import (
    ORPHAN_BY_NODE,
    DiskScan,
    OrphanSync,
    OrphanSyncInput,
    PruneOrphan,
    confirms_prune,
    decide_orphan_sync,
)
from kustodian.runtime import Result

__all__ = ["SYNC_KEY", "OrphanSyncReconciler"]

log = logging.getLogger(__name__)

SYNC_KEY = "sync"


def _scan_fingerprint(scan: DiskScan) -> tuple[Any, ...]:
    # ``entries`` is the very same mapping when the scanner reused it: compared by identity first
    return (scan.disk_path, scan.expected_uuid, scan.found_uuid, scan.fsid, scan.readable, scan.error,
            scan.entries)


class OrphanSyncReconciler:
    """Creates the Orphans the last scan found, prunes those it no longer finds (confirmed first)."""

    name = "orphan-sync"

    def __init__(self, node: str, orphans: WatchCache, monitor: DiskMonitor, actions: OrphanActions,
                 api_source: OrphanCleanupSource, *, after_sync: Callable[[], None]) -> None:
        self.node = node
        self.orphans = orphans
        self.monitor = monitor
        self.actions = actions
        self.api_source = api_source  # where a prune is confirmed: the API server and the disks read now
        self._after_sync = after_sync
        self._lock = threading.Lock()  # one sync at a time (the worker, or a caller's sync)
        self._last_sync: tuple[Any, ...] | None = None
        self._orphan_generation = 0
        self.syncs_done = 0

    def wire(self, enqueue: Callable[[str], None]) -> None:
        """The monitor's passes enqueue; Orphan events only mark this node's Orphans changed."""
        self.monitor.listen(lambda state: enqueue(SYNC_KEY))
        self.orphans.add_handler(self._on_orphan)

    def _on_orphan(self, etype: str, new: Obj | None, old: Obj | None) -> None:
        obj = new or old or {}
        if str_field(obj, "spec", "nodeID") == self.node and (
                etype != "MODIFIED" or is_deleting(new) != is_deleting(old)):
            self._orphan_generation += 1  # the next sync must look again

    def reconcile(self, key: str) -> Result | None:
        self.sync()
        return None

    def sync(self) -> bool:
        """Sync on the monitor's last pass; True when something had changed (so it synced)."""
        with self._lock:
            state = self.monitor.state
            if not state.passes:
                return False
            generation = self._orphan_generation
            fingerprint = (tuple(_scan_fingerprint(s) for s in state.scans), state.owners, generation)
            if fingerprint == self._last_sync:
                return False
            observed = OrphanSyncInput(self.node, state.scans, state.owners,
                                       tuple(self.orphans.by_index(ORPHAN_BY_NODE, self.node)))
            plan = decide_orphan_sync(observed)
            prunes = self._confirmed_prunes(plan)
            ok = all([self.actions.create(o) for o in plan.create] + [self.actions.prune(p) for p in prunes])
            ok = ok and len(prunes) == len(plan.prune)  # an unconfirmed prune is decided again next pass
            if ok:
                self._last_sync = fingerprint
            self.syncs_done += 1
        self._after_sync()
        return True

    def _confirmed_prunes(self, plan: OrphanSync) -> tuple[PruneOrphan, ...]:
        """The prunes of ``plan`` that the same decision on a gather from the API server (Longhorn's
        Node and Replicas, this node's Orphans) and the disks read again makes too."""
        if not plan.prune:
            return ()
        fresh = decide_orphan_sync(gather_sync(self.api_source, self.node))
        confirmed = tuple(p for p in plan.prune if confirms_prune(fresh, p))
        for prune in plan.prune:
            if prune not in confirmed:
                log.info("Orphan %s/%s: %s in the caches, not on the API server; kept", prune.namespace,
                         prune.name, prune.reason)
        return confirmed
