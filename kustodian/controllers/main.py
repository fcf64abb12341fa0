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

from kustodian.controllers.reclaim.controller import install as install_reclaim
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.events import EventRecorder
from kustodian.runtime import Manager, leader_election
from kustodian.settings import ControllersSettings

log = logging.getLogger(__name__)

COMPONENT = "kustodian-controllers"


def build(settings: ControllersSettings, client: KubeClient, recorder: EventRecorder,
          registry: CollectorRegistry | None = None) -> Manager:
    """The Manager with every enabled controller installed; nothing started.

    Each controller has one ``install(manager, settings)``, the same one its own command uses.
    """
    manager = Manager(client, name=COMPONENT, registry=registry,
                      leader_election=leader_election(settings.leader_election, settings.kube.namespace),
                      sync_timeout=settings.controllers.sync_timeout.total_seconds(),
                      health_address=settings.metrics.listen_address, metrics_path=settings.metrics.path,
                      workers=settings.controllers.workers)
    if settings.reclaim.enabled:
        namespace = settings.kube.namespace
        reclaim = install_reclaim(manager, settings.reclaim, namespace=namespace, recorder=recorder)
        if settings.reclaim.mutation_params:  # the reclaim-space policy's params, from propagation's caches
            from kustodian.controllers.reclaim.params import install as install_params

            install_params(manager, reclaim, namespace=namespace, name=settings.reclaim.mutation_params)
    if settings.node_cleanup.enabled:
        from kustodian.controllers.node_cleanup.main import install as install_node_cleanup

        install_node_cleanup(manager, settings.node_cleanup, recorder=recorder)
    if settings.capacity.enabled:
        from kustodian.controllers.capacity.main import install as install_capacity

        install_capacity(manager, settings.capacity, recorder=recorder)
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
