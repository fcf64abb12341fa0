"""The Manager: what every long-running Kustodian process shares (controller-runtime's manager).

One per process (webhook, controllers, node-cleanup, node-agent).  It owns

* **one watch cache per kind** (per kind + namespace + selectors), controller-runtime's
  ``cache.Options{ByObject: ...}``: every component asks
  ``manager.cache(PERSISTENT_VOLUME_CLAIMS, indexers=..., transform=...)`` and gets the same
  cache, with the indexes of all users merged, so each kind is listed and watched once per
  process whatever is enabled; no component builds a cache of its own.  A cached object keeps
  the kind's one slim shape (``kube.slim.TRANSFORMS``) unless the first asker names another;
  two components that would slim a kind differently are refused at assembly (they must agree
  on one shape in ``kube.slim``).  A cache asked for once the caches run (a CRD served later)
  starts at once; ``forget_cache`` stops and drops one (its CRD went away).  Caches start
  under the Lease (``caches_need_leader=True``: nothing acts before every one has synced) or,
  for a process where every replica serves from them (the webhook), at once with the
  runnables that need no leader, ``/readyz`` saying when they are in;
* **runnables** (:mod:`kustodian.runtime.runnables`): reconcilers
  (``manager.add(NodeCleanup(manager.cache, ...))``), each a work queue with retry by default
  and a periodic resync; loops and components (``manager.add_runnable(...)``).  Those that do
  not need the leader (the HTTPS server, the cert manager) start at once; the others start
  under the Lease, in the order added, once every cache has synced;
* **leader election** for the runnables that need it: caches start when the Lease is won and
  nothing acts before every one of them has synced.  A leader whose caches cannot sync within
  ``sync_timeout`` gives the Lease up at once and the process exits non-zero: a zombie leader
  that holds the Lease and runs nothing is the worst outcome, since no other replica can act;
* **signals and graceful shutdown**: SIGTERM stops acting, then releases the Lease so the next
  replica takes over at once;
* **one health/metrics server** (:class:`HealthServer`): ``/healthz``, ``/readyz`` and metrics.

A reconciler's optional behaviour is a typed protocol it implements (:class:`Resyncs`,
:class:`AfterSync`, :class:`HasPrimary`), never an attribute probed by name.  A periodic
resync is a :class:`~kustodian.runtime.periodic.Periodic`, like every other timer.

``run()`` returns the process exit code (0 stopped on request, 1 could not sync or lost the
Lease; a restarted pod campaigns again with fresh caches).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from prometheus_client import CollectorRegistry, Gauge

from kustodian.kube.cache import CacheFactory, Indexer, WatchCache, object_key
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.leader import LeaderElector
from kustodian.kube.resources import Resource
from kustodian.kube.slim import TRANSFORMS
from kustodian.runtime.health import Checks, HealthServer
from kustodian.runtime.metrics import CacheCollector, RestClientMetrics, register_process_collectors
from kustodian.runtime.periodic import Periodic
from kustodian.runtime.runnables import Loop, Runnable, Syncs
from kustodian.runtime.workqueue import ControllerMetrics, Result, WorkQueue
from kustodian.settings import LeaderElectionGroup

__all__ = ["AfterSync", "CacheFactory", "HasPrimary", "LeaderElection", "Manager", "Reconciler", "Resyncs",
           "leader_election"]

log = logging.getLogger(__name__)

Enqueue = Callable[[str], None]
CacheKey = tuple[str, str, str | None, str | None, str | None]  # kind, version, namespace, fields, labels


def _name_of(transform: Callable[[Obj], Obj] | None) -> str:
    return "the whole object" if transform is None else repr(transform)


@runtime_checkable
class Reconciler(Protocol):
    """The one reconcile contract: level-based ``reconcile(key)``; ``wire`` turns events into keys.

    Optional behaviour is one of the protocols below, implemented by the reconciler.
    """

    name: str

    def wire(self, enqueue: Enqueue) -> None: ...

    def reconcile(self, key: str) -> Result | None: ...


@runtime_checkable
class Resyncs(Protocol):
    """Enqueues what a periodic resync should look at again (else: every object of ``primary``)."""

    def resync(self, enqueue: Enqueue) -> None: ...


@runtime_checkable
class HasPrimary(Protocol):
    """A reconciler keyed by the objects of one cache: the resync enqueues each of them."""

    primary: WatchCache


@runtime_checkable
class AfterSync(Protocol):
    """Work done once every cache has synced, before the first worker takes a key."""

    def after_sync(self) -> None: ...


@dataclass(frozen=True)
class LeaderElection:
    namespace: str
    lease: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError(f"leader election: need lease duration ({self.lease_duration}s) > renew "
                             f"deadline ({self.renew_deadline}s) > retry period ({self.retry_period}s) > 0, "
                             "or two "
                             "replicas could act at once")

    @property
    def margin(self) -> float:
        """Time a call sent at the last fenced moment has to land before another replica may lead."""
        return self.lease_duration - self.renew_deadline


class Controller:
    """A reconciler as a runnable: its work queue, its workers and its periodic resync."""

    needs_leader = True

    def __init__(self, reconciler: Reconciler, queue: WorkQueue, resync: float) -> None:
        self.name = reconciler.name
        self.reconciler = reconciler
        self.queue = queue
        self.resync = resync
        self._resync_loop = Periodic(f"{reconciler.name}-resync", self.resync_now, resync,
                                     immediate=False) if resync > 0 else None

    def __repr__(self) -> str:
        return f"Controller({self.name!r})"

    def start(self) -> None:
        if isinstance(self.reconciler, AfterSync):
            self.reconciler.after_sync()
        self.queue.start()
        if self._resync_loop is not None:
            self._resync_loop.start()

    def stop(self) -> None:
        self.queue.stop()
        if self._resync_loop is not None:
            self._resync_loop.stop()

    def resync_now(self) -> None:
        if isinstance(self.reconciler, Resyncs):
            self.reconciler.resync(self.queue.enqueue)
        elif isinstance(self.reconciler, HasPrimary):
            for obj in self.reconciler.primary.list():
                self.queue.enqueue(object_key(obj))


def leader_election(settings: LeaderElectionGroup, namespace: str) -> LeaderElection | None:
    """The Manager's leader election from its settings group (``None`` when off)."""
    if not settings.enabled:
        return None
    return LeaderElection(namespace=namespace, lease=settings.lease_name, identity=settings.identity,
                          lease_duration=settings.lease_duration.total_seconds(),
                          renew_deadline=settings.renew_deadline.total_seconds(),
                          retry_period=settings.retry_period.total_seconds())


class Manager:
    def __init__(self, client: KubeClient | None, *, name: str, registry: CollectorRegistry | None = None,
                 leader_election: LeaderElection | None = None, sync_timeout: float = 300.0,
                 health_address: str = "", metrics_path: str = "/metrics", workers: int = 2,
                 resync_period: float = 600.0, caches_need_leader: bool = True) -> None:
        self.client = client
        self.name = name
        self.registry = registry if registry is not None else CollectorRegistry()
        self.leader_election = leader_election
        self.sync_timeout = sync_timeout
        self.health_address = health_address
        self.metrics_path = metrics_path
        self.workers = workers
        self.resync_period = resync_period
        self.caches_need_leader = caches_need_leader
        self.readiness = Checks()
        self.liveness = Checks()
        self._controller_metrics: ControllerMetrics | None = None
        self.elector: LeaderElector | None = None
        self.health: HealthServer | None = None
        self._caches: dict[CacheKey, WatchCache] = {}
        self._waited: set[CacheKey] = set()  # the caches readiness and acting wait for (not conveniences)
        self._caches_running = False  # set while the caches run: a cache asked for now starts at once
        self._cache_lock = threading.RLock()
        self._cache_names: Callable[[], Mapping[str, WatchCache]] = self._caches_by_name
        self._cache_metrics = False
        self._runnables: list[Runnable] = []
        self._started: list[Runnable] = []  # leader runnables started, in order
        self._acting = threading.Event()  # set while controllers run (for tests and readiness)
        self._failed = ""  # why a runnable gave up (run() then returns 1)
        self._done: threading.Event | None = None
        self._stop = threading.Event()  # stops the leader's work (lease lost or process stopping)
        self._lock = threading.Lock()
        self.readiness.add("caches-synced", self._caches_ready)
        self.readiness.add("leader-election", self._can_campaign)
        register_process_collectors(self.registry)
        if client is not None:
            RestClientMetrics(self.registry).attach(client)
        if leader_election is not None:
            Gauge("kustodian_leader_election_is_leader",
                  "1 while this replica holds the Lease and its controllers run",
                  ["lease"], registry=self.registry).labels(leader_election.lease).set_function(
                lambda: 1.0 if self._acting.is_set() else 0.0)

    @property
    def controller_metrics(self) -> ControllerMetrics:
        """The work queues' metrics, registered with the first reconciler (a webhook has none)."""
        if self._controller_metrics is None:
            self._controller_metrics = ControllerMetrics(self.registry)
        return self._controller_metrics

    # -- assembly -------------------------------------------------------------------------------

    def cache(self, resource: Resource, *, namespace: str | None = None,
              indexers: Mapping[str, Indexer] | None = None, transform: Callable[[Obj], Obj] | None = None,
              field_selector: str | None = None, label_selector: str | None = None,
              backoff_max: float | None = None, waited: bool = True) -> WatchCache:
        """The process's one cache of ``resource`` (per namespace and selectors), indexes merged.

        ``transform`` is what a cached object is cut down to: the kind's one slim shape
        (``kube.slim.TRANSFORMS``) when not given.  A second asker naming another shape is a bug of
        assembly (one copy cannot be two shapes): refused.  ``backoff_max``: how soon a lost watch
        is retried at most (the shortest any asker names).  ``waited=False``: a convenience the
        process follows but never waits for (csi-addons' ConfigMap: read when it can be, its
        defaults in force until then): left out of ``/readyz``'s ``caches-synced`` and of the
        caches the leader waits on before acting, unless another asker waits for it.
        """
        key: CacheKey = (resource.key, resource.api_version, namespace, field_selector, label_selector)
        with self._cache_lock:
            cache = self._caches.get(key)
            if cache is None:
                cache = WatchCache(self.client, resource, namespace=namespace, indexers=indexers,
                                   transform=transform, field_selector=field_selector,
                                   label_selector=label_selector)
                self._caches[key] = cache
                start = self._caches_running
            else:
                wanted = transform if transform is not None else TRANSFORMS.get(resource.key)
                if wanted is not cache.transform:
                    raise ValueError(f"{self.name}: the {resource.key} cache is asked for with two shapes "
                                     f"({_name_of(cache.transform)} and {_name_of(wanted)}); components "
                                     "sharing a kind agree on one slim shape (kube.slim)")
                if indexers:
                    cache.add_indexers(indexers)
                start = False
            if waited:
                self._waited.add(key)
            if backoff_max is not None:
                cache.shorten_backoff(backoff_max)
            if not self._cache_metrics:
                self._cache_metrics = True
                self.registry.register(CacheCollector(self._named_caches))
        if start:
            cache.start()
        return cache

    def forget_cache(self, cache: WatchCache) -> None:
        """Stop ``cache`` and drop it (its CRD went away): asked for again, a new one is made."""
        with self._cache_lock:
            for key, held in list(self._caches.items()):
                if held is cache:
                    del self._caches[key]
                    self._waited.discard(key)
        cache.stop(timeout=0)

    def _named_caches(self) -> Mapping[str, WatchCache]:
        return self._cache_names()

    def name_caches(self, names: Callable[[], Mapping[str, WatchCache]]) -> None:
        """Name the caches in ``kustodian_cache_*{kind}`` as ``names`` does (the webhook keys its two
        one-object ConfigMap caches apart); by kind, and scope when a kind has several, by default."""
        self._cache_names = names

    def _caches_by_name(self) -> dict[str, WatchCache]:
        """The caches by kind, told apart by namespace and selectors when a kind has several."""
        out: dict[str, WatchCache] = {}
        for (_, _, namespace, fields, labels), cache in list(self._caches.items()):
            name = cache.kind_key
            if name in out:
                extra = ",".join(p for p in (namespace, fields, labels) if p)
                name = f"{name} ({extra or id(cache)})"
            out[name] = cache
        return out

    def describe_caches(self) -> list[str]:
        """Every cache of the process, by kind (with its namespace and selectors, when it has any)."""
        out = []
        for (kind, _, namespace, fields, labels) in list(self._caches):
            scope = ",".join(p for p in (namespace and f"namespace={namespace}", fields, labels) if p)
            out.append(f"{kind} ({scope})" if scope else kind)
        return sorted(out)

    @property
    def caches(self) -> list[WatchCache]:
        return list(self._caches.values())

    def waited_caches(self) -> list[WatchCache]:
        """The caches readiness and acting wait for: every one but the conveniences (``waited=False``)."""
        with self._cache_lock:
            return [c for k, c in self._caches.items() if k in self._waited]

    @property
    def reconcilers(self) -> list[Reconciler]:
        return [r.reconciler for r in self._runnables if isinstance(r, Controller)]

    @property
    def runnables(self) -> list[Runnable]:
        return list(self._runnables)

    def describe(self) -> list[tuple[str, bool]]:
        """``(name, needs_leader)`` of every runnable, in the order they start."""
        first = [r for r in self._runnables if not r.needs_leader]
        return [(r.name, r.needs_leader) for r in first + [r for r in self._runnables if r.needs_leader]]

    def add(self, reconciler: Reconciler, *, workers: int | None = None,
            resync: float | None = None) -> WorkQueue:
        """Run ``reconciler`` under this manager: a work queue, its workers, its periodic resync."""
        queue = WorkQueue(reconciler.name, reconciler.reconcile, metrics=self.controller_metrics,
                          workers=self.workers if workers is None else workers)
        self.add_runnable(Controller(reconciler, queue, self.resync_period if resync is None else resync))
        return queue

    def add_runnable(self, runnable: Runnable) -> Runnable:
        """Run ``runnable`` in this process: at once, or under the Lease once the caches synced."""
        if any(r.name == runnable.name for r in self._runnables):
            raise ValueError(f"{self.name}: two runnables named {runnable.name!r}")
        if isinstance(runnable, Loop) and runnable.critical:
            runnable.on_exit = self.fail
        self._runnables.append(runnable)
        return runnable

    def fail(self, reason: str) -> None:
        """A runnable cannot go on (its caches never synced): stop the process, exit code 1."""
        log.error("%s: %s; exiting", self.name, reason)
        self._failed = reason
        if self._done is not None:
            self._done.set()

    def add_loop(self, name: str, loop: Callable[[threading.Event], None]) -> None:
        """A plain loop started with the controllers (under the Lease); it returns when the event is set."""
        self.add_runnable(Loop(name, loop))

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def acting(self) -> bool:
        return self._acting.is_set()

    def fence(self) -> bool:
        """True while this process may act destructively (always, without leader election).

        Checked right before a destructive act; the KubeClient checks it before every DELETE.
        """
        if self.leader_election is None:
            return True
        elector = self.elector
        return elector is not None and elector.fence() and not self._stop.is_set()

    def _can_campaign(self) -> str | None:
        """A standby is ready while it could lead; not one that never can (its Lease's namespace
        missing, no right on Leases): that would look like a healthy standby forever."""
        elector = self.elector
        return (elector.campaign_error or None) if elector is not None else None

    def _caches_ready(self) -> str | None:
        if self.caches_need_leader and self.leader_election is not None and not self._acting.is_set():
            return None  # a standby replica is ready: it serves probes and waits for the Lease
        pending = sorted(c.kind_key + (f" ({c.last_error})" if c.last_error else "")
                         for c in self.waited_caches() if not c.synced.is_set())
        pending += sorted(r.name for r in self._started if isinstance(r, Syncs) and not r.wait_synced(0))
        return f"not synced: {', '.join(pending)}" if pending else None

    def start(self) -> bool:
        """The leader's part: caches, wait until all synced, then the leader runnables in order.

        False: could not sync.
        """
        leading = [r for r in self._runnables if r.needs_leader]
        for controller in leading:
            if isinstance(controller, Controller):  # before the caches: the first list enqueues
                controller.reconciler.wire(controller.queue.enqueue)
        if self.caches_need_leader:
            self.start_caches()
        syncing = [r for r in leading if isinstance(r, Syncs)]
        for syncer in syncing:
            # recorded before it starts (its start may call the API server: not under the lock),
            # so a stop_acting() from now on stops it too; none is started once stopping
            with self._lock:
                if self._stopping():
                    return True
                self._started.append(syncer)
            syncer.start()
        if not self._wait_synced(syncing):
            return False
        with self._lock:
            if self._stopping():  # stopped (lease lost, SIGTERM) while waiting for the caches
                return True
            for runnable in leading:
                if not isinstance(runnable, Syncs):
                    runnable.start()
                    self._started.append(runnable)
            self._acting.set()
        log.info("%s running: %s", self.name, ", ".join(r.name for r in self._runnables) or "-")
        return True

    def start_caches(self) -> None:
        """Start every cache; one asked for from now on starts at once (``Manager.run`` calls this)."""
        with self._cache_lock:
            self._caches_running = True
            caches = list(self._caches.values())
        for cache in caches:
            cache.start()

    def stop_caches(self) -> None:
        with self._cache_lock:
            self._caches_running = False
            caches = list(self._caches.values())
        for cache in caches:
            try:
                cache.stop(timeout=1)
            except Exception:  # one cache failing to stop must not leave the others watching
                log.exception("%s: stopping the %s cache failed", self.name, cache.kind_key)

    def _wait_synced(self, syncing: Sequence[Syncs]) -> bool:
        deadline = time.monotonic() + self.sync_timeout
        waited: list[tuple[str, Callable[[float], bool]]] = []
        if self.caches_need_leader:
            waited += [(c.kind_key, c.wait_synced) for c in self.waited_caches()]
        waited += [(r.name, r.wait_synced) for r in syncing]
        for _, wait in waited:
            # in slices, so a SIGTERM while a kind is not served (yet) stops the process at once
            while not wait(min(0.5, max(0.0, deadline - time.monotonic()))):
                if self._stopping():
                    return True
                if time.monotonic() < deadline:
                    continue
                pending = sorted(c.kind_key + (f" ({c.last_error})" if c.last_error else "")
                                 for c in self.waited_caches()
                                 if self.caches_need_leader and not c.synced.is_set())
                pending += sorted(r.name for r in syncing if not r.wait_synced(0))
                log.error("%s: caches did not sync within %ss, refusing to act on a partial view: %s",
                          self.name, self.sync_timeout, "; ".join(pending))
                return False
            if self._stopping():
                return True
        return True

    def _stopping(self) -> bool:
        """Told to stop: the leader part ended (``stop_acting``), or the process is (``run``'s event)."""
        return self._stop.is_set() or (self._done is not None and self._done.is_set())

    def stop_acting(self, timeout: float = 5.0) -> None:
        """Stop the leader runnables at once (last started first), then the caches."""
        with self._lock:
            self._stop.set()
            self._acting.clear()
            started, self._started = self._started, []
        for runnable in reversed(started):
            try:
                runnable.stop()
            except Exception:  # one runnable failing to stop must not keep the others running
                log.exception("%s: stopping %s failed", self.name, runnable.name)
        if self.caches_need_leader:
            self.stop_caches()

    def run(self, stop: threading.Event | None = None) -> int:
        """Serve health, start what needs no leader, act (while leading, when elected), block until
        stopped. The exit code.

        SIGTERM/SIGINT stop it; an embedding caller (a test) passes ``stop`` instead and no
        signal handler is installed.
        """
        done = stop if stop is not None else threading.Event()
        self._done = done
        if stop is None:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: done.set())
        if self.health_address:
            self.health = HealthServer(self.health_address, self.registry, self.readiness,
                                       metrics_path=self.metrics_path, liveness=self.liveness).start()
        fence, timeout = (self.client.fence, self.client.timeout) if self.client is not None else (None, 0.0)
        always: list[Runnable] = []
        try:
            if not self.caches_need_leader:  # every replica serves from them: they start first
                self.start_caches()
            for runnable in self._runnables:
                if not runnable.needs_leader and not done.is_set():
                    runnable.start()
                    always.append(runnable)
            if self.leader_election is None:
                if not self.start():
                    return 1
                done.wait()
                return 1 if self._failed else 0
            return self._run_elected(done)
        finally:
            self.stop_acting()
            for runnable in reversed(always):
                try:
                    runnable.stop()
                except Exception:
                    log.exception("%s: stopping %s failed", self.name, runnable.name)
            if not self.caches_need_leader:
                self.stop_caches()
            if self.client is not None:  # an embedding caller (a test) shares the client
                self.client.fence = fence
                self.client.set_timeout(timeout)
            if self.health is not None:
                self.health.stop()

    def _run_elected(self, done: threading.Event) -> int:
        assert self.client is not None and self.leader_election is not None
        le = self.leader_election
        elector = LeaderElector(self.client, namespace=le.namespace, name=le.lease, identity=le.identity,
                                lease_duration=le.lease_duration, renew_deadline=le.renew_deadline,
                                retry_period=le.retry_period)
        self.elector = elector
        if self.client.timeout > le.margin:
            # every call of a leader must end within the margin, or one sent just before the
            # fence closed could still be waiting when another replica leads
            log.info("%s: API calls bounded at %ss (lease %ss - renew deadline %ss)", self.name, le.margin,
                     le.lease_duration, le.renew_deadline)
            self.client.set_timeout(le.margin)
        self.client.fence = self.fence
        failed = threading.Event()

        def lead(lost: threading.Event) -> None:
            if not self.start():
                failed.set()
                elector.stop()  # give the Lease up now: another replica may sync where we could not

        def stop_when_done() -> None:
            done.wait()
            elector.stop()

        waiter = Loop(f"{self.name}-stop", lambda _: stop_when_done(), join_timeout=0)
        waiter.start()
        log.info("%s: campaigning for lease %s/%s as %s", self.name, le.namespace, le.lease, le.identity)
        elector.run(lead, self.stop_acting)
        if failed.is_set():
            log.error("%s: gave up the lease %s/%s because the caches could not sync; exiting",
                      self.name, le.namespace, le.lease)
            return 1
        if done.is_set():
            return 0
        log.error("%s: lost the lease %s/%s; exiting so a restart campaigns with fresh caches",
                  self.name, le.namespace, le.lease)
        done.set()
        return 1
