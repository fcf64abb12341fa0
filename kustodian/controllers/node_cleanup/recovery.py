"""Workloads recover after node loss: StatefulSet pods stuck on a PVC node cleanup deleted are deleted.

A reconciler keyed by pod (``namespace/name``), fed by two things: the Pod cache's events for
pods of StatefulSets that name a PVC (the others are not even indexed), and the cleanup's own
PVC deletions (:class:`CleanedClaims`: each deletion enqueues the pods naming that claim).
Each pass is gather -> decide -> act: :meth:`PodRecovery.gather` fills one frozen
``PodRecoveryInput`` from the caches, ``decide_pod_recovery`` (pure) decides, and a delete is
made only when the same decision on a fresh read from the API server (the pod, which must
still have the same UID, its claims, its Node and StorageClasses) deletes the same pod; the
DELETE itself carries the pod's UID as a precondition.

Which PVCs Kustodian deleted is kept in memory (``shared.CleanedClaims``, bounded, for a day):
a stuck pod is found within seconds of the PVC's deletion (its events, or the deletion
itself, enqueue it), so the record only has to outlive that; a restart or a change of leader
in between forgets it, and such a pod is left for a person, as before this feature.  Watching
pods cluster-wide costs memory (about 5-10 kB per pod in the cache); a field selector on
``status.phase=Pending`` would miss a Running pod still bound to a Node that is gone.

StorageClasses are read by name from the API server, not watched: only a pod that names a
claim Kustodian deleted reaches that read, which is rare.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from kustodian.controllers.node_cleanup.shared import CleanupShared
from kustodian.kube.cache import WatchCache
from kustodian.kube.errors import Conflict, KubeError, NotFound
from kustodian.kube.resources import PERSISTENT_VOLUME_CLAIMS, PODS, STORAGE_CLASSES
from kustodian.policy.node_cleanup import (
    EVENT_REASON_POD_RECOVERY,
    INDEXERS,
    POD_BY_CLAIM,
    CleanedClaim,
    KeepPod,
    PodRecoveryInput,
    RecoverPod,
    decide_pod_recovery,
    node_exists,
    pod_claim_names,
    recovery_confirms,
    statefulset_owner,
)
from kustodian.policy.objects import str_field
from kustodian.runtime import Result

log = logging.getLogger(__name__)

Obj = dict[str, Any]

_CACHE_LAG_RECHECK = 1.0


class PodRecoveryMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.recovered = Counter("kustodian_node_cleanup_statefulset_pods_recovered",
                                 "StatefulSet pods deleted because node cleanup removed their PVC",
                                 registry=registry)
        self.recovery_seconds = Histogram(
            "kustodian_node_cleanup_statefulset_pod_recovery_seconds",
            "From node cleanup's deletion of a PVC to the deletion of the StatefulSet pod waiting for it",
            buckets=(1, 5, 15, 30, 60, 120, 300, 900, 3600, float("inf")), registry=registry)


class PodRecovery:
    """The pod reconciler: deletes a StatefulSet's pod left waiting for a PVC node cleanup deleted."""

    name = "node-cleanup-pods"

    def __init__(self, cleanup: CleanupShared, registry: CollectorRegistry | None = None) -> None:
        self.cleanup = cleanup
        self.client = cleanup.client
        self.pods = cleanup.caches(PODS, indexers=dict(INDEXERS["Pod"]))
        self.metrics = PodRecoveryMetrics(registry)

    @property
    def caches(self) -> list[WatchCache]:
        return [self.pods]

    # -- events ---------------------------------------------------------------------------------

    def wire(self, enqueue: Callable[[str], None]) -> None:
        def on_pod(etype: str, new: Obj | None, old: Obj | None) -> None:
            if new is not None and statefulset_owner(new) and pod_claim_names(new):
                enqueue(f"{str_field(new, 'metadata', 'namespace')}/{str_field(new, 'metadata', 'name')}")

        def on_cleaned(claim: CleanedClaim) -> None:
            for pod in self.pods.by_index(POD_BY_CLAIM, f"{claim.namespace}/{claim.name}"):
                enqueue(f"{claim.namespace}/{str_field(pod, 'metadata', 'name')}")

        self.pods.add_handler(on_pod)
        self.cleanup.cleaned.listen(on_cleaned)

    # -- gather ---------------------------------------------------------------------------------

    def gather(self, pod: Mapping[str, Any], *, fresh: bool, now: datetime) -> PodRecoveryInput:
        """The pod's input; ``fresh``: its claims and Node read from the API server, not the caches."""
        namespace = str_field(pod, "metadata", "namespace")
        cleaned = self.cleanup.cleaned.of(namespace, pod_claim_names(pod), now)
        claims: dict[str, Obj | None] = {}
        classes: dict[str, Obj | None] = {}
        for claim in cleaned:
            claims[claim.name] = self._claim(namespace, claim.name, fresh)
            if claim.storage_class and claim.storage_class not in classes:
                classes[claim.storage_class] = self._storage_class(claim.storage_class)
        node = str_field(pod, "spec", "nodeName")
        alive: bool | None = None
        if node and cleaned:
            source = self.cleanup.api if fresh else self.cleanup.cached
            alive = node_exists(source.nodes([node]), node)
        return PodRecoveryInput(pod, cleaned, claims, classes, alive)

    def _claim(self, namespace: str, name: str, fresh: bool) -> Obj | None:
        if not fresh:
            return self.cleanup.pvcs.get(namespace, name)
        try:
            return self.client.get(PERSISTENT_VOLUME_CLAIMS, name, namespace)
        except NotFound:
            return None

    def _storage_class(self, name: str) -> Obj | None:
        try:
            return self.client.get(STORAGE_CLASSES, name)
        except NotFound:
            return None

    # -- reconcile ------------------------------------------------------------------------------

    def reconcile(self, key: str) -> Result | None:
        namespace, _, name = key.partition("/")
        pod = self.pods.get(namespace, name)
        if pod is None:
            return None
        now = self.cleanup.clock()
        decision = decide_pod_recovery(self.gather(pod, fresh=False, now=now), now)
        if isinstance(decision, KeepPod):
            log.debug("pod %s: kept: %s %s", key, decision.reason, decision.detail,
                      extra={"kind": "Pod", "namespace": namespace, "object": name})
            return None
        return self._recover(decision, now)

    def _recover(self, planned: RecoverPod, now: datetime) -> Result | None:
        key = f"{planned.namespace}/{planned.name}"
        try:
            pod = self.client.get(PODS, planned.name, planned.namespace)
        except NotFound:
            return None
        if str_field(pod, "metadata", "uid") != planned.uid:
            log.info("pod %s was replaced (new UID) before recovery; decided again on its events", key)
            return None
        try:
            fresh = decide_pod_recovery(self.gather(pod, fresh=True, now=now), now)
        except KubeError as exc:
            log.info("pod %s: could not confirm it is stuck (%s); not deleting", key, exc)
            return Result(requeue_after=_CACHE_LAG_RECHECK)
        if not recovery_confirms(fresh, planned):
            log.info("pod %s: the cache says it is stuck but a fresh read does not (%s); not deleting", key,
                     fresh.reason if isinstance(fresh, KeepPod) else "another pod or claim")
            return None
        try:
            self.client.delete(PODS, planned.name, planned.namespace, uid=planned.uid)
        except NotFound:
            return None
        except Conflict:
            log.info("pod %s changed identity before deletion; left alone", key)
            return None
        waited = max(0.0, (self.cleanup.clock() - planned.claim.deleted_at).total_seconds())
        if self.cleanup.recorder is not None:  # queued before counting: a count means its event is queued
            self.cleanup.recorder.record(pod, "Normal", EVENT_REASON_POD_RECOVERY, planned.message)
        self.metrics.recovery_seconds.observe(waited)
        self.metrics.recovered.inc()
        log.info("deleted StatefulSet pod %s (%s; PVC %s deleted by node cleanup %.0fs before)", key,
                 planned.why, planned.claim.name, waited,
                 extra={"kind": "Pod", "namespace": planned.namespace, "object": planned.name})
        return None
