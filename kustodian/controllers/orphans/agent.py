"""``kustodian node-agent``: report orphaned replica directories as Orphans, remove them on request.

One agent per node (a DaemonSet), on one Manager.  This module only assembles and runs it:
:func:`install` puts the agent's parts (:mod:`controllers.orphans.node`: the disk monitor,
the orphan-sync and orphan-cleanup reconcilers, the sizer, the heartbeat, Longhorn's
ownership tracker and the Orphan cache) on a Manager without starting anything, for
:func:`run` and for the tests, which drive that very Manager; the Manager waits for every
cache before the first reconcile or scan.  What each part does is told in its own module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from kustodian.clock import utc_now
from kustodian.controllers.orphans.node import NodeAgent
from kustodian.controllers.orphans.sizer import OrphanBytes
from kustodian.controllers.orphans.state import ORPHANS, AgentOptions
from kustodian.controllers.orphans.tracker import Longhorn, NoTracker, ReplicaTracker
from kustodian.kube.cache import CacheFactory
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.events import EventRecorder
from kustodian.policy.orphans import QuarantinePolicy
from kustodian.runtime import Manager
from kustodian.settings import NodeAgentSettings

__all__ = ["COMPONENT", "ORPHANS", "NodeAgent", "build_manager", "install", "make_tracker", "run"]

log = logging.getLogger(__name__)

COMPONENT = "kustodian-node-agent"


def make_tracker(settings: NodeAgentSettings, client: KubeClient, caches: CacheFactory | None = None
                 ) -> ReplicaTracker:
    agent = settings.node_agent
    if agent.tracker == "none":
        return NoTracker()
    return Longhorn(client, agent.longhorn_namespace, agent.node_name,
                    recheck_interval=max(agent.scan_interval.total_seconds(), 1.0), caches=caches)


def install(manager: Manager, settings: NodeAgentSettings, *, recorder: EventRecorder | None = None,
            tracker: ReplicaTracker | None = None, clock: Callable[[], datetime] = utc_now,
            monitor: bool = True) -> NodeAgent:
    """The node agent on ``manager``: Longhorn's tracker, the two reconcilers, the periodic runnables.

    ``monitor=False`` leaves the disk monitor, the sizer and the heartbeat out, for tests that
    scan (and beat) when they choose.
    """
    client = manager.client
    assert client is not None, "the node agent reports through the API server"
    agent, namespace = settings.node_agent, settings.kube.namespace
    options = AgentOptions(
        node=agent.node_name, namespace=namespace, disks=tuple(agent.disk_specs),
        auto_delete=agent.auto_delete, grace=agent.grace_period, write_grace=agent.write_grace,
        quarantine=QuarantinePolicy(agent.quarantine_retention, agent.quarantine_min_retention,
                                    agent.quarantine_pressure_free),
        brake_share=agent.brake_share, brake_min_orphans=agent.brake_min_orphans)
    if tracker is None:
        tracker = make_tracker(settings, client, manager.cache)
    if recorder is None:
        recorder = EventRecorder(client, COMPONENT, default_namespace=namespace)
    node_agent = NodeAgent(
        client, options, tracker=tracker, recorder=recorder, caches=manager.cache, clock=clock,
        heartbeat_interval=agent.heartbeat_interval, heartbeat_timeout=agent.heartbeat_timeout,
        longhorn_namespace=agent.longhorn_namespace,
        scan_interval=agent.scan_interval.total_seconds())
    manager.add_runnable(node_agent.tracker)
    manager.registry.register(OrphanBytes(node_agent.sizer))
    node_agent.queue = manager.add(node_agent.cleanup, workers=settings.controllers.workers, resync=0)
    manager.add(node_agent.sync, workers=1, resync=0)
    if monitor:
        manager.add_runnable(node_agent.monitor.runnable(agent.scan_interval.total_seconds()))
        manager.add_runnable(node_agent.sizer.runnable(agent.size_interval.total_seconds()))
        manager.add_runnable(node_agent.beats.loop())
    return node_agent


def build_manager(settings: NodeAgentSettings, client: KubeClient, *,
                  recorder: EventRecorder | None = None) -> tuple[Manager, NodeAgent]:
    """The node agent process's one Manager, the agent installed, nothing started."""
    manager = Manager(client, name=COMPONENT, health_address=settings.metrics.listen_address,
                      metrics_path=settings.metrics.path,
                      sync_timeout=settings.controllers.sync_timeout.total_seconds())
    return manager, install(manager, settings, recorder=recorder)


def run(settings: NodeAgentSettings) -> int:
    """Run the agent on a Manager (signals, /healthz, /readyz, metrics) until SIGTERM/SIGINT; the exit
    code (1: the caches never synced)."""
    client = KubeClient(load_config(settings.kube.kubeconfig, settings.kube.kube_api_endpoint,
                                    settings.kube.context),
                        user_agent=COMPONENT)
    recorder = EventRecorder(client, COMPONENT, default_namespace=settings.kube.namespace)
    manager, agent = build_manager(settings, client, recorder=recorder)
    if not agent.disks:
        log.warning("no disk is configured (--node-agent-disks / KUSTODIAN_NODE_AGENT__DISKS): "
                    "nothing will be scanned")
    try:
        return manager.run()
    finally:
        recorder.close()
        client.close()
