"""Assembly of the capacity controller for ``kustodian controllers``.

``build`` resolves csi-baremetal's AC and ACR CRDs (and, if installed, its
LogicalVolumeGroup CRD) through API discovery first: without them the caches
would retry their watches forever and the sidecar would only time out waiting for a
sync, so a missing CRD is refused at start with a message that says what to install.
``reconciler`` adapts the controller to the Manager's reconcile contract (which runs it
under the Lease, starting workers only once every cache is synced: planning on a partial
ACR list would promise drives that are already reserved); its resync re-plans and
collects garbage every ``capacity_gc_interval``.
"""

from __future__ import annotations

from collections.abc import Callable

from kustodian.clock import Clock, utc_now
from kustodian.controllers.capacity.controller import GC_KEY, PLAN_KEY, CapacityReservations
from kustodian.errors import ConfigError
from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.discovery import resolve
from kustodian.kube.events import EventRecorder
from kustodian.policy.capacity.model import AC_KIND_KEY, ACR_KIND_KEY, LVG_KIND_KEY
from kustodian.runtime.workqueue import Result
from kustodian.settings import CapacityGroup

NAME = "capacity"


class CapacityCrdsMissing(ConfigError):
    pass


def build(settings: CapacityGroup, client: KubeClient, recorder: EventRecorder | None = None, *,
          clock: Clock = utc_now) -> CapacityReservations:
    """The controller, wired to nothing and started nowhere."""
    resources = resolve(client, (AC_KIND_KEY, ACR_KIND_KEY, LVG_KIND_KEY))
    missing = sorted({AC_KIND_KEY, ACR_KIND_KEY} - resources.keys())
    if missing:
        raise CapacityCrdsMissing(
            f"the capacity controller needs the {', '.join(missing)} CRD(s): install csi-baremetal "
            "(its operator's chart carries them) "
            "or disable it (--no-capacity / KUSTODIAN_CAPACITY__ENABLED=false)")
    return CapacityReservations(
        client, resources, options=settings.plan_options(),
        reservation_ttl=settings.reservation_ttl, gc_interval=settings.gc_interval,
        recorder=recorder, clock=clock, node_id_key=settings.node_id_key)


class CapacityReconciler:
    """The capacity controller under the Manager's contract."""

    name = NAME

    def __init__(self, capacity: CapacityReservations) -> None:
        self.capacity = capacity

    @property
    def caches(self) -> list[WatchCache]:
        return self.capacity.caches

    def wire(self, enqueue: Callable[[str], None]) -> None:
        self.capacity.wire(enqueue)

    def reconcile(self, key: str) -> Result | None:
        return self.capacity.reconcile(key)

    def resync(self, enqueue: Callable[[str], None]) -> None:
        # the gc key requeues itself, but a terminal error would drop it: the resync keeps it alive
        enqueue(PLAN_KEY)
        enqueue(GC_KEY)
