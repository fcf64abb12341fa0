"""One node's agent as its parts: the handle ``install`` returns (and tests and tools hold).

The node agent is split the way the deletion guard was: a monitor that publishes one frozen
state, a reconciler per job, a pure decision per choice, one actions adapter that touches the
outside.  :class:`NodeAgent` builds the parts and wires them to each other; it holds no logic
of its own:

* :class:`~controllers.orphans.monitor.DiskMonitor` (``disk-monitor``, a periodic runnable):
  scans the disks, asks Longhorn who owns what, decides the mass-orphan brakes, reports,
  publishes a :class:`~controllers.orphans.state.DiskState`;
* :class:`~controllers.orphans.sync.OrphanSyncReconciler` (``orphan-sync``): this node's
  Orphans follow the monitor's last pass, prunes confirmed on the API server;
* :class:`~controllers.orphans.cleanup.OrphanCleanupReconciler` (``orphans``): each Orphan,
  gather -> decide -> confirm on a fresh read -> act;
* :class:`~controllers.orphans.sizer.OrphanSizer` (``orphan-sizer``, a periodic runnable);
* :class:`~controllers.orphans.heartbeat.Heartbeat` (``heartbeat``, a periodic runnable): this
  node's heartbeat, and the Orphans of nodes whose agent is gone;
* :class:`~controllers.orphans.actions.OrphanActions`: every write and directory move.

Longhorn's Node changing (Ready, eviction, disks) wakes the monitor and has every Orphan of
this node decided again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from kustodian.controllers.orphans.actions import OrphanActions
from kustodian.controllers.orphans.cleanup import OrphanCleanupReconciler
from kustodian.controllers.orphans.disks import DiskRegistry
from kustodian.controllers.orphans.gather import OrphanApiSource, OrphanCacheSource, OrphanCleanupSource
from kustodian.controllers.orphans.heartbeat import Heartbeat
from kustodian.controllers.orphans.monitor import DiskMonitor
from kustodian.controllers.orphans.report import DiskReport
from kustodian.controllers.orphans.sizer import OrphanSizer
from kustodian.controllers.orphans.state import ORPHANS, AgentOptions, AutoDeletionSource
from kustodian.controllers.orphans.sync import OrphanSyncReconciler
from kustodian.controllers.orphans.tracker import LONGHORN_NODES, ReplicaTracker
from kustodian.kube.cache import CacheFactory, WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.events import EventRecorder
from kustodian.policy.orphans import INDEXERS, ORPHAN_KIND_KEY, AutoDeletion, DiskScan
from kustodian.runtime import WorkQueue
from kustodian.settings import DiskSpec

__all__ = ["NodeAgent"]


class NodeAgent:
    """The parts of one node's agent, wired; see the module docstring."""

    def __init__(self, client: KubeClient, options: AgentOptions, *, tracker: ReplicaTracker,
                 recorder: EventRecorder, caches: CacheFactory, clock: Callable[[], datetime],
                 heartbeat_interval: timedelta, heartbeat_timeout: timedelta, longhorn_namespace: str,
                 scan_interval: float, retry_interval: float = 10.0) -> None:
        self.client = client
        self.options = options
        self.tracker = tracker
        self.recorder = recorder
        self.clock = clock
        self.orphans: WatchCache = caches(ORPHANS, namespace=options.namespace,
                                          indexers=INDEXERS[ORPHAN_KIND_KEY])
        self.registry = DiskRegistry(client, namespace=options.namespace, node=options.node)
        self.auto_deletion_source = AutoDeletionSource(options, tracker)
        self.actions = OrphanActions(client, recorder, namespace=options.namespace)
        self.monitor = DiskMonitor(options, self.registry, tracker,
                                   DiskReport(self.registry, recorder, node=options.node, clock=clock),
                                   self.auto_deletion_source)

        def scan_now() -> list[DiskScan]:
            return self.monitor.scan_disks(record=False)

        api_source = OrphanApiSource(client, ORPHANS, tracker, node=options.node, namespace=options.namespace,
                                     scan_now=scan_now)
        self.cleanup = OrphanCleanupReconciler(
            options, self.orphans, self.actions,
            cache_source=OrphanCacheSource(options.node, self.orphans, tracker,
                                           last_scans=lambda: self.monitor.state.scans, scan_now=scan_now),
            api_source=api_source, held_disks=lambda: self.monitor.state.held_disks(options.disks),
            auto_deletion=self.auto_deletion_source, clock=clock, retry_interval=retry_interval,
            prepare=lambda: self.monitor.prepare(scan_interval))
        self.sync = OrphanSyncReconciler(options.node, self.orphans, self.monitor, self.actions, api_source,
                                         after_sync=self.cleanup.reconcile_all)
        self.sizer = OrphanSizer(options, self.orphans, self.actions)
        self.beats = Heartbeat(
            client, self.registry, node=options.node, namespace=options.namespace,
            longhorn_namespace=longhorn_namespace, orphans=self.orphans, orphan_resource=ORPHANS,
            longhorn_nodes=LONGHORN_NODES, recorder=recorder, clock=clock, interval=heartbeat_interval,
            timeout=heartbeat_timeout)
        self.heartbeat: Heartbeat | None = self.beats  # what a caller drives (``beat_once``)
        self.queue: WorkQueue | None = None  # the cleanup reconciler's, once installed
        tracker.add_listener(self._on_longhorn_node)

    def _on_longhorn_node(self) -> None:
        """Longhorn's Node changed (Ready, eviction, disks): scan again and re-decide every Orphan."""
        self.monitor.wake()
        self.cleanup.reconcile_all()

    # -- what a caller (a test, a tool) drives ------------------------------------------------

    @property
    def node(self) -> str:
        return self.options.node

    @property
    def namespace(self) -> str:
        return self.options.namespace

    @property
    def disks(self) -> tuple[DiskSpec, ...]:
        return self.options.disks

    @property
    def controller(self) -> WorkQueue:
        """The work queue the Manager drains for the cleanup reconciler."""
        if self.queue is None:
            raise RuntimeError("the node agent is not installed on a Manager")
        return self.queue

    def scan_once(self) -> bool:
        """One monitor pass and the sync it calls for, here and now; True when Orphans were synced."""
        self.monitor.scan_once()
        return self.sync.sync()

    def scan_disks(self, *, record: bool) -> list[DiskScan]:
        return self.monitor.scan_disks(record=record)

    def reconcile_all(self) -> None:
        self.cleanup.reconcile_all()

    def auto_deletion(self) -> AutoDeletion:
        return self.auto_deletion_source()

    def measure_sizes(self) -> Mapping[tuple[str, str], int]:
        return self.sizer.measure_sizes()

    @property
    def scans_done(self) -> int:
        return self.monitor.state.passes

    @property
    def syncs_done(self) -> int:
        return self.sync.syncs_done

    @property
    def _scans(self) -> Mapping[str, DiskScan]:
        """The monitor's last scans by disk path."""
        return self.monitor.state.by_path

    # the sources the reconcilers gather from: a test may hand in its own (a lagging cache, say)

    @property
    def cache_source(self) -> OrphanCleanupSource:
        return self.cleanup.cache_source

    @cache_source.setter
    def cache_source(self, source: OrphanCleanupSource) -> None:
        self.cleanup.cache_source = source

    @property
    def api_source(self) -> OrphanCleanupSource:
        return self.cleanup.api_source

    @api_source.setter
    def api_source(self, source: OrphanCleanupSource) -> None:
        self.cleanup.api_source = source
        self.sync.api_source = source

    @property
    def retry_interval(self) -> float:
        return self.cleanup.retry_interval

    @retry_interval.setter
    def retry_interval(self, seconds: float) -> None:
        self.cleanup.retry_interval = seconds
