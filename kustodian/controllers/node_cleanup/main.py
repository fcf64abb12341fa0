"""``kustodian node-cleanup``: the node-loss cleanup controller on its own, upstream-compatible.

:func:`build` assembles everything on a Manager from settings, a client and a clock
without starting anything, so tests drive the very object production runs; :func:`run`
adds what only a process has: the metrics endpoint, signals and leader election (15 s
lease, 10 s renew deadline, 2 s retry).  Nothing acts before the Node, PV and PVC
caches are fully synced: on a partial Node list every PV would look orphaned.
"""

from __future__ import annotations

import logging
import threading
from typing import Literal

from prometheus_client import CollectorRegistry

from kustodian.clock import Clock, utc_now
from kustodian.controllers.node_cleanup.controller import NodeCleanup
from kustodian.controllers.node_cleanup.recovery import PodRecovery
from kustodian.kube.access import can_i
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.events import EventRecorder
from kustodian.runtime import Manager, WorkQueue, leader_election
from kustodian.settings import NodeCleanupGroup, NodeCleanupSettings

log = logging.getLogger(__name__)

COMPONENT = "kustodian-node-cleanup"
EVENT_SOURCE = "cleanup-controller"  # upstream's EventSource.Component: alerts and dashboards match it


def timer_store(client: KubeClient) -> Literal["annotation", "memory"]:
    """Where the node-missing timer lives, by what this ServiceAccount may do (logged once).

    With ``patch`` on PVs (Kustodian's chart) the timer is an annotation, visible on the PV;
    with upstream's ClusterRole (get/list/watch/delete only) it is kept in memory, as upstream
    keeps it.  Either way a restart restarts the delay, and never shortens it (issue 34).
    """
    allowed = can_i(client, "patch", "persistentvolumes")
    if allowed:
        log.info("node-missing timer kept in PV annotations "
                 "(this ServiceAccount may patch persistentvolumes)")
        return "annotation"
    log.warning("node-missing timer kept in memory: this ServiceAccount may not patch persistentvolumes%s "
                "(upstream's ClusterRole does not grant it); a restart restarts the PVC deletion delay",
                "" if allowed is False else " (or the access review failed)")
    return "memory"


class NodeCleanupApp:
    """The cleanup reconciler on its own Manager (caches, queues, workers, resync).

    Tests drive exactly what production runs: ``start`` (blocks until the caches synced) and
    ``stop``; ``run`` adds the health/metrics endpoint, signals and leader election.
    """

    def __init__(self, settings: NodeCleanupSettings, cleanup: NodeCleanup, manager: Manager,
                 controller: WorkQueue, recorder: EventRecorder) -> None:
        self.settings = settings
        self.cleanup = cleanup
        self.manager = manager
        self.controller = controller
        self.recorder = recorder
        self.registry = manager.registry

    def start(self, sync_timeout: float | None = None) -> None:
        """Start the caches, wait for their first full list, then the workers and the loops."""
        if sync_timeout is not None:
            self.manager.sync_timeout = sync_timeout
        if not self.manager.start():
            raise TimeoutError("caches did not sync; refusing to act on a partial view")
        log.info("node cleanup running for StorageClasses %s (PVC deletion delay %s)",
                 ", ".join(sorted(self.cleanup.opted_in)) or "<none>", self.settings.node_cleanup.delay)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop acting at once (loops, workers), then the caches; flush pending Events."""
        self.manager.stop_acting(timeout)
        self.recorder.close()


def install(manager: Manager, cleaning: NodeCleanupGroup, *, recorder: EventRecorder,
            clock: Clock = utc_now) -> tuple[NodeCleanup, WorkQueue]:
    """Node cleanup on ``manager``: the claim reconciler (timer store by RBAC), the PV reconciler,
    and (when RBAC allows it) the pod reconciler that recovers StatefulSet pods.

    The one wiring of node cleanup, for ``kustodian node-cleanup`` and ``kustodian controllers``.
    """
    client = manager.client
    assert client is not None, "node cleanup reads and deletes through the API server"
    if "discovery_interval" in cleaning.model_fields_set:
        # upstream's flag is accepted so its command lines keep working; say that it changes nothing
        log.warning("--stale-pv-discovery-interval=%s has no effect: stale PVs are deleted on Node and "
                    "PV events, not by a periodic scan", cleaning.discovery_interval)
    cleanup = NodeCleanup(client, storage_classes=cleaning.storage_classes, delay=cleaning.delay,
                          detect_recreated=cleaning.detect_recreated, recorder=recorder,
                          registry=manager.registry, clock=clock, caches=manager.cache,
                          timer=timer_store(client))
    queue = manager.add(cleanup, resync=cleaning.resync.total_seconds())
    # one worker, as upstream's deleter: PVs are cleaned in response to Node and PV events
    manager.add(cleanup.stale_volumes, workers=1, resync=0)
    if may_recover_pods(client):
        manager.add(PodRecovery(cleanup.shared, registry=manager.registry), workers=1, resync=0)
    return cleanup, queue


def may_recover_pods(client: KubeClient) -> bool:
    """Whether this ServiceAccount may watch and delete pods (Kustodian's chart: yes; upstream's: no).

    Without it node cleanup runs as upstream does, and the StatefulSet pods left waiting for a
    PVC it deleted are left to a person (logged once).
    """
    allowed = all(can_i(client, verb, "pods") for verb in ("list", "watch", "delete"))
    if not allowed:
        log.warning("StatefulSet pods waiting for a PVC deleted by node cleanup are not recovered: "
                    "this ServiceAccount may not list, watch and delete pods")
    return allowed


def build(settings: NodeCleanupSettings, client: KubeClient, clock: Clock = utc_now, *,
          registry: CollectorRegistry | None = None) -> NodeCleanupApp:
    """Everything wired, nothing started; metrics go to ``registry`` (a fresh one by default)."""
    cleaning = settings.node_cleanup
    manager = Manager(client, name=COMPONENT, registry=registry,
                      leader_election=leader_election(settings.leader_election, settings.kube.namespace),
                      health_address=settings.metrics.listen_address, metrics_path=settings.metrics.path,
                      workers=cleaning.workers, resync_period=cleaning.resync.total_seconds())
    recorder = EventRecorder(client, EVENT_SOURCE)
    cleanup, queue = install(manager, cleaning, recorder=recorder, clock=clock)
    return NodeCleanupApp(settings, cleanup, manager, queue, recorder)


def run(settings: NodeCleanupSettings, *, stop: threading.Event | None = None) -> int:
    """Serve health and metrics, run the controller while this replica leads (or always), block
    until stopped; the exit code (1: the caches could not sync, or the Lease was lost).

    SIGTERM/SIGINT stop it; an embedding caller (a test) passes ``stop`` instead, and no
    signal handler is installed.
    """
    if not settings.node_cleanup.storage_classes:
        log.warning("no --storageclass-names given: nothing is opted in, so nothing will be cleaned")
    client = KubeClient(load_config(settings.kube.kubeconfig, settings.kube.kube_api_endpoint,
                                    settings.kube.context),
                        user_agent=COMPONENT)
    app = build(settings, client)
    log.info("node cleanup for StorageClasses %s (PVC deletion delay %s)",
             ", ".join(sorted(app.cleanup.opted_in)) or "<none>", settings.node_cleanup.delay)
    try:
        return app.manager.run(stop)
    finally:
        app.recorder.close()
        client.close()
