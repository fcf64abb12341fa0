"""``kustodian controllers``: the controller sidecar.

Every enabled controller runs only while this replica holds the Lease (15 s / 10 s /
2 s): caches are started, fully synced (a controller never acts on a partial
view: an unsynced PVC list would look like "no PVCs"), then the workers start.
Losing the Lease stops the workers at once.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, start_http_server

from kustodian.controllers.reclaim.controller import ReclaimPropagation
from kustodian.controllers.runtime import Controller, ControllerMetrics, Result
from kustodian.controllers.settings import ControllersSettings
from kustodian.kube.cache import WatchCache, wait_all_synced
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.events import EventRecorder
from kustodian.kube.leader import LeaderElector

log = logging.getLogger(__name__)


@dataclass
class Unit:
    """One controller: its caches, its wiring to the queue, its reconcile."""

    name: str
    caches: list[WatchCache]
    wire: Callable[[Callable[[str], None]], None]
    reconcile: Callable[[str], Result | None]
    after_sync: Callable[[], None] = lambda: None
    # long-running loops started after sync (deleters, resyncs); they return when the event is set
    background: list[Callable[[threading.Event, Callable[[str], None]], None]] = field(default_factory=list)


@dataclass
class Assembly:
    units: list[Unit]
    metrics: ControllerMetrics
    controllers: list[Controller] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def start(self, workers: int, sync_timeout: float) -> None:
        for unit in self.units:
            ctl = Controller(unit.name, unit.reconcile, workers=workers, metrics=self.metrics)
            unit.wire(ctl.enqueue)
            self.controllers.append(ctl)
            for cache in unit.caches:
                cache.start()
        caches = [c for u in self.units for c in u.caches]
        if not wait_all_synced(caches, sync_timeout):
            raise TimeoutError("caches did not sync; refusing to act on a partial view")
        for unit, ctl in zip(self.units, self.controllers, strict=True):
            unit.after_sync()
            ctl.start()
            for loop in unit.background:
                threading.Thread(target=loop, args=(self.stopping, ctl.enqueue), name=f"{unit.name}-loop",
                                 daemon=True).start()
        log.info("controllers running: %s", ", ".join(u.name for u in self.units))

    def stop(self) -> None:
        self.stopping.set()
        for ctl in self.controllers:
            ctl.stop()
        for unit in self.units:
            for cache in unit.caches:
                cache.stop(timeout=1)


def build(settings: ControllersSettings, client: KubeClient, recorder: EventRecorder,
          registry: CollectorRegistry | None = None) -> Assembly:
    units: list[Unit] = []
    if settings.reclaim_space:
        csi_ns, _, csi_name = settings.reclaim_csi_addons_config.partition("/")
        reclaim = ReclaimPropagation(client, config_namespace=settings.namespace,
                                     config_name=settings.reclaim_config_name, recorder=recorder,
                                     csi_addons_config=(csi_ns, csi_name),
                                     keyrotation=settings.reclaim_keyrotation)

        def reconcile(key: str) -> Result | None:
            reclaim.reconcile(key)
            return None

        def after_sync() -> None:
            reclaim.refresh_config()

        units.append(Unit("reclaim-space", reclaim.caches, reclaim.wire, reconcile, after_sync))
    if settings.node_cleanup:
        from kustodian.controllers.node_cleanup.controller import NodeCleanup

        cleanup = NodeCleanup(client, storage_classes=settings.node_cleanup_storage_classes,
                              delay=settings.node_cleanup_delay,
                              detect_recreated=settings.node_cleanup_detect_recreated, recorder=recorder,
                              registry=registry)
        resync_s = settings.node_cleanup_resync.total_seconds()
        discovery_s = settings.node_cleanup_discovery_interval.total_seconds()

        def resync(stop: threading.Event, enqueue: Callable[[str], None]) -> None:
            while not stop.wait(resync_s):
                cleanup.resync(enqueue)

        def deleter(stop: threading.Event, enqueue: Callable[[str], None]) -> None:
            cleanup.run_deleter(discovery_s, stop)

        units.append(Unit("node-cleanup", cleanup.caches, cleanup.wire, cleanup.reconcile,
                          background=[resync, deleter]))
    if settings.capacity:
        from kustodian.controllers.capacity.main import unit as capacity_unit  # it imports this module's Unit

        units.append(capacity_unit(settings, client, recorder))
    return Assembly(units, ControllerMetrics(registry))


def _serve_metrics(address: str, registry: CollectorRegistry) -> None:
    if not address:
        return
    host, _, port = address.rpartition(":")
    start_http_server(int(port), addr=host or "0.0.0.0", registry=registry)  # noqa: S104 - pod network


def run(settings: ControllersSettings) -> None:
    client = KubeClient(load_config(settings.kubeconfig, settings.kube_api_endpoint))
    recorder = EventRecorder(client, "kustodian-controllers")
    registry = CollectorRegistry()
    _serve_metrics(settings.listen_address, registry)
    assembly = build(settings, client, recorder, registry)
    if not assembly.units:
        log.warning("no controller is enabled; nothing to do")
        return

    def lead(lost: threading.Event) -> None:
        assembly.start(settings.workers, settings.sync_timeout)
        lost.wait()

    if not settings.leader_election:
        done = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: done.set())
        assembly.start(settings.workers, settings.sync_timeout)
        done.wait()
        assembly.stop()
        return
    elector = LeaderElector(client, namespace=settings.namespace, name=settings.leader_election_lease,
                            identity=settings.pod_name)
    # SIGTERM (pod deletion, rollout): stop acting, then release the Lease so the next
    # replica takes over at once instead of after the lease duration
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: elector.stop())
    try:
        elector.run(lead, assembly.stop)
    finally:
        recorder.close()
        client.close()
