"""What every long-running process shares: the Manager, the work queue, the health server.

A layer of its own between the kube adapter and the components: the webhook and the
controllers both build on it, and neither may import the other.
"""

from kustodian.runtime.health import Checks, HealthServer
from kustodian.runtime.manager import CacheFactory, LeaderElection, Manager, Reconciler
from kustodian.runtime.workqueue import Controller, ControllerMetrics, Result

__all__ = ["CacheFactory", "Checks", "Controller", "ControllerMetrics", "HealthServer", "LeaderElection",
           "Manager", "Reconciler", "Result"]
