"""Assembly of the capacity controller for ``kustodian controllers``.

``build`` resolves csi-baremetal's AC and ACR CRDs (and, if installed, its
LogicalVolumeGroup CRD) through API discovery first: without them the caches
would retry their watches forever and the sidecar would only time out waiting for a
sync, so a missing CRD is refused at start with a message that says what to install.
``unit`` hands the controller to ``controllers.main`` (which runs it under the Lease,
starting workers only once every cache is synced: planning on a partial ACR list
would promise drives that are already reserved).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from kustodian.controllers.capacity.controller import GC_KEY, CapacityReservations, Clock, utc_now
from kustodian.controllers.capacity.settings import CapacitySettings
from kustodian.controllers.main import Unit
from kustodian.kube.client import KubeClient
from kustodian.kube.discovery import resolve
from kustodian.kube.events import EventRecorder
from kustodian.policy.capacity.model import AC_KIND_KEY, ACR_KIND_KEY, LVG_KIND_KEY

UNIT_NAME = "capacity"


class CapacityCrdsMissing(RuntimeError):
    pass


def build(settings: CapacitySettings, client: KubeClient, recorder: EventRecorder | None = None, *,
          clock: Clock = utc_now) -> CapacityReservations:
    """The controller, wired to nothing and started nowhere."""
    resources = resolve(client, (AC_KIND_KEY, ACR_KIND_KEY, LVG_KIND_KEY))
    missing = sorted({AC_KIND_KEY, ACR_KIND_KEY} - resources.keys())
    if missing:
        raise CapacityCrdsMissing(
            f"the capacity controller needs the {', '.join(missing)} CRD(s): install csi-baremetal "
            "(its operator's chart carries them) "
            "or disable it (KUSTODIAN_CAPACITY=false)")
    return CapacityReservations(
        client, resources, options=settings.plan_options(),
        reservation_ttl=settings.capacity_reservation_ttl, gc_interval=settings.capacity_gc_interval,
        recorder=recorder, clock=clock, node_id_key=settings.capacity_node_id_key)


def unit(settings: CapacitySettings, client: KubeClient, recorder: EventRecorder | None = None) -> Unit:
    """The capacity controller as a ``controllers.main.Unit`` (append it to ``build``'s units)."""
    capacity = build(settings, client, recorder)
    interval = settings.capacity_gc_interval.total_seconds()

    def periodic_gc(stop: threading.Event, enqueue: Callable[[str], None]) -> None:
        # the gc key requeues itself, but a permanent error drops it: keep it alive regardless
        while not stop.wait(interval):
            enqueue(GC_KEY)

    return Unit(UNIT_NAME, capacity.caches, capacity.wire, capacity.reconcile, background=[periodic_gc])
