"""Capacity reservations for csi-baremetal: a drop-in for its reservation controller.

It works on csi-baremetal's own ``csi-baremetal.dell.com/v1`` AvailableCapacity,
AvailableCapacityReservation and LogicalVolumeGroup objects, as the scheduler extender
creates and reads them (run it *instead of* csi-baremetal's reservation controller:
two planners would promise the same drives).

Three keys, not one key per ACR, because a reservation is only sound if it was planned
against *every* other reservation:

- ``plan``: one deterministic batch over the AC and ACR caches, through a
  ``CapacityPlanner`` kept between passes (AC and LVG changes are applied to it in
  place), so one new ACR costs its own placement, not the cluster's.  Each decision is written
  with the resourceVersion it was computed from.  The runtime never runs one key on two
  workers, so batches never overlap.  A 409 means the ACR changed under us: it is
  re-read and the *whole* batch is planned again.
- ``release`` and ``gc``: a bound pod's reservations on the other nodes handed back, stale
  reservations collected, each gather -> decide -> act with its deletes confirmed on the API
  server (:mod:`controllers.capacity.housekeeping`).

A REJECTED decision is final, so it is never written on the AC cache alone: the cache
may not yet show ACs created just before the ACR (two watches are not ordered with each
other).  A pass that rejects is planned again on a fresh list of the ACs from the API
server, and that plan is the one written (``_confirmed``).

Our own writes reach the watch cache a moment later; planning the next batch from a
cache that still shows an ACR as REQUESTED could hand its drives to someone else
(ties in creationTimestamp reorder the batch).  So every object we wrote or re-read is
kept in ``_written`` and preferred over the cache until the cache catches up (client-go's
mutation cache).

Writes are JSON merge patches carrying ``metadata.resourceVersion`` rather than a PUT
of the cached copy: same compare-and-swap (409 on any concurrent change), spec and
status in one request (the ACR CRD has no status subresource), but the cache keeps
objects slim and a PUT of them would strip kubectl's last-applied annotation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from kustodian.clock import utc_now
from kustodian.controllers.capacity.gather import (
    ReservationApiSource,
    ReservationCacheSource,
    ReservationSource,
)
from kustodian.controllers.capacity.housekeeping import Housekeeping
from kustodian.kube.cache import CacheFactory, StandaloneCaches, WatchCache, slim
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import Conflict, NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import NODES, PODS, Resource
from kustodian.policy.capacity import (
    AC_KIND_KEY,
    ACR_KIND_KEY,
    LVG_KIND_KEY,
    NODE_ID_KEY,
    REJECTED,
    REQUESTED,
    RESERVED,
    WAIT,
    CapacityPlanner,
    PlanOptions,
    ReservationDecision,
    apply_decision,
    plannable,
    pod_key,
)
from kustodian.policy.jsonpatch import merge_diff
from kustodian.policy.objects import RawObject, name, str_field, uid
from kustodian.runtime import Result

log = logging.getLogger(__name__)

PLAN_KEY: Final = "plan"
GC_KEY: Final = "gc"
RELEASE_KEY: Final = "release"
POD_INDEX: Final = "pod"
# Lower bound of a WAIT requeue: a zero delay would spin at the deadline.
_MIN_REQUEUE: Final = 0.1

Enqueue = Callable[[str], None]
Clock = Callable[[], datetime]  # re-exported: kustodian.clock's, as every component uses it


def _pod_index(acr: Mapping[str, Any]) -> tuple[str, ...]:
    key = pod_key(acr)
    return (key,) if key else ()


def _rv(obj: RawObject) -> str:
    return str_field(obj, "metadata", "resourceVersion")


@dataclass(frozen=True)
class _Written:
    """An ACR as we last wrote or read it; ``older_rv`` is a version known to precede it."""

    obj: Obj
    older_rv: str

    def supersedes(self, cached: RawObject) -> bool:
        if uid(cached) != uid(self.obj):
            return False  # deleted and created again: the cache's object is the live one
        cached_rv, ours = _rv(cached), _rv(self.obj)
        if cached_rv == ours:
            return False  # the cache caught up
        if cached_rv == self.older_rv:
            return True
        # resourceVersions are opaque by contract but etcd revisions in practice; when
        # they are not numbers, trust the cache (a stale write still gets its 409).
        try:
            return int(ours) > int(cached_rv)
        except ValueError:
            return False


class CapacityReservations:
    """The capacity controller: caches, event wiring and ``reconcile(key)`` for the runtime."""

    name = "capacity"

    def __init__(self, client: KubeClient, resources: Mapping[str, Resource], *,
                 options: PlanOptions | None = None,
                 reservation_ttl: timedelta = timedelta(hours=1),
                 gc_interval: timedelta = timedelta(minutes=1),
                 recorder: EventRecorder | None = None, clock: Clock = utc_now,
                 max_rounds: int = 5, node_id_key: str = NODE_ID_KEY,
                 caches: CacheFactory | None = None) -> None:
        self.client = client
        self.ac_resource = resources[AC_KIND_KEY]
        self.acr_resource = resources[ACR_KIND_KEY]
        self.node_id_key = node_id_key
        self.options = options or PlanOptions()
        self.reservation_ttl = reservation_ttl
        self.gc_interval = gc_interval
        self.recorder = recorder
        self.clock = clock
        self.max_rounds = max_rounds
        # the process's caches (``manager.cache``): Pods and Nodes are shared with node cleanup,
        # in their one slim shape (``kube.slim``), which keeps what reservations read
        cache = caches if caches is not None else StandaloneCaches(client)
        self.acs = cache(self.ac_resource)
        self.acrs = cache(self.acr_resource, indexers={POD_INDEX: _pod_index})
        self.pods = cache(PODS)
        self.nodes = cache(NODES)
        # Without the LVG CRD nothing can mark a volume group failed: plan without it.
        lvg_resource = resources.get(LVG_KIND_KEY)
        self.lvgs = cache(lvg_resource) if lvg_resource is not None else None
        self._lock = threading.Lock()
        # collection and release gather from the caches, and from the API server to confirm a delete
        self.housekeeping = Housekeeping(
            client, self.acr_resource,
            cache_source=ReservationCacheSource(self.snapshot, self.pods, self.nodes, self.acs, node_id_key),
            api_source=ReservationApiSource(client, self.acr_resource, self.ac_resource, node_id_key),
            recorder=recorder, clock=clock, reservation_ttl=reservation_ttl, gc_interval=gc_interval,
            remember=self._remember)
        # The kept planner, and the AC/LVG changes it has not seen yet (AC name -> the AC
        # now, None once deleted; any LVG event): applied in place before the next pass.
        self._planner: CapacityPlanner | None = None
        self._ac_changes: dict[str, Obj | None] = {}
        self._lvgs_changed = False
        self.rebuilds = 0
        self._written: dict[str, _Written] = {}
        # counters, for tests and logs
        self.writes = 0
        self.conflicts = 0
        self.confirmations = 0  # passes whose rejections were checked on a fresh AC list
        self.overturned = 0  # rejections the fresh list showed premature (then re-planned)

    @property
    def caches(self) -> list[WatchCache]:
        return [self.acs, self.acrs, self.pods, self.nodes] + ([self.lvgs] if self.lvgs is not None else [])

    # what the housekeeping holds, read (and, in tests, replaced) here as before

    @property
    def cache_source(self) -> ReservationSource:
        return self.housekeeping.cache_source

    @cache_source.setter
    def cache_source(self, source: ReservationSource) -> None:
        self.housekeeping.cache_source = source

    @property
    def api_source(self) -> ReservationSource:
        return self.housekeeping.api_source

    @api_source.setter
    def api_source(self, source: ReservationSource) -> None:
        self.housekeeping.api_source = source

    @property
    def collected(self) -> int:
        return self.housekeeping.collected

    @property
    def released(self) -> int:
        return self.housekeeping.released

    def _remember(self, written: Obj, older_rv: str) -> None:
        """An ACR as we just wrote it, preferred over the cache until the cache catches up."""
        with self._lock:
            self._written[name(written)] = _Written(slim(written), older_rv)

    def synced(self) -> bool:
        return all(c.synced.is_set() for c in self.caches)

    def wire(self, enqueue: Enqueue) -> None:
        """AC/ACR/LVG changes re-plan; pod binding releases; pod deletion or Running collects."""

        def on_acr(etype: str, new: Obj | None, old: Obj | None) -> None:
            enqueue(PLAN_KEY)
            if new is not None and str_field(new, "spec", "Status") == RESERVED:
                enqueue(RELEASE_KEY)  # its pod may have been bound before it was reserved

        def on_ac(etype: str, new: Obj | None, old: Obj | None) -> None:
            obj = new if new is not None else old
            if obj is not None:
                with self._lock:
                    self._ac_changes[name(obj)] = new
            enqueue(PLAN_KEY)

        def on_lvg(etype: str, new: Obj | None, old: Obj | None) -> None:
            with self._lock:
                self._lvgs_changed = True
            enqueue(PLAN_KEY)

        def on_pod(etype: str, new: Obj | None, old: Obj | None) -> None:
            pod = new if new is not None else old
            if pod is None:
                return
            key = f"{str_field(pod, 'metadata', 'namespace')}/{name(pod)}"
            if not self.acrs.by_index(POD_INDEX, key):
                return
            if etype == "DELETED" or str_field(pod, "status", "phase") == "Running":
                enqueue(GC_KEY)
            elif str_field(pod, "spec", "nodeName"):
                enqueue(RELEASE_KEY)

        def on_node(etype: str, new: Obj | None, old: Obj | None) -> None:
            enqueue(RELEASE_KEY)

        self.acs.add_handler(on_ac)
        if self.lvgs is not None:
            self.lvgs.add_handler(on_lvg)
        self.acrs.add_handler(on_acr)
        self.pods.add_handler(on_pod)
        self.nodes.add_handler(on_node)
        enqueue(PLAN_KEY)
        enqueue(RELEASE_KEY)
        enqueue(GC_KEY)  # starts the periodic collection (each pass requeues itself)

    def reconcile(self, key: str) -> Result | None:
        if key == PLAN_KEY:
            return self.plan()
        if key == GC_KEY:
            return self.housekeeping.collect_garbage() if self.synced() else Result(requeue_after=0.5)
        if key == RELEASE_KEY:
            return self.housekeeping.release_unchosen() if self.synced() else Result(requeue_after=0.5)
        log.warning("capacity: unknown key %r ignored", key)
        return None

    # -- planning ------------------------------------------------------------------------------

    def snapshot(self) -> list[Obj]:
        """The ACRs as we best know them: the cache, overridden by our newer writes and reads."""
        cached = self.acrs.list()
        with self._lock:
            if not self._written:
                return cached
            out: list[Obj] = []
            present = set()
            for acr in cached:
                acr_name = name(acr)
                present.add(acr_name)
                ours = self._written.get(acr_name)
                if ours is not None:
                    if ours.supersedes(acr):
                        out.append(ours.obj)
                        continue
                    del self._written[acr_name]
                out.append(acr)
            for gone in self._written.keys() - present:
                del self._written[gone]  # deleted: nothing of ours to remember
            return out

    def plan(self) -> Result | None:
        """Plan every REQUESTED ACR in one batch and write the decisions (see the module doc)."""
        if not self.synced():
            return Result(requeue_after=0.5)
        for _round in range(self.max_rounds):
            acrs = self.snapshot()
            if not any(str_field(a, "spec", "Status") == REQUESTED for a in acrs):
                return None
            by_name = {name(a): a for a in acrs}
            now = self.clock()
            decisions = self._current_planner().plan_requested(acrs, now)
            if any(d.status == REJECTED and plannable(by_name[d.acr_name]) for d in decisions):
                decisions = self._confirmed(acrs, decisions, now)
            retry: float | None = None
            for decision in decisions:
                if not self._write(by_name[decision.acr_name], decision, now):
                    break  # the ACR changed: re-plan the batch with its fresh copy
                if decision.status == WAIT and decision.retry_after is not None:
                    wait = max(_MIN_REQUEUE, decision.retry_after.total_seconds())
                    retry = wait if retry is None else min(retry, wait)
            else:
                return Result(requeue_after=retry) if retry is not None else None
        raise Conflict(409, "Conflict", f"ACRs kept changing during {self.max_rounds} planning rounds")

    def _confirmed(self, acrs: list[Obj], decisions: list[ReservationDecision],
                   now: datetime) -> list[ReservationDecision]:
        """The batch planned again on ACs read from the API server, because it rejects an ACR.

        REJECTED is final, and the AC cache is not ordered with the ACR cache: an ACR may be
        seen before the ACs created just before it (a busy watch thread), and rejected for
        want of them.  A list without a resourceVersion is a quorum read, so it holds every
        AC created before any ACR we have seen.  The whole batch is planned again on a fresh
        planner (batch order decides who gets a drive, so the two plans are never mixed),
        and its decisions are the ones written: a rejection stands only if the fresh view
        rejects too.  With caches that are current both plans are the same.

        Cost: one list of every AC and one planner build, only in a pass that rejects
        (each ACR is rejected at most once: REJECTED is final).  csi-baremetal's AC CRD has no
        selectable NodeId field, so the list cannot be narrowed to the requested nodes.
        The kept planner is left as it is: its AC view follows the watch, in order; the
        fresh list would run ahead of events still to come, which would then roll it back.
        """
        fresh_acs, list_rv = self.client.list(self.ac_resource)
        lvgs = self.lvgs.list() if self.lvgs is not None else []
        fresh = CapacityPlanner(fresh_acs, self.options, lvgs).plan_requested(acrs, now)
        before = {d.acr_name: d.status for d in decisions}
        overturned = [d.acr_name for d in fresh
                      if before.get(d.acr_name) == REJECTED and d.status != REJECTED]
        with self._lock:
            self.confirmations += 1
            self.overturned += len(overturned)
        if overturned:
            log.info("capacity: %d AC(s) at resourceVersion %s (the cache has %d at %s) overturn the "
                     "rejection of %s", len(fresh_acs), list_rv, len(self.acs), self.acs.resource_version,
                     ", ".join(overturned))
        return fresh

    def _current_planner(self) -> CapacityPlanner:
        # Changes are taken before the caches are read: an event during a build is
        # applied again at the next pass, which is harmless (an update is idempotent).
        with self._lock:
            changes, self._ac_changes = self._ac_changes, {}
            lvgs_changed, self._lvgs_changed = self._lvgs_changed, False
            kept = self._planner
        if kept is None:
            lvgs = self.lvgs.list() if self.lvgs is not None else []
            planner = CapacityPlanner(self.acs.list(), self.options, lvgs)
            self.rebuilds += 1
            log.info("capacity: planner built over %d ACs (%s table)", len(planner), planner.backend)
            with self._lock:
                self._planner = planner
            return planner
        if changes or lvgs_changed:
            # In place: the nodes of the changed ACs are summarised again when next
            # named; a reservation that named an AC not usable before is charged again.
            now_lvgs = (self.lvgs.list() if self.lvgs is not None else []) if lvgs_changed else None
            kept.update(changes, now_lvgs)
        return kept

    def _write(self, acr: Obj, decision: ReservationDecision, now: datetime) -> bool:
        """Write ``decision`` with ``acr``'s resourceVersion; False after a 409 (fresh copy kept)."""
        acr_name = decision.acr_name
        patch = merge_diff(acr, apply_decision(acr, decision, now))
        if not patch:
            return True  # already written (e.g. the same WAIT message)
        stale_rv = _rv(acr)
        patch.setdefault("metadata", {})["resourceVersion"] = stale_rv
        extra = {"kind": "AvailableCapacityReservation", "object": acr_name}
        try:
            written = self.client.patch(self.acr_resource, acr_name, patch)
        except NotFound:
            log.info("ACR %s: deleted before its decision was written", acr_name, extra=extra)
            return True
        except Conflict:
            with self._lock:
                self.conflicts += 1
            log.info("ACR %s: changed since it was planned; re-reading and re-planning", acr_name,
                     extra=extra)
            try:
                fresh = self.client.get(self.acr_resource, acr_name)
            except NotFound:
                return False
            with self._lock:
                self._written[acr_name] = _Written(slim(fresh), stale_rv)
            return False
        with self._lock:
            self.writes += 1
            self._written[acr_name] = _Written(slim(written), stale_rv)
        if decision.status == RESERVED:
            log.info("ACR %s: RESERVED on %s: %s", acr_name, ", ".join(decision.reserved_nodes),
                     dict(decision.reservations), extra=extra)
        elif decision.status == REJECTED:
            log.info("ACR %s: REJECTED: %s", acr_name, decision.reason, extra=extra)
            if self.recorder is not None:
                self.recorder.record(written, "Warning", "Rejected", decision.reason)
        else:
            log.info("ACR %s: waiting: %s", acr_name, decision.reason, extra=extra)
        return True
