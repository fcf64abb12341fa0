"""Where the node agent learns who owns the data on its disks: Longhorn.

The answer is an :class:`policy.orphans.Ownership`, built from three Longhorn sources in
``--longhorn-namespace``:

* the ``nodes.longhorn.io`` object of this node (disks, their UUIDs and Ready
  conditions, eviction requests, the node's own Ready condition, the replicas scheduled
  on each disk);
* the ``replicas.longhorn.io`` objects (which directories are in use);
* the ``settings.longhorn.io`` objects for orphan auto-deletion.

Each comes in two flavours: the cached one (``fresh=False``), from a watch, for the
periodic scan, and the fresh one (``fresh=True``), straight from the API server, for the
moment before data is removed: a Replica created a second ago may not have reached the
watch yet, and removing its directory on a stale view is exactly the mistake to avoid.

Anything that cannot be read (a CRD not served, RBAC missing, a watch not synced, a
namespace without Longhorn) is "unknown", never "nothing is owned"; the Longhorn CRDs may
be installed after the agent starts, so an unserved resource is looked for again now and
then.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from kustodian.kube.cache import CacheFactory, StandaloneCaches, WatchCache
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import Forbidden, KubeError, NotFound
from kustodian.kube.resources import Resource
from kustodian.policy.objects import str_field
from kustodian.policy.orphans import OrphanReason, Ownership, TrackedReplica, ownership, tracked_replicas

log = logging.getLogger(__name__)

REPLICAS = Resource("longhorn.io", "v1beta2", "replicas", "Replica", True)
LONGHORN_NODES = Resource("longhorn.io", "v1beta2", "nodes", "Node", True)
LONGHORN_SETTINGS = Resource("longhorn.io", "v1beta2", "settings", "Setting", True)


class ReplicaTracker(Protocol):
    """Who owns the data on this node (see the module docstring).

    A runnable of the node agent's Manager, which starts it with the caches and waits for it
    (``wait_synced``) before the first reconcile or scan.
    """

    name: str
    needs_leader: bool

    def start(self) -> None:
        """Begin tracking (may return before the first answer is known)."""

    def stop(self) -> None: ...

    def wait_synced(self, timeout: float) -> bool:
        """Wait until :meth:`ownership` can answer (True at once when it never will)."""

    def ownership(self, *, fresh: bool = False) -> Ownership:
        """The ownership verdict for this node; ``known=False`` with the reason when unknown."""

    def longhorn_settings(self) -> dict[str, str] | None:
        """Longhorn's Settings (name -> value), ``None`` when they cannot be read."""

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` (from a watch thread; keep it fast) when the Longhorn Node changes."""


class NoTracker:
    """``--tracker=none``: nothing is known, so nothing is ever reported as orphaned."""

    name = "replica-tracker"
    needs_leader = True

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def wait_synced(self, timeout: float) -> bool:
        return True

    def ownership(self, *, fresh: bool = False) -> Ownership:
        return Ownership(False, OrphanReason.TRACKING_UNKNOWN, "--tracker=none: no ownership source")

    def longhorn_settings(self) -> dict[str, str] | None:
        return None

    def add_listener(self, listener: Callable[[], None]) -> None:
        return None


class LonghornWatch:
    """A watch cache of one Longhorn resource in ``namespace``, asked of ``caches`` (the process's
    Manager) once the API serves it."""

    def __init__(self, client: KubeClient, resource: Resource, namespace: str, *,
                 field_selector: str | None = None, recheck_interval: float = 30.0,
                 clock: Callable[[], float] = time.monotonic, caches: CacheFactory | None = None) -> None:
        self.client = client
        self._caches = caches if caches is not None else StandaloneCaches(client)
        self.resource = resource
        self.namespace = namespace
        self.field_selector = field_selector
        self.recheck_interval = recheck_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: WatchCache | None = None
        self._checked_at: float | None = None
        self._stopped = False
        self._listeners: list[Callable[[], None]] = []
        self.why_unknown = f"{resource.key} not looked at yet"

    @property
    def cache(self) -> WatchCache | None:
        return self._cache

    def add_listener(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def _notify(self, etype: str, new: Obj | None, old: Obj | None) -> None:
        for listener in self._listeners:
            listener()

    def ensure(self) -> WatchCache | None:
        """The watch cache, started once the API serves the resource (looked for every recheck_interval)."""
        with self._lock:
            if self._cache is not None or self._stopped:
                return self._cache
            now = self._clock()
            if self._checked_at is not None and now - self._checked_at < self.recheck_interval:
                return None
            self._checked_at = now
            try:
                served = self.client.has_resource(self.resource)
            except Exception as exc:  # discovery failing is "unknown", never an orphan verdict
                self.why_unknown = f"cannot tell whether {self.resource.key} is served: {exc}"
                log.warning("%s", self.why_unknown)
                return None
            if not served:
                self.why_unknown = f"{self.resource.key} is not served (Longhorn not installed?)"
                log.info("%s: no directory is an orphan", self.why_unknown)
                return None
            cache = self._caches(self.resource, namespace=self.namespace, field_selector=self.field_selector)
            cache.add_handler(self._notify)
            self._cache = cache.start()  # started already when the Manager's caches run
            return self._cache

    def start(self) -> None:
        self.ensure()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            cache = self._cache
        if cache is not None:
            cache.stop(timeout=1)

    def wait_synced(self, timeout: float) -> bool:
        cache = self._cache
        return True if cache is None else cache.wait_synced(timeout)

    def items(self) -> list[Obj] | None:
        """The cached objects, ``None`` while unknown (not served, not synced)."""
        cache = self.ensure()
        if cache is None:
            return None
        if not cache.synced.is_set():
            self.why_unknown = f"the {self.resource.key} watch has not synced"
            return None
        return cache.list()


class LonghornReplicas(LonghornWatch):
    """Longhorn ``Replica`` objects (``longhorn.io/v1beta2``) in ``namespace``."""

    def __init__(self, client: KubeClient, namespace: str, *, recheck_interval: float = 30.0,
                 clock: Callable[[], float] = time.monotonic, caches: CacheFactory | None = None) -> None:
        super().__init__(client, REPLICAS, namespace, recheck_interval=recheck_interval, clock=clock,
                         caches=caches)

    def tracked(self, *, fresh: bool = False) -> frozenset[TrackedReplica] | None:
        if not fresh:
            items = self.items()
            return None if items is None else tracked_replicas(items)
        if self.ensure() is None:
            return None
        try:
            # Unavailable propagates: the caller retries later rather than deciding blind.
            fresh_items, _ = self.client.list(REPLICAS, self.namespace)
        except (NotFound, Forbidden) as exc:
            log.warning("cannot list %s: %s", REPLICAS.key, exc)
            return None
        return tracked_replicas(fresh_items)


class Longhorn:
    """Ownership from Longhorn: this node's Longhorn Node, the Replicas, the Settings."""

    name = "replica-tracker"
    needs_leader = True  # started with the caches, after which the Manager waits for it

    def __init__(self, client: KubeClient, namespace: str, node: str, *, recheck_interval: float = 30.0,
                 clock: Callable[[], float] = time.monotonic, caches: CacheFactory | None = None) -> None:
        self.client = client
        self.namespace = namespace
        self.node = node
        self.replicas = LonghornReplicas(client, namespace, recheck_interval=recheck_interval, clock=clock,
                                         caches=caches)
        self.nodes = LonghornWatch(client, LONGHORN_NODES, namespace, field_selector=f"metadata.name={node}",
                                   recheck_interval=recheck_interval, clock=clock, caches=caches)
        self.settings = LonghornWatch(client, LONGHORN_SETTINGS, namespace, recheck_interval=recheck_interval,
                                      clock=clock, caches=caches)
        self._parts = (self.replicas, self.nodes, self.settings)

    @property
    def cache(self) -> WatchCache | None:
        """The Replica watch cache (tests wait on it)."""
        return self.replicas.cache

    def start(self) -> None:
        for part in self._parts:
            part.start()

    def stop(self) -> None:
        for part in self._parts:
            part.stop()

    def wait_synced(self, timeout: float) -> bool:
        return all(part.wait_synced(timeout) for part in self._parts)

    def add_listener(self, listener: Callable[[], None]) -> None:
        self.nodes.add_listener(listener)

    def _node(self, fresh: bool) -> tuple[Obj | None, str]:
        """This node's Longhorn Node, or ``None`` and why (``""`` when it simply does not exist)."""
        if self.nodes.ensure() is None:
            return None, self.nodes.why_unknown
        if not fresh:
            items = self.nodes.items()
            if items is None:
                return None, self.nodes.why_unknown
            return next((o for o in items if str_field(o, "metadata", "name") == self.node), None), ""
        try:
            return self.client.get(LONGHORN_NODES, self.node, self.namespace), ""
        except NotFound:
            return None, ""
        except KubeError as exc:
            return None, f"cannot read Longhorn Node {self.node}: {exc}"

    def ownership(self, *, fresh: bool = False) -> Ownership:
        node_obj, why = self._node(fresh)
        tracked = self.replicas.tracked(fresh=fresh) if node_obj is not None else None
        if node_obj is not None and tracked is None:
            return Ownership(False, OrphanReason.TRACKING_UNKNOWN,
                             f"Longhorn Replicas in namespace {self.namespace!r} unknown: "
                             f"{self.replicas.why_unknown}; nothing is reported or removed")
        return ownership(self.node, self.namespace, node_obj, tracked, node_error=why)

    def longhorn_settings(self) -> dict[str, str] | None:
        items = self.settings.items()
        if items is None:
            return None
        return {str_field(o, "metadata", "name"): str_field(o, "value") for o in items}
