"""Capacity housekeeping: reservations collected when stale, narrowed once their pod is bound.

Two of the capacity controller's three keys (:mod:`controllers.capacity.controller`), each
gather -> decide -> act:

- ``gc``: ACRs whose pod (``<namespace>-<pod>``) is gone or Running, and RESERVED ACRs past the
  TTL since their last status change, are deleted with a UID precondition and a Warning event:
  one frozen ``ReservationGcInput`` from the caches (:mod:`controllers.capacity.gather`), the
  pure ``decide_reservation_gc``, and each delete confirmed by the same decision on that ACR and
  its pod read from the API server (the pod cache may be behind the ACR cache).
- ``release``: a pod bound to a node needs only that node's reservations; the others are
  handed back at once (``narrow_to_node``): one frozen ``ReservationReleaseInput``, the pure
  ``decide_reservation_release``, each write carrying the resourceVersion judged on.  What is
  written is handed to the planner's memory of its own writes (``remember``), so the next
  batch does not plan over a cache that has not seen it yet.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Final

from kustodian.controllers.capacity.gather import ReservationSource, gather, gather_release
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import Conflict, NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import Resource
from kustodian.policy.capacity import (
    StaleReservation,
    confirms,
    decide_reservation_gc,
    decide_reservation_release,
)
from kustodian.policy.jsonpatch import merge_diff
from kustodian.policy.objects import RawObject, name, str_field, uid
from kustodian.runtime import Result

__all__ = ["EVENT_COLLECTED", "EVENT_RELEASED", "Housekeeping"]

log = logging.getLogger(__name__)

EVENT_RELEASED: Final = "ReservationNarrowed"
EVENT_COLLECTED: Final = "ReservationCollected"


def _rv(obj: RawObject) -> str:
    return str_field(obj, "metadata", "resourceVersion")


class Housekeeping:
    """Collection and release of ACRs; ``cache_source`` for every pass, ``api_source`` to confirm."""

    def __init__(self, client: KubeClient, acr_resource: Resource, *, cache_source: ReservationSource,
                 api_source: ReservationSource, recorder: EventRecorder | None, clock: Callable[[], datetime],
                 reservation_ttl: timedelta, gc_interval: timedelta,
                 remember: Callable[[Obj, str], None]) -> None:
        self.client, self.acr_resource = client, acr_resource
        self.cache_source, self.api_source = cache_source, api_source
        self.recorder, self.clock = recorder, clock
        self.reservation_ttl, self.gc_interval = reservation_ttl, gc_interval
        self._remember = remember
        self._lock = threading.Lock()
        self.collected = 0  # counters, for tests and logs
        self.released = 0


    def collect_garbage(self) -> Result:
        """Delete ACRs whose pod is gone or Running, and RESERVED ACRs past the TTL.

        Gathered from the caches, decided, and each delete confirmed by the same decision on
        that ACR and its pod read from the API server (the pod cache may be behind the ACR cache).
        """
        observed = gather(self.cache_source, self.reservation_ttl)
        now = self.clock()
        by_name = {name(a): a for a in observed.reservations}
        for stale in decide_reservation_gc(observed, now):
            self._collect(by_name[stale.name], stale, now)
        return Result(requeue_after=self.gc_interval.total_seconds())

    def _collect(self, acr: RawObject, stale: StaleReservation, now: datetime) -> None:
        """Delete ``acr`` if the decision on a gather from the API server collects it too."""
        fresh = decide_reservation_gc(gather(self.api_source, self.reservation_ttl, (stale.name,)), now)
        if not confirms(fresh, stale):
            log.debug("ACR %s: %s in the caches, not on the API server; kept", stale.name, stale.why,
                      extra={"kind": "AvailableCapacityReservation", "object": stale.name})
            return
        self._delete(acr, next(s.why for s in fresh if s.name == stale.name))

    # -- releasing what the scheduler did not pick ---------------------------------------------

    def release_unchosen(self) -> Result | None:
        """Narrow every RESERVED ACR whose pod is bound to that node's reservations.

        Gathered from the caches, decided, written with the resourceVersion it was judged on.
        """
        retry = False
        for release in decide_reservation_release(gather_release(self.cache_source)):
            acr, node_id = release.reservation, release.node_id
            acr_name = name(acr)
            patch = merge_diff(acr, release.narrowed)
            patch.setdefault("metadata", {})["resourceVersion"] = _rv(acr)
            extra = {"kind": "AvailableCapacityReservation", "object": acr_name}
            try:
                written = self.client.patch(self.acr_resource, acr_name, patch)
            except NotFound:
                continue
            except Conflict:
                retry = True  # changed under us: look again with the fresh copy
                continue
            with self._lock:
                self.released += 1
            self._remember(written, _rv(acr))
            message = f"pod bound to node {node_id}: reservations on the other nodes released"
            log.info("ACR %s: %s", acr_name, message, extra=extra)
            if self.recorder is not None:
                self.recorder.record(written, "Normal", EVENT_RELEASED, message)
        return Result(requeue_after=0.2) if retry else None

    def _delete(self, acr: RawObject, why: str) -> None:
        acr_name = name(acr)
        extra = {"kind": "AvailableCapacityReservation", "object": acr_name}
        try:
            self.client.delete(self.acr_resource, acr_name, uid=uid(acr) or None)
        except NotFound:
            return
        except Conflict:  # another ACR of the same name now: not the one we judged
            log.info("ACR %s: recreated since it was found stale; kept", acr_name, extra=extra)
            return
        with self._lock:
            self.collected += 1
        message = f"stale reservation deleted: {why}"
        log.warning("ACR %s: %s", acr_name, message, extra=extra)
        if self.recorder is not None:
            self.recorder.record(acr, "Warning", EVENT_COLLECTED, message)
