"""Node-loss cleanup: local PVs/PVCs whose Node is gone are removed after a grace delay.

Two loops, as upstream, with the same metric names so its users can switch:

* the *cleanup controller* reconciles one PV at a time (woken by Node deletions,
  PV/PVC changes, the initial list and every resync): it stamps
  ``kustodian.io/node-missing-since`` on the PV the first time the node is seen
  missing (so a restart neither resets nor skips the delay), warns on the PVC with
  ``ReferencedNodeDeleted``, requeues itself for the deadline, and then, after a
  fresh read of the nodes from the API server (a lagging cache must not delete),
  deletes the PVC with a UID precondition;
* the *deleter* periodically deletes stale PVs that are Available, or Released with
  reclaim policy Delete, also with a UID precondition (upstream has none).

Every decision is ``policy.node_cleanup``'s; this module gathers and acts.  Data on
disks is never touched.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from datetime import datetime, timedelta
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Counter

from kustodian.clock import Clock, utc_now
from kustodian.kube.cache import WatchCache, standalone_caches
from kustodian.kube.client import KubeClient
from kustodian.kube.errors import Conflict, KubeError, NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import NODES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
from kustodian.policy.node_cleanup import (
    CONTINUITY,
    HOSTNAME_LABEL,
    INDEXERS,
    PV_BY_CLAIM,
    PV_BY_NODE,
    ClaimAction,
    ClaimCleanupDecision,
    DeleteClaim,
    DeleteVolume,
    KeepClaim,
    NodeSnapshot,
    WarnNodeGone,
    affinity_node_names,
    pv_delete_decision,
    pvc_cleanup_decision,
)
from kustodian.policy.objects import field, str_field
from kustodian.runtime.manager import CacheFactory
from kustodian.runtime.workqueue import Result

log = logging.getLogger(__name__)

_PREFIX = "local_volume_node_cleanup"

_MIN_DELETER_INTERVAL = 0.1  # seconds: upstream's 0 means "back to back"; ours never spins
_CACHE_LAG_RECHECK = 1.0  # seconds: the watch catches up with a Node event quickly
_ABSENCE_TTL = 1.0  # seconds a fresh "this Node is gone" answer is reused for its other PVs


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
    """A reconciler for the Manager: PV keys; ``resync`` re-examines every opted-in PV."""

    name = "node-cleanup"

    def __init__(self, client: KubeClient, *, storage_classes: Collection[str], delay: timedelta,
                 detect_recreated: bool = False, recorder: EventRecorder | None = None,
                 registry: CollectorRegistry | None = None,
                 clock: Clock = utc_now, caches: CacheFactory | None = None,
                 timer: Literal["annotation", "memory"] = "annotation") -> None:
        self.client = client
        self.opted_in = frozenset(storage_classes)
        self.delay = delay
        self.detect_recreated = detect_recreated
        self.recorder = recorder
        self.clock = clock
        self.metrics = NodeCleanupMetrics(registry)
        cache = caches if caches is not None else standalone_caches(client)
        self.nodes = cache(NODES)
        self.pvs = cache(PERSISTENT_VOLUMES, indexers=dict(INDEXERS["PersistentVolume"]))
        self.pvcs = cache(PERSISTENT_VOLUME_CLAIMS)
        self._snapshot: NodeSnapshot | None = None
        self._absent_seen: dict[str, float] = {}
        # "memory": the node-missing annotations are kept here, per PV UID, not on the PV
        # (upstream's ClusterRole grants no patch on PVs); a restart restarts the delay
        self.timer = timer
        self._memory: dict[str, dict[str, str]] = {}
        self._memory_lock = threading.Lock()
        self._snapshot_lock = threading.Lock()

    @property
    def caches(self) -> list[WatchCache]:
        return [self.nodes, self.pvs, self.pvcs]

    # -- gathering ------------------------------------------------------------------------------

    def node_snapshot(self) -> NodeSnapshot:
        """The node directory, rebuilt only after a Node event (not per PV: 10k PVs, 1k nodes)."""
        with self._snapshot_lock:
            if self._snapshot is None:
                self._snapshot = NodeSnapshot.from_nodes(self.nodes.list())
            return self._snapshot

    def _node_changed(self) -> None:
        with self._snapshot_lock:
            self._snapshot = None

    def wire(self, enqueue: Callable[[str], None]) -> None:
        def pvs_of(node: Mapping[str, Any] | None) -> None:
            if node is None:
                return
            keys = {str_field(node, "metadata", "name")}
            hostname = field(node, "metadata", "labels", HOSTNAME_LABEL)
            if isinstance(hostname, str):
                keys.add(hostname)
            for key in keys:
                for pv in self.pvs.by_index(PV_BY_NODE, key):
                    enqueue(str_field(pv, "metadata", "name"))

        def on_node(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            self._node_changed()
            if etype in ("DELETED", "ADDED"):  # gone: start timers; back: clear them
                pvs_of(new or old)

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
        """One PV: gather (caches), decide (``pvc_cleanup_decision``), act: stamp/clear its
        annotations, then warn and wait, or delete its PVC after the same decision on a fresh read.

        A 409 on the annotation write means the cache lags (or someone edited the PV): the
        snapshot is gathered once more from the API server and the same decision runs on it.
        A second 409 propagates, and the work queue retries with backoff.
        """
        pv = self.pvs.get(None, pv_name)
        if pv is None:
            self._forget(pv_name)
            return None
        try:
            return self._reconcile(pv)
        except Conflict:
            try:
                fresh = self.client.get(PERSISTENT_VOLUMES, pv_name)
            except NotFound:
                return None
            return self._reconcile(fresh)

    def _reconcile(self, pv: Mapping[str, Any]) -> Result | None:
        pv = self._remembered(pv)
        now = self.clock()
        pvc = self._claim_of(pv)
        decision = self._decide(pv, pvc, self.node_snapshot(), now)
        if decision.pv_annotations:
            self._annotate(pv, decision.pv_annotations)
        return self._act(str_field(pv, "metadata", "name"), pvc, decision.action, now)

    def _decide(self, pv: Mapping[str, Any], pvc: Mapping[str, Any] | None, nodes: NodeSnapshot,
                now: datetime) -> ClaimCleanupDecision:
        """The one decision, for the cached snapshot and for the fresh one before a delete."""
        return pvc_cleanup_decision(pv, pvc, nodes, opted_in_classes=self.opted_in, delay=self.delay, now=now,
                                    first_missing_at=None, detect_recreated=self.detect_recreated,
                                    continuity=CONTINUITY)

    def _claim_of(self, pv: Mapping[str, Any]) -> dict[str, Any] | None:
        claim_ns = str_field(pv, "spec", "claimRef", "namespace")
        claim_name = str_field(pv, "spec", "claimRef", "name")
        return self.pvcs.get(claim_ns, claim_name) if claim_ns and claim_name else None

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
        if not self._confirmed(pv_name, action, now):
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
        self.metrics.pvc_deleted.inc()
        log.info("deleted PVC %s/%s bound to PV %s on a deleted node", action.namespace, action.name, pv_name,
                 extra={"kind": "PersistentVolumeClaim", "namespace": action.namespace,
                        "object": action.name})
        return None

    def _remembered(self, pv: Mapping[str, Any]) -> Mapping[str, Any]:
        """In memory mode, the PV as if its remembered annotations were on it (same decision)."""
        if self.timer != "memory":
            return pv
        with self._memory_lock:
            kept = self._memory.get(str_field(pv, "metadata", "uid"))
        if not kept:
            return pv
        meta = dict(pv.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}),
                               **{k: v for k, v in kept.items() if not k.startswith("#")}}
        return {**pv, "metadata": meta}

    def _forget(self, pv_name: str) -> None:
        if self.timer == "memory":
            with self._memory_lock:
                for key in [k for k, v in self._memory.items() if v.get("#name") == pv_name]:
                    del self._memory[key]

    def _annotate(self, pv: Mapping[str, Any], annotations: Mapping[str, str | None]) -> None:
        """Merge-patch the PV's annotations, conditional on the resourceVersion decided from
        (in memory mode: remember them for this PV UID instead)."""
        if self.timer == "memory":
            with self._memory_lock:
                kept = self._memory.setdefault(str_field(pv, "metadata", "uid"),
                                               {"#name": str_field(pv, "metadata", "name")})
                for key, value in annotations.items():
                    if value is None:
                        kept.pop(key, None)
                    else:
                        kept[key] = value
            return
        patch = {"metadata": {"annotations": dict(annotations),
                              "resourceVersion": str_field(pv, "metadata", "resourceVersion")}}
        self.client.patch(PERSISTENT_VOLUMES, str_field(pv, "metadata", "name"), patch)

    def _fresh_view(self, pv_name: str) -> tuple[dict[str, Any], NodeSnapshot] | None:
        """The PV and the Nodes it names, read from the API server itself (not the caches).

        Every delete is decided again on this view: a lagging Node cache must not
        delete.  Nodes are looked up by name and by hostname label; ``None`` (any read
        failure) means "do not delete".
        """
        try:
            pv = self.client.get(PERSISTENT_VOLUMES, pv_name)
            nodes: list[dict[str, Any]] = []
            for node_name in sorted(affinity_node_names(pv).node_names):
                if self._confirmed_absent(node_name):
                    continue
                found = []
                with contextlib.suppress(NotFound):
                    found.append(self.client.get(NODES, node_name))
                found.extend(self.client.list(NODES, label_selector=f"{HOSTNAME_LABEL}={node_name}")[0])
                if not found:
                    self._absent_seen[node_name] = time.monotonic()
                nodes.extend(found)
        except KubeError as exc:
            log.info("PV %s: could not confirm its node is gone (%s); not deleting", pv_name, exc)
            return None
        return pv, NodeSnapshot.from_nodes(nodes)

    def _confirmed_absent(self, node_name: str) -> bool:
        """A Node the API server said is gone less than a second ago (by name and by label).

        A lost Node usually carries many local PVs; their deadlines fall together, and one
        confirmation serves them all instead of two API calls per PV.  The window is short
        enough that a Node coming back is seen on the next deadline.
        """
        seen = self._absent_seen.get(node_name)
        return seen is not None and time.monotonic() - seen < _ABSENCE_TTL

    def _confirmed(self, pv_name: str, action: DeleteClaim, now: datetime) -> bool:
        """The same decision on the API server's own PV, PVC and Nodes must delete the same PVC."""
        view = self._fresh_view(pv_name)
        if view is None:
            return False
        pv, nodes = view
        pv = dict(self._remembered(pv))
        try:
            pvc = self.client.get(PERSISTENT_VOLUME_CLAIMS, action.name, action.namespace)
        except KubeError:  # gone (nothing to do) or unreadable (do not delete on a guess)
            return False
        fresh = self._decide(pv, pvc, nodes, now).action
        return isinstance(fresh, DeleteClaim) and fresh.uid == action.uid

    # -- the deleter ----------------------------------------------------------------------------

    def delete_stale_pvs(self) -> int:
        """One pass of the deleter: delete stale PVs that are Available, or Released with policy Delete."""
        nodes = self.node_snapshot()
        deleted = 0
        for pv in self.pvs.list():
            if str_field(pv, "spec", "storageClassName") not in self.opted_in:
                continue
            decision = pv_delete_decision(pv, nodes, self.opted_in, detect_recreated=self.detect_recreated)
            if not isinstance(decision, DeleteVolume):
                continue
            view = self._fresh_view(decision.name)
            if view is None:
                continue
            fresh, fresh_nodes = view
            decision = pv_delete_decision(fresh, fresh_nodes, self.opted_in,
                                          detect_recreated=self.detect_recreated)
            if not isinstance(decision, DeleteVolume):
                continue
            phase = str_field(fresh, "status", "phase")
            try:  # UID and resourceVersion: a PV re-bound or replaced since the read above is kept
                self.client.delete(PERSISTENT_VOLUMES, decision.name, uid=decision.uid,
                                   resource_version=str_field(fresh, "metadata", "resourceVersion"))
            except NotFound:
                continue
            except KubeError as exc:
                self.metrics.pv_delete_failed.labels(phase).inc()
                log.warning("could not delete stale PV %s: %s", decision.name, exc)
                continue
            self.metrics.pv_deleted.labels(phase).inc()
            deleted += 1
            log.info("deleted stale PV %s (%s, node gone)", decision.name, phase,
                     extra={"kind": "PersistentVolume", "object": decision.name})
        return deleted

    def run_deleter(self, interval: float, stop: threading.Event) -> None:
        """Upstream's Deleter: every ``interval`` seconds until ``stop`` is set.

        Upstream takes ``--stale-pv-discovery-interval=0`` and then lists back to back; here a
        pass waits at least ``_MIN_DELETER_INTERVAL``, so the flag is accepted without a busy loop.
        """
        if interval < _MIN_DELETER_INTERVAL:
            log.info("stale PV deleter: interval %.3fs raised to %.1fs", interval, _MIN_DELETER_INTERVAL)
            interval = _MIN_DELETER_INTERVAL
        while not stop.wait(interval):
            try:
                self.delete_stale_pvs()
            except Exception:
                log.exception("the stale PV deleter failed; retrying next interval")

