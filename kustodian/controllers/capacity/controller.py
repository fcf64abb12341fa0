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
- ``release``: a pod bound to a node (``spec.nodeName``) needs only that node's
  reservations; the others are handed back at once (``narrow_to_node``), so
  reservations stop hoarding capacity.  The Kubernetes node is mapped to its
  csi-baremetal node ID by the ``nodes.csi-baremetal.dell.com/uuid`` annotation/label.
  One frozen ``ReservationReleaseInput`` gathered from the caches, the pure
  ``decide_reservation_release``, each write carrying the resourceVersion judged on.
- ``gc``: ACRs whose pod (``<namespace>-<pod>``) is gone or Running, and RESERVED ACRs
  past the TTL since their last status change, are deleted with a UID precondition and
  a Warning event.  Gather -> decide -> act: one frozen ``ReservationGcInput`` from the
  caches (:mod:`controllers.capacity.gather`), the pure ``decide_reservation_gc``, and each
  delete confirmed by the same decision on that ACR and its pod read from the API server.
  Requeued every ``gc_interval``; pod events wake it at once.

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
    gather,
    gather_release,
)
from kustodian.kube.cache import WatchCache, slim
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import Conflict, NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import NODES, PODS, Resource
from kustodian.policy.capacity import (
    CapacityPlanner,
    PlanOptions,
    ReservationDecision,
    apply_decision,
    pod_key,
)
from kustodian.policy.capacity.gc import confirms, decide_reservation_gc
from kustodian.policy.capacity.model import (
    AC_KIND_KEY,
    ACR_KIND_KEY,
    LVG_KIND_KEY,
    NODE_ID_KEY,
    REJECTED,
    REQUESTED,
    RESERVED,
    WAIT,
)
from kustodian.policy.capacity.release import decide_reservation_release
from kustodian.policy.capacity.stale import StaleReservation
from kustodian.policy.jsonpatch import merge_diff
from kustodian.policy.objects import RawObject, name, str_field, uid
from kustodian.runtime.workqueue import Result

log = logging.getLogger(__name__)

PLAN_KEY: Final = "plan"
GC_KEY: Final = "gc"
RELEASE_KEY: Final = "release"
EVENT_RELEASED: Final = "ReservationNarrowed"
POD_INDEX: Final = "pod"
EVENT_COLLECTED: Final = "ReservationCollected"
# Lower bound of a WAIT requeue: a zero delay would spin at the deadline.
_MIN_REQUEUE: Final = 0.1

Enqueue = Callable[[str], None]
Clock = Callable[[], datetime]  # re-exported: kustodian.clock's, as every component uses it


def pod_identity(pod: Obj) -> Obj:
    """Cached form of a Pod: who it is, where it is bound and its phase, nothing else."""
    meta = pod.get("metadata") or {}
    keys = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")
    kept: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {k: meta[k] for k in keys if k in meta}}
    node_name = (pod.get("spec") or {}).get("nodeName")
    if isinstance(node_name, str) and node_name:
        kept["spec"] = {"nodeName": node_name}
    phase = (pod.get("status") or {}).get("phase")
    if isinstance(phase, str) and phase:
        kept["status"] = {"phase": phase}
    return kept


def node_identity(node: Obj, key: str = NODE_ID_KEY) -> Obj:
    """Cached form of a Node: its name and csi-baremetal node ID (annotation, else label)."""
    meta = node.get("metadata") or {}
    node_id = (meta.get("annotations") or {}).get(key) or (meta.get("labels") or {}).get(key)
    kept: Obj = {"name": meta.get("name", ""), "resourceVersion": meta.get("resourceVersion", "")}
    if isinstance(node_id, str) and node_id:
        kept["annotations"] = {key: node_id}
    return {"apiVersion": "v1", "kind": "Node", "metadata": kept}


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
                 max_rounds: int = 5, node_id_key: str = NODE_ID_KEY) -> None:
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
        self.acs = WatchCache(client, self.ac_resource)
        self.acrs = WatchCache(client, self.acr_resource, indexers={POD_INDEX: _pod_index})
        self.pods = WatchCache(client, PODS, transform=pod_identity)
        self.nodes = WatchCache(client, NODES, transform=lambda n: node_identity(n, node_id_key))
        # Without the LVG CRD nothing can mark a volume group failed: plan without it.
        lvg_resource = resources.get(LVG_KIND_KEY)
        self.lvgs = WatchCache(client, lvg_resource) if lvg_resource is not None else None
        # where garbage collection gathers from: the caches, and the API server to confirm a delete
        self.cache_source: ReservationSource = ReservationCacheSource(self.snapshot, self.pods, self.nodes,
                                                                      self.acs, node_id_key)
        self.api_source: ReservationSource = ReservationApiSource(client, self.acr_resource, self.ac_resource,
                                                                  node_id_key)
        self._lock = threading.Lock()
        # The kept planner, and the AC/LVG changes it has not seen yet (AC name -> the AC
        # now, None once deleted; any LVG event): applied in place before the next pass.
        self._planner: CapacityPlanner | None = None
        self._ac_changes: dict[str, Obj | None] = {}
        self._lvgs_changed = False
        self.rebuilds = 0
        self.released = 0
        self._written: dict[str, _Written] = {}
        # counters, for tests and logs
        self.writes = 0
        self.conflicts = 0
        self.collected = 0

    @property
    def caches(self) -> list[WatchCache]:
        return [self.acs, self.acrs, self.pods, self.nodes] + ([self.lvgs] if self.lvgs is not None else [])

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
            return self.collect_garbage()
        if key == RELEASE_KEY:
            return self.release_unchosen()
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

    # -- garbage collection --------------------------------------------------------------------

    def collect_garbage(self) -> Result:
        """Delete ACRs whose pod is gone or Running, and RESERVED ACRs past the TTL.

        Gathered from the caches, decided, and each delete confirmed by the same decision on
        that ACR and its pod read from the API server (the pod cache may be behind the ACR cache).
        """
        if not self.synced():
            return Result(requeue_after=0.5)
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
        if not self.synced():
            return Result(requeue_after=0.5)
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
                self._written[acr_name] = _Written(slim(written), _rv(acr))
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
