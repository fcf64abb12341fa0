"""What every long-running process shares: the Manager, its runnables, the work queue, the health server.

A layer of its own between the kube adapter and the components: the webhook and the
controllers both build on it, and neither may import the other.
"""

from kustodian.runtime.health import Checks, HealthServer
from kustodian.runtime.manager import (
    AfterSync,
    CacheFactory,
    HasCaches,
    HasPrimary,
    LeaderElection,
    Manager,
    Reconciler,
    Resyncs,
)
from kustodian.runtime.runnables import Loop, Runnable, Service, Syncs
from kustodian.runtime.workqueue import ControllerMetrics, Result, WorkQueue

__all__ = ["AfterSync", "CacheFactory", "Checks", "ControllerMetrics", "HasCaches", "HasPrimary",
           "HealthServer", "LeaderElection", "Loop", "Manager", "Reconciler", "Result", "Resyncs", "Runnable",
           "Service", "Syncs", "WorkQueue"]
