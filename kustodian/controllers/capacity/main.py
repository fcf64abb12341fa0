"""Assembly of the capacity controller for ``kustodian controllers``.

``build`` resolves csi-baremetal's AC and ACR CRDs (and, if installed, its
LogicalVolumeGroup CRD) through API discovery first: without them the caches
would retry their watches forever and the sidecar would only time out waiting for a
sync, so a missing CRD is refused at start with a message that says what to install.
``install`` adds the controller, a reconciler in its own right, to the Manager (which runs
it under the Lease, starting workers only once every cache is synced: planning on a partial
ACR list would promise drives that are already reserved), with a timer that re-plans and
collects garbage every ``capacity_gc_interval``.
"""

from __future__ import annotations

from kustodian.clock import Clock, utc_now
from kustodian.controllers.capacity.controller import GC_KEY, PLAN_KEY, CapacityReservations
from kustodian.errors import ConfigError
from kustodian.kube.cache import CacheFactory
from kustodian.kube.client import KubeClient
from kustodian.kube.discovery import resolve
from kustodian.kube.events import EventRecorder
from kustodian.policy.capacity import AC_KIND_KEY, ACR_KIND_KEY, LVG_KIND_KEY
from kustodian.runtime import Manager, Periodic
from kustodian.settings import CapacityGroup

NAME = "capacity"


class CapacityCrdsMissing(ConfigError):
    pass


def build(settings: CapacityGroup, client: KubeClient, recorder: EventRecorder | None = None, *,
          clock: Clock = utc_now) -> CapacityReservations:
    """The controller on its own (caches of its own, which the caller starts), wired to nothing."""
    return reservations(settings, client, recorder, clock, None)


def reservations(settings: CapacityGroup, client: KubeClient, recorder: EventRecorder | None, clock: Clock,
                 caches: CacheFactory | None) -> CapacityReservations:
    """The controller, its caches from ``caches`` (the Manager's, under one), wired to nothing."""
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
        recorder=recorder, clock=clock, node_id_key=settings.node_id_key, caches=caches)


def install(manager: Manager, settings: CapacityGroup, *, recorder: EventRecorder | None = None,
            clock: Clock = utc_now) -> CapacityReservations:
    """The capacity controller on ``manager``: its reconciler and its timer, both under the Lease.

    The timer re-plans the batch and collects garbage every ``gc_interval``: the gc key
    requeues itself, but a terminal error would drop it, and the timer keeps it alive.
    """
    client = manager.client
    assert client is not None, "the capacity controller reads and writes through the API server"
    capacity = reservations(settings, client, recorder, clock, manager.cache)
    queue = manager.add(capacity, resync=0)  # the timer below is its resync

    def tick() -> None:
        queue.enqueue(PLAN_KEY)
        queue.enqueue(GC_KEY)

    manager.add_runnable(Periodic(f"{NAME}-timer", tick, settings.gc_interval.total_seconds(),
                                  immediate=False))
    return capacity
