"""Where the node agent learns which replica directories are wanted.

The tracker is pluggable (:class:`ReplicaTracker`) because "wanted" depends on the
storage system; the answer ``None`` means "unknown", and then nothing is an orphan
(:func:`policy.orphans.find_orphans`).  Two answers are offered:

* the cached one (``fresh=False``), from a watch, for the periodic scan: cheap
  enough for every node every few seconds;
* the fresh one (``fresh=True``), a LIST from the API server, for the moment before
  data is removed: a Replica created a second ago may not have reached the watch yet,
  and removing its directory on a stale view is exactly the mistake to avoid.

Longhorn's ``replicas.longhorn.io`` may be installed after the agent starts; until
the API serves it the tracker answers ``None`` and looks again now and then.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.errors import Forbidden, NotFound
from kustodian.kube.resources import Resource
from kustodian.policy.orphans import TrackedReplica, tracked_replicas

log = logging.getLogger(__name__)

REPLICAS = Resource("longhorn.io", "v1beta2", "replicas", "Replica", True)


class ReplicaTracker(Protocol):
    def start(self) -> None:
        """Begin tracking (may return before the first answer is known)."""

    def stop(self) -> None: ...

    def wait_synced(self, timeout: float) -> bool:
        """Wait until :meth:`tracked` can answer (True at once when it never will)."""

    def tracked(self, *, fresh: bool = False) -> frozenset[TrackedReplica] | None:
        """Every replica the storage system schedules, or ``None`` when that is not known."""


class NoTracker:
    """``--tracker=none``: nothing is known, so nothing is ever reported as orphaned."""

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def wait_synced(self, timeout: float) -> bool:
        return True

    def tracked(self, *, fresh: bool = False) -> frozenset[TrackedReplica] | None:
        return None


class LonghornReplicas:
    """Longhorn ``Replica`` objects (``longhorn.io/v1beta2``) in ``namespace``."""

    def __init__(self, client: KubeClient, namespace: str, *, recheck_interval: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.namespace = namespace
        self.recheck_interval = recheck_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: WatchCache | None = None
        self._checked_at: float | None = None
        self._stopped = False

    @property
    def cache(self) -> WatchCache | None:
        return self._cache

    def _ensure_cache(self) -> WatchCache | None:
        """The watch cache, started once the API serves Replicas (checked at most every recheck_interval)."""
        with self._lock:
            if self._cache is not None or self._stopped:
                return self._cache
            now = self._clock()
            if self._checked_at is not None and now - self._checked_at < self.recheck_interval:
                return None
            self._checked_at = now
            try:
                served = self.client.has_resource(REPLICAS)
            except Exception as exc:  # discovery failing is "unknown", never an orphan verdict
                log.warning("cannot tell whether %s is served: %s", REPLICAS.key, exc)
                return None
            if not served:
                log.info("%s is not served (Longhorn not installed?): no directory is an orphan",
                         REPLICAS.key)
                return None
            self._cache = WatchCache(self.client, REPLICAS, namespace=self.namespace).start()
            return self._cache

    def start(self) -> None:
        self._ensure_cache()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            cache = self._cache
        if cache is not None:
            cache.stop(timeout=1)

    def wait_synced(self, timeout: float) -> bool:
        cache = self._cache
        return True if cache is None else cache.wait_synced(timeout)

    def tracked(self, *, fresh: bool = False) -> frozenset[TrackedReplica] | None:
        cache = self._ensure_cache()
        if cache is None:
            return None
        if not fresh:
            return tracked_replicas(cache.list()) if cache.synced.is_set() else None
        try:
            # Unavailable propagates: the caller retries later rather than deciding blind.
            items, _ = self.client.list(REPLICAS, self.namespace)
        except (NotFound, Forbidden) as exc:
            log.warning("cannot list %s: %s", REPLICAS.key, exc)
            return None
        return tracked_replicas(items)
