"""``kustodian controllers``: the controller sidecar, assembled on one Manager.

Every enabled controller is a reconciler added to the Manager, which shares one watch cache
per kind between them (reclaim propagation and node cleanup read the same PVC cache), runs
them only while this replica holds the Lease (15 s / 10 s / 2 s), starts no worker before
every cache has synced (an unsynced PVC list would look like "no PVCs"), resyncs each one
periodically, and gives the Lease up and exits non-zero when the caches cannot sync.
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry

from kustodian.controllers.reclaim.controller import ReclaimPropagation
from kustodian.controllers.settings import ControllersSettings
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.events import EventRecorder
from kustodian.runtime.manager import LeaderElection, Manager

log = logging.getLogger(__name__)

COMPONENT = "kustodian-controllers"


def build(settings: ControllersSettings, client: KubeClient, recorder: EventRecorder,
          registry: CollectorRegistry | None = None) -> Manager:
    """The Manager with every enabled controller added; nothing started."""
    leader = LeaderElection(namespace=settings.namespace, lease=settings.leader_election_lease,
                            identity=settings.pod_name) if settings.leader_election else None
    manager = Manager(client, name=COMPONENT, registry=registry, leader_election=leader,
                      sync_timeout=settings.sync_timeout, health_address=settings.listen_address,
                      workers=settings.workers)
    if settings.reclaim_space:
        manager.add(ReclaimPropagation(client, config_namespace=settings.namespace,
                                       config_name=settings.reclaim_config_name, recorder=recorder,
                                       caches=manager.cache))
    if settings.node_cleanup:
        from kustodian.controllers.node_cleanup.controller import NodeCleanup

        cleanup = NodeCleanup(client, storage_classes=settings.node_cleanup_storage_classes,
                              delay=settings.node_cleanup_delay,
                              detect_recreated=settings.node_cleanup_detect_recreated, recorder=recorder,
                              registry=manager.registry, caches=manager.cache)
        manager.add(cleanup, resync=settings.node_cleanup_resync.total_seconds())
        discovery_s = settings.node_cleanup_discovery_interval.total_seconds()
        manager.add_loop("node-cleanup-deleter", lambda stop: cleanup.run_deleter(discovery_s, stop))
    if settings.capacity:
        from kustodian.controllers.capacity.main import CapacityReconciler
        from kustodian.controllers.capacity.main import build as build_capacity

        manager.add(CapacityReconciler(build_capacity(settings, client, recorder)),
                    resync=settings.capacity_gc_interval.total_seconds())
    return manager


def run(settings: ControllersSettings) -> int:
    client = KubeClient(load_config(settings.kubeconfig, settings.kube_api_endpoint), user_agent=COMPONENT)
    recorder = EventRecorder(client, COMPONENT)
    try:
        manager = build(settings, client, recorder, CollectorRegistry())
        if not manager.reconcilers:
            log.warning("no controller is enabled; nothing to do")
            return 0
        return manager.run()
    finally:
        recorder.close()
        client.close()
