"""Caches for the kinds a feature needs, started and stopped as their CRDs come and go.

Kinds are discovered once at start (``discovery.resolve``), then a watch on
CustomResourceDefinitions keeps the set current: when a CRD that serves a wanted
kind becomes Established, its cache is created and started; when the CRD goes
away, the cache stops.  Until the new cache is fresh, anything that reads the kind
sees it as stale (the deletion guard answers 503), never as "absent".

A CRD that disappears while its cache still holds objects is kept as a *ghost*: a
stopped, stale cache.  A real uninstall deletes every object first (the CRD's
cleanup finalizer; we see each DELETED event), so the cache is empty by the time
the CRD goes; objects still cached mean the API vanished under them (etcd surgery,
a restored backup, an API server that does not serve the CRD yet) and may come
back, so decisions that read the kind are refused until it is served and fresh
again.  ``state(kind)`` is the one question readers ask.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kustodian.kube.cache import Indexer, WatchCache
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.resources import BUILTIN, CRDS, Resource

log = logging.getLogger(__name__)

CRD_KIND = CRDS.key
KindCache = Callable[[Resource, Mapping[str, Indexer]], WatchCache]  # a served kind -> its cache


class CacheRegistry(Protocol):
    """The process's caches (``runtime.Manager``): one per kind, started and stopped by their owner."""

    def cache(self, resource: Resource, *, indexers: Mapping[str, Indexer] | None = None,
              transform: Callable[[Obj], Obj] | None = None,
              backoff_max: float | None = None) -> WatchCache: ...

    def forget_cache(self, cache: WatchCache) -> None: ...


@dataclass(frozen=True)
class KindState:
    """What a reader may assume about one kind right now.

    ``served`` False and ``stale_for`` None: the kind does not exist in this cluster, so it
    has no objects.  ``stale_for`` set: its objects are not known to be current (the
    seconds say for how long); ``stale_kind`` names the cache to blame (the kind itself, or
    CustomResourceDefinition when we cannot even tell whether the kind is served).
    ``renewing``: stale only because its watch ended by the server's timer and the next one,
    resumed from the same resourceVersion, is being opened (``WatchCache.renewing``).
    """

    kind: str
    served: bool
    stale_for: float | None = None
    stale_kind: str = ""
    renewing: bool = False

    @property
    def fresh(self) -> bool:
        return self.stale_for is None


def crd_kind_key(crd: Mapping[str, Any]) -> str:
    spec = crd.get("spec") or {}
    return f"{(spec.get('names') or {}).get('kind')}.{spec.get('group')}"


def crd_resource(crd: Mapping[str, Any]) -> Resource | None:
    """The resource an Established CRD serves (its storage version when served), else None."""
    spec = crd.get("spec") or {}
    conditions = (crd.get("status") or {}).get("conditions") or []
    established = any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions
                      if isinstance(c, dict))
    served = [v for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("served")]
    if not established or not served:
        return None
    version = next((v for v in served if v.get("storage")), served[0])
    names = spec.get("names") or {}
    return Resource(str(spec.get("group") or ""), str(version.get("name")), str(names.get("plural") or ""),
                    str(names.get("kind") or ""), spec.get("scope") == "Namespaced")


RETRY_MAX = 4.0
"""Longest wait between a followed cache's reconnection attempts (the cache default is 30 s).
While a guarded kind is stale its providers' deletes are refused, so after an API server
restart the time to retry counts as much as the re-list: with 30 s, a server away for ~5 s
left caches waiting up to ~6 s more after it was back.  ~25 kinds retrying every 4 s is a
few requests per second against a server that is down."""


class FollowedKinds:
    """``caches`` (shared with a ``CacheView``) for ``wanted`` kinds, following CRDs.

    With a ``registry`` (the process's Manager) every cache, the CRD watch's included, is asked
    of it: the Manager starts and stops them with the process, starts one made for a CRD served
    later at once, and is told to forget one whose CRD went away.  Without one (tests, offline
    tools) the caches are this object's own, started and stopped by :meth:`start`/:meth:`stop`.
    """

    def __init__(self, client: KubeClient | None, wanted: Mapping[str, Mapping[str, Indexer]],
                 resolved: Mapping[str, Resource], *, factory: KindCache | None = None,
                 crd_cache: WatchCache | None = None, settle_timeout: float = 10.0,
                 transforms: Mapping[str, Callable[[Obj], Obj]] | None = None,
                 registry: CacheRegistry | None = None) -> None:
        self.client = client
        self.wanted = {k: dict(v) for k, v in wanted.items()}
        # per kind, what a cached object keeps (kube.slim.projection); other kinds are kept whole
        shapes = dict(transforms or {})
        self._registry = registry
        if factory is None:
            if registry is not None:
                def factory(res: Resource, idx: Mapping[str, Indexer]) -> WatchCache:
                    return registry.cache(res, indexers=idx, transform=shapes.get(res.key),
                                          backoff_max=RETRY_MAX)
            else:
                def factory(res: Resource, idx: Mapping[str, Indexer]) -> WatchCache:
                    return WatchCache(client, res, indexers=idx, transform=shapes.get(res.key),
                                      backoff_max=RETRY_MAX)
        self._factory = factory
        self._lock = threading.Lock()
        self._started = False
        self.caches: dict[str, WatchCache] = {
            k: self._factory(r, self.wanted[k]) for k, r in resolved.items()}
        builtin = {r.key for r in BUILTIN}
        # kinds a CRD may serve: everything with a group that is not built in
        self.followed = frozenset(k for k in self.wanted if "." in k and k not in builtin)
        if crd_cache is None:
            crd_cache = (registry.cache(CRDS, backoff_max=RETRY_MAX) if registry is not None and self.followed
                         else WatchCache(client, CRDS, backoff_max=RETRY_MAX))
        self.crds = crd_cache
        self.crds.add_handler(self._on_crd)
        self.changes = 0  # kind set changes, for tests and metrics
        self._settle_timeout = settle_timeout
        self._settling: set[WatchCache] = set()
        self._warned: dict[str, bool] = {}
        if registry is not None:  # its owner starts the caches: what is not served is said now
            self._log_unserved()

    # -- reads ------------------------------------------------------------------------------

    def state(self, kind: str, now: float | None = None) -> KindState:
        cache = self.caches.get(kind)
        if cache is not None:
            if cache.fresh:
                return KindState(kind, True)
            return KindState(kind, True, cache.stale_for(now), kind, cache.renewing)
        if kind in self.followed and not self.crds.fresh:
            return KindState(kind, False, self.crds.stale_for(now), CRD_KIND, self.crds.renewing)
        return KindState(kind, False)

    def unserved(self) -> list[str]:
        """Wanted kinds this cluster does not serve (no cache)."""
        return sorted(k for k in self.wanted if k not in self.caches or self.caches[k].ghost)

    def stale(self, now: float | None = None, *, ghosts: bool = True) -> dict[str, float]:
        """Stale kinds with how long they have been stale (the CRD watch included; ghosts unless
        ``ghosts=False``: they stay stale until their CRD returns, which no retry fixes)."""
        out = {k: c.stale_for(now) for k, c in list(self.caches.items())
               if not c.fresh and (ghosts or not c.ghost)}
        if self.followed and not self.crds.fresh:
            out[CRD_KIND] = self.crds.stale_for(now)
        return out

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the caches (without a registry: with one, its owner starts them)."""
        with self._lock:
            self._started = True
            caches = list(self.caches.values())
        for cache in caches:
            cache.start()
        if self.followed:
            self.crds.start()
        self._log_unserved()

    def stop(self, timeout: float = 1.0) -> None:
        with self._lock:
            self._started = False
            caches = list(self.caches.values())
        self.crds.stop(timeout=timeout)
        for cache in caches:
            cache.stop(timeout=timeout)

    # -- following CRDs ---------------------------------------------------------------------

    def _on_crd(self, etype: str, new: Obj | None, old: Obj | None) -> None:
        crd = new or old
        if crd is None:
            return
        kind = crd_kind_key(crd)
        if kind not in self.followed:
            return
        res = crd_resource(new) if new is not None and etype != "DELETED" else None
        if res is None:
            self._crd_gone(kind)
            return
        with self._lock:
            current = self.caches.get(kind)
            if (current is not None and current.resource == res and not current.ghost
                    and current not in self._settling):
                return
            if current is not None:
                self._forget(current)  # a new cache takes its place, never the stopped one back
            cache = self._factory(res, self.wanted[kind])
            self.caches[kind] = cache
            started = self._started
            self.changes += 1
        if current is not None:
            current.stop(timeout=0)
        log.info("%s is served now (%s); caching it", kind, res.api_version)
        if started:
            cache.start()
        self._log_unserved()

    def _crd_gone(self, kind: str) -> None:
        with self._lock:
            current = self.caches.get(kind)
            if current is None or current.ghost or current in self._settling:
                return
            settle = self._settle_timeout > 0 and len(current) > 0 and current.fresh
            if settle:
                self._settling.add(current)
        if settle:
            # An uninstall deletes every object before its CRD, but on another watch: let the
            # kind's own watch deliver those DELETED events (it ends when the API goes) before
            # judging what is left.
            threading.Thread(target=self._settle, args=(kind, current), daemon=True,
                             name=f"settle-{kind}").start()
        else:
            self._retire(kind, current)

    def _settle(self, kind: str, cache: WatchCache) -> None:
        deadline = time.monotonic() + self._settle_timeout
        while cache.fresh and time.monotonic() < deadline:
            time.sleep(0.05)
        self._retire(kind, cache)

    def _retire(self, kind: str, cache: WatchCache) -> None:
        cache.stop(timeout=0)
        with self._lock:
            self._settling.discard(cache)
            if self.caches.get(kind) is not cache:
                return  # served again meanwhile: a new cache took its place
            cache.ghost = len(cache) > 0
            if not cache.ghost:
                del self.caches[kind]
                self._forget(cache)
            self.changes += 1
        if cache.ghost:
            log.warning("%s is no longer served but %d cached objects were never seen deleted; decisions "
                        "that read it are refused until it is served again", kind, len(cache))
        self._log_unserved()

    def _forget(self, cache: WatchCache) -> None:
        if self._registry is not None:
            self._registry.forget_cache(cache)

    def _log_unserved(self) -> None:
        """One WARNING per change of a wanted kind's served state (not one per event)."""
        for kind in sorted(self.wanted):
            served = kind in self.caches and not self.caches[kind].ghost
            if self._warned.get(kind) == served:
                continue
            first = kind not in self._warned
            self._warned[kind] = served
            if not served:
                log.warning("%s is named by a rule but not served by this cluster (no CRD); it is not "
                            "guarded until it is", kind)
            elif not first:
                log.warning("%s is served again and guarded once its cache is fresh", kind)


def wait_fresh(caches: Mapping[str, WatchCache], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(c.fresh for c in list(caches.values())):
            return True
        time.sleep(0.05)
    return False
