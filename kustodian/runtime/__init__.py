"""What every long-running process shares: the Manager, its runnables, the work queue, the health server.

A layer of its own between the kube adapter and the components: the webhook and the
controllers both build on it, and neither may import the other.
"""

from kustodian.runtime.health import Checks, HealthServer
from kustodian.runtime.manager import (
    AfterSync,
    CacheFactory,
    HasPrimary,
    LeaderElection,
    Manager,
    Reconciler,
    Resyncs,
    leader_election,
)
from kustodian.runtime.metrics import CacheCollector, with_process_metrics
from kustodian.runtime.periodic import SYSTEM_TIMER, Periodic, SystemTimer, Timer
from kustodian.runtime.runnables import Loop, Runnable, Service, Syncs, sync_report
from kustodian.runtime.workqueue import ControllerMetrics, Result, WorkQueue

__all__ = [
    "SYSTEM_TIMER",
    "AfterSync",
    "CacheCollector",
    "CacheFactory",
    "Checks",
    "ControllerMetrics",
    "HasPrimary",
    "HealthServer",
    "LeaderElection",
    "Loop",
    "Manager",
    "Periodic",
    "Reconciler",
    "Result",
    "Resyncs",
    "Runnable",
    "Service",
    "Syncs",
    "SystemTimer",
    "Timer",
    "WorkQueue",
    "leader_election",
    "sync_report",
    "with_process_metrics",
]
