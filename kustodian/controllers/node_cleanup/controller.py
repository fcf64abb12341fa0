"""Node-loss cleanup: local PVs/PVCs whose Node is gone are removed after a grace delay.

Two reconcilers keyed by PV name, as upstream has two loops, with its metric names so its
users can switch; both are woken by events through the shared watch caches (a Node deleted
or back, a PV or PVC changed; the claim reconciler also by its resync and its own requeues):

* :class:`NodeCleanup` (the *cleanup controller*) stamps ``kustodian.io/node-missing-since``
  on the PV the first time the node is seen missing (a stamp from before this process's
  gap-free watch of the Nodes is no proof and restarts the delay: :meth:`NodeCleanup.watched_since`),
  warns on the PVC with upstream's ``ReferencedNodeDeleted`` text, requeues itself for the
  deadline, and then deletes the PVC with a UID precondition;
* :class:`StaleVolumeCleanup` (upstream's *deleter*) deletes the stale PV once it is
  Available, or Released with reclaim policy Delete, with UID and resourceVersion
  preconditions (upstream has none).  It reacts to the Node and PV events: no timer lists
  every PV.

Each pass is gather -> decide -> act: :func:`gather` fills one frozen ``NodeCleanupInput``
from the caches, ``decide_node_cleanup`` (pure, in ``policy.node_cleanup``) decides both
parts, and each reconciler acts on its part.  A delete is made only when the same decision on
``gather(api)`` (the API server's own PV, PVC and Nodes: a lagging cache must not delete)
makes the same delete.  Data on disks is never touched.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping
from datetime import datetime, timedelta
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Counter

from kustodian.clock import Clock, utc_now
from kustodian.controllers.node_cleanup.gather import NodeCleanupSource, gather
from kustodian.controllers.node_cleanup.shared import CleanupShared
from kustodian.controllers.node_cleanup.timers import NodeMissingTimers, TimersInMemory, TimersOnVolume
from kustodian.kube.cache import CacheFactory, StandaloneCaches, WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.errors import Conflict, KubeError, NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
from kustodian.policy.node_cleanup import (
    EVENT_REASON_NODE_DELETED,
    HOSTNAME_LABEL,
    PV_BY_CLAIM,
    PV_BY_NODE,
    ClaimAction,
    CleanedClaim,
    DeleteVolume,
    KeepClaim,
    KeepVolume,
    NodeCleanupDecision,
    NodeCleanupInput,
    NodeCleanupRules,
    WarnNodeGone,
    affinity_node_names,
    confirms,
    decide_node_cleanup,
)
from kustodian.policy.objects import field, str_field
from kustodian.runtime import Result

log = logging.getLogger(__name__)

_PREFIX = "local_volume_node_cleanup"

_CACHE_LAG_RECHECK = 1.0  # seconds: the watch catches up with a Node event quickly
_DELETIONS_KEPT = 10_000  # Node deletions remembered (see NodeCleanup.watched_since)


class NodeCleanupMetrics:
    """Upstream's metric names (``local_volume_node_cleanup_*``)."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.pv_deleted = Counter(f"{_PREFIX}_persistentvolume_delete", "Stale PVs deleted", ["phase"],
                                  registry=registry)
        self.pv_delete_failed = Counter(f"{_PREFIX}_persistentvolume_delete_failed",
                                        "Stale PV deletions failed", ["phase"], registry=registry)
        self.pvc_deleted = Counter(f"{_PREFIX}_persistentvolumeclaim_delete", "PVCs of stale PVs deleted",
                                   registry=registry)
        self.pvc_delete_failed = Counter(f"{_PREFIX}_persistentvolumeclaim_delete_failed",
                                         "PVC deletions failed", registry=registry)


class NodeCleanup:
    """The claim reconciler for the Manager: PV keys; ``resync`` re-examines every opted-in PV.

    It builds what node cleanup's reconcilers share (:attr:`shared`: the caches, the two sources,
    the clock, the PVCs it deleted) and owns the timer store and the metrics;
    :attr:`stale_volumes` is the PV reconciler over the same.
    """

    name = "node-cleanup"

    def __init__(self, client: KubeClient, *, storage_classes: Collection[str], delay: timedelta,
                 detect_recreated: bool = False, recorder: EventRecorder | None = None,
                 registry: CollectorRegistry | None = None,
                 clock: Clock = utc_now, caches: CacheFactory | None = None,
                 timer: Literal["annotation", "memory"] = "annotation") -> None:
        self.client = client
        self.rules = NodeCleanupRules(frozenset(storage_classes), delay, detect_recreated)
        self.recorder = recorder
        self.clock = clock
        self.metrics = NodeCleanupMetrics(registry)
        self.shared = CleanupShared.build(client, caches if caches is not None else StandaloneCaches(client),
                                          clock, recorder)
        # the PVCs this cleanup deleted: the StatefulSet pods left waiting for them are recovered
        self.cleaned = self.shared.cleaned
        self.nodes, self.pvs, self.pvcs = self.shared.nodes, self.shared.pvs, self.shared.pvcs
        self.cached, self.api = self.shared.cached, self.shared.api
        # "memory": the node-missing annotations are kept here, per PV UID, not on the PV
        # (upstream's ClusterRole grants no patch on PVs); a restart restarts the delay
        self.timer = timer
        self.timers: NodeMissingTimers = TimersInMemory() if timer == "memory" else TimersOnVolume(client)
        self.stale_volumes = StaleVolumeCleanup(self)
        # see watched_since(): the Node cache's list epoch this process watches from, and when
        self._watch_lock = threading.Lock()
        self._watch_epoch = -1
        self._watched_since: datetime | None = None
        self._deleted_at: dict[str, datetime] = {}  # Node name or hostname -> seen deleted at
        self.nodes.add_handler(self._node_deleted)

    @property
    def opted_in(self) -> frozenset[str]:
        return self.rules.opted_in_classes

    @property
    def caches(self) -> list[WatchCache]:
        return [self.nodes, self.pvs, self.pvcs]

    # -- gather and confirm ---------------------------------------------------------------------

    def gather(self, source: NodeCleanupSource, pv_name: str) -> NodeCleanupInput | None:
        return gather(source, pv_name, self.rules, self.timers.overlay, self.watched_since)

    def watched_since(self, node_names: Collection[str] = ()) -> datetime:
        """Since when this process has seen ``node_names`` continuously absent, at the latest.

        The first pass after the Node cache's first full list, or after any re-list (a watch
        that broke, a 410: events may have been missed), starts a new watch period, dated by
        the clock of that pass (never earlier than the list).  A node-missing stamp older than
        that was not seen through by this process: the node may have come back and gone again
        while nobody watched (a restart, however short, or a gap), so the delay restarts.
        So it does when one of the nodes was seen deleted after the stamp: it was back
        meanwhile, even if no pass saw it back.  The price: a Node watch that breaks more
        often than the delay (the cache logs each re-list) postpones the PVC's deletion.
        """
        epoch = self.nodes.epoch
        with self._watch_lock:
            if self._watch_epoch != epoch or self._watched_since is None:
                self._watch_epoch, self._watched_since = epoch, self.clock()
                self._deleted_at.clear()  # older than the new period: says nothing more
            deleted = [self._deleted_at[n] for n in node_names if n in self._deleted_at]
            return max([self._watched_since, *deleted])

    def _node_deleted(self, etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        """Remember when a Node was seen deleted (by name and by hostname label)."""
        if etype != "DELETED" or old is None:
            return
        keys = {str_field(old, "metadata", "name")}
        hostname = field(old, "metadata", "labels", HOSTNAME_LABEL)
        if isinstance(hostname, str):
            keys.add(hostname)
        now = self.clock()
        with self._watch_lock:
            if len(self._deleted_at) >= _DELETIONS_KEPT:  # bounded: drop the oldest half
                for key in sorted(self._deleted_at, key=self._deleted_at.__getitem__)[:_DELETIONS_KEPT // 2]:
                    del self._deleted_at[key]
            for key in keys:
                self._deleted_at[key] = now

    def confirm(self, pv_name: str, now: datetime) -> tuple[NodeCleanupInput, NodeCleanupDecision] | None:
        """The same decision on ``gather(api)``; ``None`` (PV gone, or a read failed): do not delete."""
        try:
            fresh = self.gather(self.api, pv_name)
        except KubeError as exc:
            log.info("PV %s: could not confirm its node is gone (%s); not deleting", pv_name, exc)
            return None
        if fresh is None:
            return None
        return fresh, decide_node_cleanup(fresh, now)

    # -- events ---------------------------------------------------------------------------------

    def pvs_of_node(self, node: Mapping[str, Any] | None, enqueue: Callable[[str], None]) -> None:
        """Enqueue every PV pinned to ``node`` (by its name or its hostname label)."""
        if node is None:
            return
        keys = {str_field(node, "metadata", "name")}
        hostname = field(node, "metadata", "labels", HOSTNAME_LABEL)
        if isinstance(hostname, str):
            keys.add(hostname)
        for key in keys:
            for pv in self.pvs.by_index(PV_BY_NODE, key):
                enqueue(str_field(pv, "metadata", "name"))

    def wire(self, enqueue: Callable[[str], None]) -> None:
        def on_node(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            if etype in ("DELETED", "ADDED"):  # gone: start timers; back: clear them
                self.pvs_of_node(new or old, enqueue)

        def on_pv(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            if new is not None:
                enqueue(str_field(new, "metadata", "name"))

        def on_pvc(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            obj = new or old
            key = f"{str_field(obj, 'metadata', 'namespace')}/{str_field(obj, 'metadata', 'name')}"
            for pv in self.pvs.by_index(PV_BY_CLAIM, key):
                enqueue(str_field(pv, "metadata", "name"))

        self.nodes.add_handler(on_node)
        self.pvs.add_handler(on_pv)
        self.pvcs.add_handler(on_pvc)

    def resync(self, enqueue: Callable[[str], None]) -> None:
        for pv in self.pvs.list():
            if str_field(pv, "spec", "storageClassName") in self.opted_in:
                enqueue(str_field(pv, "metadata", "name"))

    # -- the cleanup controller -----------------------------------------------------------------

    def reconcile(self, pv_name: str) -> Result | None:
        """One PV: gather (caches), decide, act on the claim part: stamp/clear the PV's timer
        annotations, then warn and wait, or delete its PVC once ``gather(api)`` agrees.

        A 409 on the annotation write means the cache lags (or someone edited the PV): the
        input is gathered once more from the API server and the same decision runs on it.
        A second 409 propagates, and the work queue retries with backoff.
        """
        observed = self.gather(self.cached, pv_name)
        if observed is None:
            self.timers.forget(pv_name)
            return None
        try:
            return self._reconcile(pv_name, observed)
        except Conflict:
            fresh = self.gather(self.api, pv_name)
            if fresh is None:
                return None
            return self._reconcile(pv_name, fresh)

    def _reconcile(self, pv_name: str, observed: NodeCleanupInput) -> Result | None:
        now = self.clock()
        decision = decide_node_cleanup(observed, now)
        if decision.claim.pv_annotations:
            self.timers.write(observed.volume, decision.claim.pv_annotations)
        return self._act(pv_name, observed.claim, decision.claim.action, now)

    def _act(self, pv_name: str, pvc: Mapping[str, Any] | None, action: ClaimAction,
             now: datetime) -> Result | None:
        if isinstance(action, KeepClaim):
            log.debug("PV %s: skipped: %s %s", pv_name, action.reason, action.detail,
                      extra={"kind": "PersistentVolume", "object": pv_name})
            return None
        if isinstance(action, WarnNodeGone):
            if self.recorder is not None and pvc is not None:
                self.recorder.record(pvc, "Warning", action.event_reason, action.message)
            log.info("PV %s: its node is gone; PVC %s/%s is deleted at %s unless the node returns", pv_name,
                     action.namespace, action.name, action.requeue_at.isoformat(),
                     extra={"kind": "PersistentVolume", "object": pv_name})
            return Result(requeue_after=max(0.0, (action.requeue_at - now).total_seconds()))
        if action.warning is not None and self.recorder is not None and pvc is not None:
            self.recorder.record(pvc, "Warning", EVENT_REASON_NODE_DELETED, action.warning)
        confirmed = self.confirm(pv_name, now)
        if confirmed is None or not confirms(confirmed[1], action):
            log.info("PV %s: the cache says to delete PVC %s/%s but a fresh read does not; not deleting",
                     pv_name, action.namespace, action.name,
                     extra={"kind": "PersistentVolume", "object": pv_name})
            return Result(requeue_after=_CACHE_LAG_RECHECK)
        try:
            self.client.delete(PERSISTENT_VOLUME_CLAIMS, action.name, action.namespace, uid=action.uid)
        except NotFound:
            return None
        except Conflict:  # the PVC was replaced (new UID): never delete the new one
            log.info("PVC %s/%s changed identity before deletion; left alone", action.namespace, action.name,
                     extra={"kind": "PersistentVolumeClaim", "namespace": action.namespace,
                            "object": action.name})
            self.metrics.pvc_delete_failed.inc()
            return None
        except KubeError:
            self.metrics.pvc_delete_failed.inc()
            raise
        pv = self.pvs.get(None, pv_name)
        self.cleaned.add(CleanedClaim(
            action.namespace, action.name, action.uid,
            str_field(pvc, "spec", "storageClassName") or str_field(pv, "spec", "storageClassName"),
            ",".join(sorted(affinity_node_names(pv).node_names)) if pv is not None else "", now))
        self.metrics.pvc_deleted.inc()
        log.info("deleted PVC %s/%s bound to PV %s on a deleted node", action.namespace, action.name, pv_name,
                 extra={"kind": "PersistentVolumeClaim", "namespace": action.namespace,
                        "object": action.name})
        return None


class StaleVolumeCleanup:
    """The PV reconciler (upstream's deleter), keyed by PV name and fed by Node and PV events.

    A Node deleted enqueues the PVs pinned to it; a PV changed (Released once its claim is
    gone, say) enqueues itself.  Nothing lists every PV: the caches already hold them.  It
    shares the claim reconciler's caches, sources and metrics, and runs the same decision.
    """

    name = "node-cleanup-pvs"

    def __init__(self, cleanup: NodeCleanup) -> None:
        self.cleanup = cleanup

    @property
    def caches(self) -> list[WatchCache]:
        return self.cleanup.caches

    def wire(self, enqueue: Callable[[str], None]) -> None:
        def on_node(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            if etype in ("DELETED", "ADDED"):
                self.cleanup.pvs_of_node(new or old, enqueue)

        def on_pv(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            if new is not None and str_field(new, "spec", "storageClassName") in self.cleanup.opted_in:
                enqueue(str_field(new, "metadata", "name"))

        self.cleanup.nodes.add_handler(on_node)
        self.cleanup.pvs.add_handler(on_pv)

    def reconcile(self, pv_name: str) -> Result | None:
        """One PV: gather (caches), decide, and delete the PV once ``gather(api)`` agrees."""
        cleanup = self.cleanup
        observed = cleanup.gather(cleanup.cached, pv_name)
        if observed is None:
            return None
        now = cleanup.clock()
        action = decide_node_cleanup(observed, now).volume
        if isinstance(action, KeepVolume):
            log.debug("PV %s: kept: %s %s", pv_name, action.reason, action.detail,
                      extra={"kind": "PersistentVolume", "object": pv_name})
            return None
        return self._delete(action, now)

    def _delete(self, action: DeleteVolume, now: datetime) -> Result | None:
        cleanup = self.cleanup
        confirmed = cleanup.confirm(action.name, now)
        if confirmed is None or not confirms(confirmed[1], action):
            log.info("PV %s: the cache says it is stale but a fresh read does not; not deleting", action.name,
                     extra={"kind": "PersistentVolume", "object": action.name})
            return Result(requeue_after=_CACHE_LAG_RECHECK)
        fresh = confirmed[0].volume
        phase = str_field(fresh, "status", "phase")
        try:  # UID and resourceVersion: a PV re-bound or replaced since the read above is kept
            cleanup.client.delete(PERSISTENT_VOLUMES, action.name, uid=action.uid,
                                  resource_version=str_field(fresh, "metadata", "resourceVersion"))
        except NotFound:
            return None
        except Conflict as exc:  # changed since the confirming read: its event brings it back
            cleanup.metrics.pv_delete_failed.labels(phase).inc()
            log.info("PV %s changed before deletion (%s); decided again on its next event", action.name, exc,
                     extra={"kind": "PersistentVolume", "object": action.name})
            return None
        except KubeError:
            cleanup.metrics.pv_delete_failed.labels(phase).inc()
            raise
        cleanup.metrics.pv_deleted.labels(phase).inc()
        log.info("deleted stale PV %s (%s, node gone)", action.name, phase,
                 extra={"kind": "PersistentVolume", "object": action.name})
        return None
