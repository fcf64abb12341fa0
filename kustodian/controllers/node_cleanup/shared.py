"""What node cleanup's three reconcilers share: the caches, the two sources, the clock, the PVCs it deleted.

The claim reconciler (:class:`~controllers.node_cleanup.controller.NodeCleanup`), the PV
reconciler and the pod reconciler (:mod:`controllers.node_cleanup.recovery`) each read the
same Node, PV and PVC caches through the same sources and answer to the same clock; the pod
reconciler also hears of every PVC the claim reconciler deleted (:class:`CleanedClaims`).
That context is one object of its own, built once by the claim reconciler and handed to the
others, so no reconciler module imports another.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from kustodian.clock import Clock
from kustodian.controllers.node_cleanup.gather import NodeCleanupApiSource, NodeCleanupCacheSource
from kustodian.kube.cache import CacheFactory, WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import NODES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
from kustodian.policy.node_cleanup import INDEXERS, CleanedClaim

__all__ = ["CleanedClaims", "CleanupShared"]

_KEPT_FOR = timedelta(days=1)
_KEPT_MAX = 10_000


class CleanedClaims:
    """The PVCs node cleanup deleted, by ``(namespace, name)``; listeners hear of each new one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claims: dict[tuple[str, str], CleanedClaim] = {}
        self._listeners: list[Callable[[CleanedClaim], None]] = []

    def listen(self, listener: Callable[[CleanedClaim], None]) -> None:
        self._listeners.append(listener)

    def add(self, claim: CleanedClaim) -> None:
        with self._lock:
            self._expire(claim.deleted_at)
            self._claims[(claim.namespace, claim.name)] = claim
        for listener in list(self._listeners):
            listener(claim)

    def of(self, namespace: str, names: list[str], now: datetime) -> tuple[CleanedClaim, ...]:
        with self._lock:
            found = (self._claims.get((namespace, n)) for n in names)
            return tuple(c for c in found if c is not None and now - c.deleted_at <= _KEPT_FOR)

    def _expire(self, now: datetime) -> None:
        if len(self._claims) < _KEPT_MAX:
            return
        for key, claim in sorted(self._claims.items(), key=lambda kv: kv[1].deleted_at):
            if len(self._claims) < _KEPT_MAX // 2 and now - claim.deleted_at <= _KEPT_FOR:
                break
            del self._claims[key]



@dataclass(frozen=True)
class CleanupShared:
    """The caches and sources node cleanup reads, its clock and recorder, and the PVCs it deleted."""

    client: KubeClient
    clock: Clock
    recorder: EventRecorder | None
    caches: CacheFactory  # the process's (``manager.cache``): the pod reconciler asks it for Pods
    nodes: WatchCache
    pvs: WatchCache
    pvcs: WatchCache
    cached: NodeCleanupCacheSource
    api: NodeCleanupApiSource
    cleaned: CleanedClaims

    @classmethod
    def build(cls, client: KubeClient, caches: CacheFactory, clock: Clock,
              recorder: EventRecorder | None) -> CleanupShared:
        nodes = caches(NODES)
        pvs = caches(PERSISTENT_VOLUMES, indexers=dict(INDEXERS["PersistentVolume"]))
        pvcs = caches(PERSISTENT_VOLUME_CLAIMS)
        return cls(client, clock, recorder, caches, nodes, pvs, pvcs,
                   NodeCleanupCacheSource(nodes, pvs, pvcs), NodeCleanupApiSource(client), CleanedClaims())
