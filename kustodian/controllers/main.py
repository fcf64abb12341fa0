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
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.events import EventRecorder
from kustodian.runtime.manager import Manager, leader_election
from kustodian.settings import ControllersSettings

log = logging.getLogger(__name__)

COMPONENT = "kustodian-controllers"


def build(settings: ControllersSettings, client: KubeClient, recorder: EventRecorder,
          registry: CollectorRegistry | None = None) -> Manager:
    """The Manager with every enabled controller added; nothing started."""
    manager = Manager(client, name=COMPONENT, registry=registry,
                      leader_election=leader_election(settings.leader_election, settings.kube.namespace),
                      sync_timeout=settings.controllers.sync_timeout.total_seconds(),
                      health_address=settings.metrics.listen_address, metrics_path=settings.metrics.path,
                      workers=settings.controllers.workers)
    if settings.reclaim.enabled:
        manager.add(ReclaimPropagation(client, config_namespace=settings.kube.namespace,
                                       config_name=settings.reclaim.config_name, recorder=recorder,
                                       caches=manager.cache,
                                       csi_addons_config=settings.reclaim.csi_addons_config_ref,
                                       keyrotation=settings.reclaim.keyrotation))
    if settings.node_cleanup.enabled:
        from kustodian.controllers.node_cleanup.controller import NodeCleanup

        cleaning = settings.node_cleanup
        cleanup = NodeCleanup(client, storage_classes=cleaning.storage_classes, delay=cleaning.delay,
                              detect_recreated=cleaning.detect_recreated, recorder=recorder,
                              registry=manager.registry, caches=manager.cache)
        manager.add(cleanup, resync=cleaning.resync.total_seconds())
        manager.add(cleanup.stale_volumes, workers=1, resync=0)
    if settings.capacity.enabled:
        from kustodian.controllers.capacity.main import CapacityReconciler
        from kustodian.controllers.capacity.main import build as build_capacity

        manager.add(CapacityReconciler(build_capacity(settings.capacity, client, recorder)),
                    resync=settings.capacity.gc_interval.total_seconds())
    return manager


def run(settings: ControllersSettings) -> int:
    client = KubeClient(load_config(settings.kube.kubeconfig, settings.kube.kube_api_endpoint,
                                    settings.kube.context),
                        user_agent=COMPONENT)
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
