"""``kustodian node-cleanup``: the node-loss cleanup controller on its own, upstream-compatible.

:func:`build` assembles everything from settings, a client and a clock without
starting anything, so tests drive the very object production runs; :func:`run` adds
what only a process has: the metrics endpoint, signals and leader election (15 s
lease, 10 s renew deadline, 2 s retry).  Nothing acts before the Node, PV and PVC
caches are fully synced: on a partial Node list every PV would look orphaned.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from kustodian.controllers.metrics_server import serve_metrics
from kustodian.controllers.node_cleanup.controller import Clock, NodeCleanup
from kustodian.controllers.runtime import Controller, ControllerMetrics
from kustodian.kube.cache import wait_all_synced
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.events import EventRecorder
from kustodian.kube.leader import LeaderElector
from kustodian.settings import NodeCleanupSettings

log = logging.getLogger(__name__)

COMPONENT = "kustodian-node-cleanup"


def utc_now() -> datetime:
    return datetime.now(UTC)


class NodeCleanupApp:
    """The cleanup controller (caches, queue, workers), its resync loop and the PV deleter."""

    def __init__(self, settings: NodeCleanupSettings, cleanup: NodeCleanup, controller: Controller,
                 recorder: EventRecorder, registry: CollectorRegistry) -> None:
        self.settings = settings
        self.cleanup = cleanup
        self.controller = controller
        self.recorder = recorder
        self.registry = registry
        self._stopping = threading.Event()
        self._loops: list[threading.Thread] = []
        self._started = False
        self._lock = threading.Lock()

    def start(self, sync_timeout: float = 300.0) -> None:
        """Start the caches, wait for their first full list, then the workers and the loops."""
        self.cleanup.wire(self.controller.enqueue)  # before the caches: the initial list enqueues every PV
        for cache in self.cleanup.caches:
            cache.start()
        self._started = True
        if not wait_all_synced(self.cleanup.caches, sync_timeout):
            raise TimeoutError("caches did not sync; refusing to act on a partial view")
        with self._lock:
            if self._stopping.is_set():  # stopped (lease lost, SIGTERM) while waiting for the caches
                return
            self.controller.start()
            self._loop("resync", self._resync_loop)
            self._loop("deleter", lambda: self.cleanup.run_deleter(
                self.settings.node_cleanup.discovery_interval.total_seconds(), self._stopping))
        log.info("node cleanup running for StorageClasses %s (PVC deletion delay %s)",
                 ", ".join(sorted(self.cleanup.opted_in)) or "<none>", self.settings.node_cleanup.delay)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop acting at once (loops, workers), then the caches; flush pending Events."""
        with self._lock:
            self._stopping.set()
        self.controller.stop(timeout)
        for thread in self._loops:
            thread.join(timeout)
        if self._started:
            for cache in self.cleanup.caches:
                cache.stop(timeout=1)
        self.recorder.close()

    def _resync_loop(self) -> None:
        interval = self.settings.node_cleanup.resync.total_seconds()
        while not self._stopping.wait(interval):
            self.cleanup.resync(self.controller.enqueue)

    def _loop(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=f"node-cleanup-{name}", daemon=True)
        thread.start()
        self._loops.append(thread)


def build(settings: NodeCleanupSettings, client: KubeClient, clock: Clock = utc_now, *,
          registry: CollectorRegistry | None = None) -> NodeCleanupApp:
    """Everything wired, nothing started; metrics go to ``registry`` (a fresh one by default)."""
    registry = registry if registry is not None else CollectorRegistry()
    recorder = EventRecorder(client, COMPONENT)
    cleaning = settings.node_cleanup
    cleanup = NodeCleanup(client, storage_classes=cleaning.storage_classes, delay=cleaning.delay,
                          detect_recreated=cleaning.detect_recreated, recorder=recorder, registry=registry,
                          clock=clock)
    controller = Controller("node-cleanup", cleanup.reconcile, cleaning.workers,
                            metrics=ControllerMetrics(registry))
    return NodeCleanupApp(settings, cleanup, controller, recorder, registry)


def run(settings: NodeCleanupSettings, *, stop: threading.Event | None = None) -> None:
    """Serve metrics, run the controller while this replica leads (or always), block until stopped.

    SIGTERM/SIGINT stop it; an embedding caller (a test) passes ``stop`` instead, and no
    signal handler is installed.
    """
    if not settings.node_cleanup.storage_classes:
        log.warning("no --storageclass-names given: nothing is opted in, so nothing will be cleaned")
    client = KubeClient(load_config(settings.kube.kubeconfig, settings.kube.kube_api_endpoint),
                        user_agent=COMPONENT)
    app = build(settings, client)
    server = serve_metrics(settings.metrics.listen_address, settings.metrics.path, app.registry)
    done = stop if stop is not None else threading.Event()
    if stop is None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: done.set())
    try:
        election = settings.leader_election
        if not election.enabled:
            try:
                app.start()
                done.wait()
            finally:
                app.stop()
            return
        elector = LeaderElector(client, namespace=settings.kube.namespace, name=election.lease_name,
                                identity=election.identity,
                                lease_duration=election.lease_duration.total_seconds(),
                                renew_deadline=election.renew_deadline.total_seconds(),
                                retry_period=election.retry_period.total_seconds())

        def lead(lost: threading.Event) -> None:
            try:
                app.start()
            except TimeoutError:
                log.exception("could not start; giving up the lease")
                done.set()

        # on stop (rollout): stop acting, then release the Lease so the next replica takes over at once
        def stop_when_done() -> None:
            done.wait()
            elector.stop()

        threading.Thread(target=stop_when_done, name="node-cleanup-stop", daemon=True).start()
        elector.run(lead, app.stop)
        done.set()  # a lost lease ends the process too: its restart campaigns again with fresh caches
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
        client.close()
