"""A watch cache (client-go's reflector + indexer) for any resource, built once.

* paginated list (limit 500), then a watch from the list's resourceVersion with
  bookmarks, resumed from the last seen resourceVersion after a drop or a server
  timeout;
* re-list on 410 Gone (HTTP or in-stream ERROR event) with jittered exponential
  backoff; handlers are told about every difference the re-list found, so nothing
  that changed while we were away is missed;
* objects kept slim (no ``managedFields``, no last-applied annotation, plus an
  optional per-resource ``transform``) and parsed with orjson; a list keeps each page
  to its slim copies and lets the page go (collecting what the HTTP client left in
  reference cycles) before it asks for the next, so what a list costs once it ends is
  what the copies hold, not the largest list ever decoded;
* secondary indexes declared by the policy modules (``policy.store.Indexers``), so
  the admission path is a dict lookup;
* ``synced``: set once the first full list is in, never cleared (a cache that lost
  its watch still serves its last consistent state, like an informer does);
* ``fresh``: stricter, and what a safety decision must ask.  A cache is fresh only
  while a watch is established (HTTP 200) that started from its last list or from a
  watch that ended by the server's own timeout.  Any other end of a watch (the API
  server went away, a 404 because a CRD is not served yet, a 410, a decode error)
  makes it stale *and* forces a re-list: a watch resumed after a gap may be served by
  an API server whose watch cache is behind (an HA peer, or a restarted server that
  is still re-initialising), so only a consistent list proves we caught up.  The
  re-list's own window (list RV -> watch established) is closed by the watch, which
  replays from the list's resourceVersion.  ``stale_for()`` says for how long a
  cache has not been fresh; ``last_event_age()`` how long since the server last
  spoke (event, bookmark or list).  A watch whose connection died without a FIN/RST
  never ends by itself: ``kube.liveness`` notices the silence and calls ``restart()``
  (stale now, the watch cut, a re-list next), then ``retry_now()`` once the server
  answers again.

Reads are served under a lock from plain dicts; the watch runs in its own daemon
thread, so a webhook's event loop and a controller's workers read without I/O.
"""

from __future__ import annotations

import builtins
import gc
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

import httpx

from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.decode import page_decoder
from kustodian.kube.errors import ApiError, Gone, KubeError, NotFound, Unavailable
from kustodian.kube.resources import Resource
from kustodian.kube.slim import TRANSFORMS, Projection, intern_common
from kustodian.policy.gc_pause import gc_paused

log = logging.getLogger(__name__)

Indexer = Callable[[Mapping[str, Any]], Iterable[str]]
Handler = Callable[[str, Obj | None, Obj | None], None]  # (event type, new, old)

NAMESPACE_INDEX = "namespace"
TOMBSTONES = 65_536  # emptied index buckets remembered before they are forgotten together
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def slim(obj: Obj) -> Obj:
    """Drop what no policy reads and what costs the most memory; intern repeated strings."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        ann = meta.get("annotations")
        if isinstance(ann, dict) and _LAST_APPLIED in ann:
            del ann[_LAST_APPLIED]
    return intern_common(obj)


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def _namespace_of(obj: Mapping[str, Any]) -> Iterable[str]:
    return ((obj.get("metadata") or {}).get("namespace") or "",)


class WatchCache:
    def __init__(self, client: KubeClient | None, resource: Resource, *, namespace: str | None = None,
                 indexers: Mapping[str, Indexer] | None = None,
                 transform: Callable[[Obj], Obj] | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 backoff_initial: float = 0.2, backoff_max: float = 30.0,
                 watch_timeout: int = 290, page_size: int = 500) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self._indexers: dict[str, Indexer] = {NAMESPACE_INDEX: _namespace_of, **(indexers or {})}
        self._transform = transform if transform is not None else TRANSFORMS.get(resource.key)
        # a projection's lists are decoded to what it keeps (``kube.decode``)
        shape = self._transform
        self._decode_page = page_decoder(shape.paths) if isinstance(shape, Projection) else None
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._backoff = (backoff_initial, backoff_max)
        self._watch_timeout = watch_timeout
        self._page_size = page_size
        self._lock = threading.RLock()
        self._items: dict[str, Obj] = {}
        self._index: dict[str, dict[str, dict[str, Obj]]] = {n: {} for n in self._indexers}
        self._handlers: list[Handler] = []
        self._stop = threading.Event()
        self._wake = threading.Event()  # cuts a backoff short (``retry_now``)
        self._thread: threading.Thread | None = None
        # start() and stop() may race (a leader starting its caches as SIGTERM stops them): the
        # thread is created, started and recorded under this lock, so stop() joins only a started
        # thread, and a cache stopped first never starts
        self._life = threading.Lock()
        # The last watch response, open or already ended: stop() shuts its socket down (an
        # ended watch's socket is closed, never pooled: ``KubeClient.watch``).
        self._stream: Any = None
        self.synced = threading.Event()
        self._renewing = False
        self.resource_version = ""
        # counters, read by /metrics and by tests
        self.relists = 0
        self.list_seconds = 0.0  # how long the last (re)list took, pages and replace (bench, metrics)
        self.lists_expired = 0  # lists cut short by a 410 on a continue token (they start again)
        self._list_started = 0.0
        self.watches = 0  # watch connections opened
        self.last_error = ""
        # freshness (see the module docstring); monotonic clock, written by the watch thread only
        self._fresh = False
        self._stale_since: float = time.monotonic()
        self._last_event_at: float | None = None
        self._watch_started_at = 0.0
        # change tracking for memoised decisions: every index bucket carries the counter value
        # of its last change, kept after the bucket empties (a tombstone), so emptying one
        # bucket does not look like a change to every other; a bucket never seen reads as
        # ``_empty_gen``, which is bumped when tombstones are dropped (at ``TOMBSTONES``, so
        # churn of one-off keys cannot grow the table); ``epoch`` changes on every replace
        self._gen = 0
        self._bucket_gen: dict[tuple[str, str], int] = {}
        self._empty_gen = 0
        self._tombstones = 0
        self.epoch = 0
        self.ghost = False  # stopped because its CRD went away while objects were cached (kube.kinds)

    # -- reads ------------------------------------------------------------------------------

    @property
    def kind_key(self) -> str:
        return self.resource.key

    @property
    def transform(self) -> Callable[[Obj], Obj] | None:
        """What each cached object is cut down to (the kind's slim shape, or a caller's projection)."""
        return self._transform

    @property
    def backoff_max(self) -> float:
        return self._backoff[1]

    def shorten_backoff(self, backoff_max: float) -> None:
        """Retry a lost watch within ``backoff_max`` seconds at most (the shortest any user asked for)."""
        self._backoff = (min(self._backoff[0], backoff_max), min(self._backoff[1], backoff_max))

    @property
    def started(self) -> bool:
        return self._thread is not None

    def __len__(self) -> int:
        return len(self._items)

    def get(self, namespace: str | None, name: str) -> Obj | None:
        key = f"{namespace}/{name}" if (namespace and self.resource.namespaced) else name
        with self._lock:
            return self._items.get(key)

    def list(self, namespace: str | None = None) -> builtins.list[Obj]:
        with self._lock:
            if namespace is None:
                return list(self._items.values())
            return list(self._index[NAMESPACE_INDEX].get(namespace, {}).values())

    def by_index(self, index: str, key: str) -> builtins.list[Obj]:
        with self._lock:
            try:
                return list(self._index[index].get(key, {}).values())
            except KeyError:
                raise KeyError(f"index {index!r} is not declared on the {self.kind_key} cache") from None

    def index_keys(self, index: str) -> builtins.list[str]:
        with self._lock:
            return list(self._index[index])

    def add_indexers(self, indexers: Mapping[str, Indexer]) -> None:
        """Declare more indexes before the cache starts (a cache shared by several users merges
        what each of them declares).  A name declared twice must be the same function."""
        with self._lock:
            if self._thread is not None:
                raise RuntimeError(f"the {self.kind_key} cache has started: declare indexes before start()")
            for name, fn in indexers.items():
                have = self._indexers.get(name)
                if have is not None and have is not fn:
                    raise ValueError(f"index {name!r} on the {self.kind_key} cache is declared twice, "
                                     "with different functions")
                self._indexers[name] = fn
                self._index.setdefault(name, {})

    @property
    def fresh(self) -> bool:
        """True while the cache is known to be caught up with the API server (see module doc)."""
        return self._fresh

    def stale_for(self, now: float | None = None) -> float:
        """Seconds since the cache stopped being fresh (0.0 while fresh)."""
        if self._fresh:
            return 0.0
        return max(0.0, (time.monotonic() if now is None else now) - self._stale_since)

    def last_event_age(self, now: float | None = None) -> float | None:
        """Seconds since the last list, event or bookmark (None before the first list)."""
        if self._last_event_at is None:
            return None
        return max(0.0, (time.monotonic() if now is None else now) - self._last_event_at)

    @property
    def renewing(self) -> bool:
        """Stale only while the next watch is opened after one the server ended on its timer:
        resumed from the same resourceVersion, no event is missed, and it takes one request.
        Any other end of a watch, a failure to open the next, or ``stop()`` clears it."""
        return self._renewing and not self._fresh

    def _mark_stale(self, *, renewing: bool = False) -> None:
        self._renewing = renewing
        if self._fresh:
            self._fresh = False
            self._stale_since = time.monotonic()

    def _mark_fresh(self) -> None:
        self._renewing = False
        if not self._fresh:
            self._fresh = True
            log.debug("%s: fresh (stale for %.1fs)", self.kind_key, time.monotonic() - self._stale_since)

    def bucket_version(self, index: str, key: str) -> tuple[int, int]:
        """A value that changes whenever ``by_index(index, key)`` may answer differently."""
        return self.epoch, self._bucket_gen.get((index, key), self._empty_gen)

    def version(self) -> tuple[int, int]:
        """A value that changes whenever anything in the cache changes."""
        return self.epoch, self._gen

    def add_handler(self, handler: Handler) -> None:
        """Call ``handler(type, new, old)`` from the watch thread on every change (keep it fast)."""
        self._handlers.append(handler)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> WatchCache:
        if self.client is None:
            raise RuntimeError(f"the {self.kind_key} cache has no client: load it with replace()")
        with self._life:
            if self._thread is None and not self._stop.is_set():
                thread = threading.Thread(target=self._run, name=f"cache-{self.kind_key}", daemon=True)
                thread.start()
                self._thread = thread
        return self

    def stop(self, timeout: float = 5.0) -> None:
        with self._life:
            self._stop.set()
            thread = self._thread
        self._wake.set()
        self._mark_stale()
        _abort_stream(self._stream)
        if thread is not None:
            thread.join(timeout)

    def restart(self, reason: str) -> None:
        """Stale now, and cut the watch: it is re-listed from scratch (``kube.liveness`` calls this
        when the API server went silent, since a watch on a blackholed connection never ends)."""
        self._mark_stale()
        self.last_error = reason
        _abort_stream(self._stream)

    def retry_now(self) -> None:
        """End a backoff wait at once (the API server answers again)."""
        self._wake.set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self.synced.wait(timeout)

    def run_once_synced(self) -> None:
        """List synchronously (for CLIs that need one consistent read and no watch)."""
        self._relist()

    # -- the loop ---------------------------------------------------------------------------

    def _sleep_backoff(self, attempt: int) -> None:
        initial, cap = self._backoff
        delay = min(cap, initial * (2 ** min(attempt, 16)))
        self._wake.wait(delay * random.uniform(0.5, 1.0))
        self._wake.clear()

    def _run(self) -> None:
        need_list = True
        failures = 0
        while not self._stop.is_set():
            listing = need_list
            in_list = False  # a 410 from the list itself (its continue token), not from the watch
            try:
                if need_list:
                    in_list = True
                    self._relist()
                    in_list = need_list = False
                self._watch()
                # Only a watch that lasted its whole timeout ended by the server's timer and
                # may be resumed; an early clean end is a server shutting down, so the next
                # server must prove with a list that it has everything.
                resumable = time.monotonic() - self._watch_started_at >= 0.9 * self._watch_timeout
                self._mark_stale(renewing=resumable and not self._stop.is_set())
                if not resumable:
                    need_list = True
                failures = 0
            except Gone as exc:
                self._mark_stale()
                if in_list:
                    # the list's own continue token expired: said, or a list that always outlasts
                    # it would start again forever with nobody told why the cache never syncs
                    self.lists_expired += 1
                    took = time.monotonic() - self._list_started
                    self.last_error = f"its list expired after {took:.0f} s, before its last page"
                    log.warning("%s: the list expired after %.0f s, before its last page (%s): listing "
                                "this kind takes longer than the API server keeps a list's continue "
                                "token (etcd's compaction interval, 5 min by default); listing again",
                                self.kind_key, took, exc.message)
                else:
                    log.info("%s: resourceVersion %s expired (%s); re-listing",
                             self.kind_key, self.resource_version, exc.message)
                need_list = True
                self._sleep_backoff(failures)
                failures += 1
            except (Unavailable, ApiError, KubeError) as exc:
                self._mark_stale()
                need_list = True  # whatever happened meanwhile, only a list proves we caught up
                if self._stop.is_set():  # stop() shut the stream down under us: not an incident
                    return
                if isinstance(exc, NotFound) and listing:
                    # the list itself 404s: the API server does not serve the kind (yet)
                    self.last_error = "not served by the API server: is its CRD installed?"
                    log.warning("%s: %s (%s); waiting for it", self.kind_key, self.last_error, exc)
                else:
                    self.last_error = str(exc)
                    log.warning("%s: watch interrupted: %s; retrying", self.kind_key, exc)
                self._sleep_backoff(failures)
                failures += 1
            except Exception:  # a bug must not kill the cache thread silently
                self._mark_stale()
                if self._stop.is_set():
                    return
                log.exception("%s: unexpected error in the watch loop", self.kind_key)
                need_list = True
                self._sleep_backoff(failures)
                failures += 1

    def _relist(self) -> None:
        client = self.client
        assert client is not None
        rv = ""
        started = self._list_started = time.monotonic()

        def items() -> Iterator[Obj]:
            # page by page: each decoded page is kept to its slim copies and dropped before the
            # next one is asked for, so a list never holds every raw object of a kind at once
            nonlocal rv
            for page in client.list_pages(self.resource, self.namespace, label_selector=self._label_selector,
                                          field_selector=self._field_selector, limit=self._page_size,
                                          decode=self._decode_page):
                rv = str((page.get("metadata") or {}).get("resourceVersion") or "")
                raw = page.pop("items", None) or []
                del page
                raw.reverse()
                while raw:  # in list order, each let go as it is handed over
                    yield raw.pop()
                # The collector is off for the whole list, and the HTTP client leaves each
                # response (holding the page's bytes) in a reference cycle that only a
                # collection frees; the freeze() after the list would keep them all for good.
                # The young generation holds just this page's leftovers and copies: cheap.
                gc.collect(0)

        with gc_paused():  # decoding pages allocates every object we are about to keep
            fresh = self._prepare_all(items())
            old, retired = self._swap(fresh, rv)
            self._announce(fresh, old)
        _release_all(old, retired)
        self.list_seconds = time.monotonic() - started
        log.debug("%s: listed %d objects at resourceVersion %s", self.kind_key, len(fresh), rv)

    def replace(self, items: Iterable[Obj], resource_version: str) -> None:
        """Swap in a complete, consistent list (client-go's ``Store.Replace``) and mark synced.

        Handlers hear about every difference from what was held before.  The watch loop
        uses it after each list; benchmarks and offline tools load a cache through it.
        """
        with gc_paused():
            fresh = self._prepare_all(items)
            old, retired = self._swap(fresh, resource_version)
        self._announce(fresh, old)
        _release_all(old, retired)

    def _prepare_all(self, items: Iterable[Obj]) -> dict[str, Obj]:
        """Each raw object's slim copy by key, in list order; a raw object is let go as soon
        as its copy is made (``items`` may be a generator over pages)."""
        fresh: dict[str, Obj] = {}
        for raw in items:
            obj = self._prepare(raw)
            fresh[object_key(obj)] = obj
        return fresh

    def _swap(self, fresh: dict[str, Obj],
              resource_version: str) -> tuple[dict[str, Obj], tuple[dict[Any, Any], ...]]:
        """``fresh`` becomes the cache's content (call with the collector paused); returns
        what it held before, and its old indexes (for ``release``)."""
        with self._lock:
            old = self._items
            retired = (self._index, self._bucket_gen)
            self._items = fresh
            self._index = {n: {} for n in self._indexers}
            self._bucket_gen = {}
            self._tombstones = 0
            self.epoch += 1
            for key, obj in fresh.items():
                self._index_add(key, obj)
            self.resource_version = resource_version
            self.relists += 1
            self._last_event_at = time.monotonic()
        # what we keep lives long: take it out of every later collection
        gc.freeze()
        return old, retired

    def _announce(self, fresh: dict[str, Obj], old: dict[str, Obj]) -> None:
        """Tell the handlers what a swap changed; the cache is synced from now on."""
        if self._handlers:
            for key, obj in fresh.items():
                prev = old.get(key)
                if prev is None:
                    self._notify("ADDED", obj, None)
                elif _rv(prev) != _rv(obj):
                    self._notify("MODIFIED", obj, prev)
            for key, prev in old.items():
                if key not in fresh:
                    self._notify("DELETED", None, prev)
        self.synced.set()
        if self.client is None:
            self._mark_fresh()  # loaded offline (bench, --from DIR): the list is all there is

    def _watch(self) -> None:
        assert self.client is not None
        if self._stop.is_set():  # stopped while listing: no watch to open
            return
        self.watches += 1
        self._watch_started_at = time.monotonic()
        stream = self.client.watch(self.resource, self.namespace, resource_version=self.resource_version,
                                   timeout_seconds=self._watch_timeout,
                                   label_selector=self._label_selector,
                                   field_selector=self._field_selector,
                                   on_open=self._set_stream)
        for event in stream:
            if self._stop.is_set():
                return
            etype = event.get("type")
            obj = event.get("object")
            if not isinstance(obj, dict):
                log.warning("%s: watch event without an object, skipped: %r", self.kind_key, etype)
                continue
            if etype == "ERROR":
                code = obj.get("code")
                if code == 410:
                    raise Gone(410, str(obj.get("reason") or "Expired"), str(obj.get("message") or ""))
                raise Unavailable(f"watch error event: {obj.get('code')} {obj.get('message')}")
            new_rv = _rv(obj)
            self._last_event_at = time.monotonic()
            if etype == "BOOKMARK":
                self.resource_version = new_rv or self.resource_version
                continue
            if etype not in ("ADDED", "MODIFIED", "DELETED"):
                log.warning("%s: unknown watch event type %r, skipped", self.kind_key, etype)
                continue
            self._apply(etype, self._prepare(obj))
            if new_rv:
                self.resource_version = new_rv

    def _set_stream(self, resp: httpx.Response) -> None:
        self._stream = resp
        if self._stop.is_set():  # stop() came while the watch was being opened: it ends now
            _abort_stream(resp)
            return
        # Established: events since our resourceVersion follow in order on this stream.
        if resp.status_code < 300:
            self._mark_fresh()

    def _prepare(self, obj: Obj) -> Obj:
        obj = slim(obj)
        if self._transform is not None:
            obj = self._transform(obj)
        obj.setdefault("kind", self.resource.kind)
        obj.setdefault("apiVersion", self.resource.api_version)
        return obj

    def _apply(self, etype: str, obj: Obj) -> None:
        key = object_key(obj)
        with self._lock:
            prev = self._items.get(key)
            if prev is not None:
                self._index_remove(key, prev)
            if etype == "DELETED":
                self._items.pop(key, None)
            else:
                self._items[key] = obj
                self._index_add(key, obj)
        if etype == "DELETED":
            self._notify("DELETED", None, prev or obj)
        else:
            self._notify("ADDED" if prev is None else "MODIFIED", obj, prev)

    def _index_add(self, key: str, obj: Obj) -> None:
        self._gen += 1
        gen = self._gen
        for name, fn in self._indexers.items():
            table = self._index[name]
            for value in _safe_keys(fn, obj):
                table.setdefault(value, {})[key] = obj
                self._bucket_gen[(name, value)] = gen

    def _index_remove(self, key: str, obj: Obj) -> None:
        self._gen += 1
        gen = self._gen
        for name, fn in self._indexers.items():
            table = self._index[name]
            for value in _safe_keys(fn, obj):
                bucket = table.get(value)
                if bucket is not None:
                    bucket.pop(key, None)
                    self._bucket_gen[(name, value)] = gen
                    if not bucket:
                        del table[value]
                        self._tombstones += 1
        if self._tombstones > TOMBSTONES:
            self._drop_tombstones(gen)

    def _drop_tombstones(self, gen: int) -> None:
        self._empty_gen = gen  # first: every bucket that now reads as never seen reads as changed
        self._bucket_gen = {(name, value): g for (name, value), g in self._bucket_gen.items()
                            if value in self._index[name]}
        self._tombstones = 0

    def _notify(self, etype: str, new: Obj | None, old: Obj | None) -> None:
        for handler in self._handlers:
            try:
                handler(etype, new, old)
            except Exception:
                log.exception("%s: event handler failed", self.kind_key)


def _release_all(old: dict[str, Obj], retired: tuple[dict[Any, Any], ...]) -> None:
    index, bucket_gen = retired
    release(old)
    release(index, depth=3)  # index name -> key -> bucket of objects
    release(bucket_gen)


RELEASE_BATCH = 1024
"""Entries ``release`` lets go of between two chances for other threads to run."""


def release(table: dict[Any, Any], depth: int = 1) -> None:
    """Let go of what a swap replaced a batch of entries at a time, yielding the GIL between
    batches.  Dropping a dict of 100k cached objects at once is one call into C that frees them
    all while holding the GIL (~50 ms at 60k PVs, measured as the webhook's longest /healthz while
    it re-listed).  ``depth`` > 1: the values are tables too (an index: name -> key -> bucket),
    let go of the same way."""
    stack = [(table, depth)]
    done = 0
    while stack:
        current, level = stack[-1]
        if not current:
            stack.pop()
            continue
        _, value = current.popitem()
        if level > 1 and type(value) is dict:
            stack.append((value, level - 1))
        del value
        done += 1
        if done % RELEASE_BATCH == 0:
            time.sleep(0)  # a thread waiting for the GIL (the event loop) runs now


def _abort_stream(resp: Any) -> None:
    """Unblock a watch read from another thread: shut the socket down under it."""
    if resp is None:
        return
    try:
        sock = resp.extensions["network_stream"].get_extra_info("socket")
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:  # the stream may already be closed; it is ending either way
        log.debug("closing a watch stream raised", exc_info=True)


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _safe_keys(fn: Indexer, obj: Obj) -> tuple[str, ...]:
    try:
        return tuple(fn(obj))
    except Exception:  # an indexer must never break the cache; the object is just unindexed
        log.exception("indexer failed on %s", object_key(obj))
        return ()


class CacheFactory(Protocol):
    """Where a component gets its caches: ``manager.cache`` in a process (one cache per kind, shared
    by every component, see ``runtime.manager``), :class:`StandaloneCaches` for a component used on
    its own.  ``transform`` defaults to the kind's one slim shape (``kube.slim.TRANSFORMS``).
    ``waited=False``: a convenience the process follows but never waits for (not in its readiness,
    not among the caches its controllers wait on before acting)."""

    def __call__(self, resource: Resource, *, namespace: str | None = None,
                 indexers: Mapping[str, Indexer] | None = None, transform: Callable[[Obj], Obj] | None = None,
                 field_selector: str | None = None, label_selector: str | None = None,
                 waited: bool = True) -> WatchCache: ...


class StandaloneCaches:
    """A cache factory for a component used on its own (tests, CLIs): a new cache per call, which
    its caller starts and stops.  Under a Manager components get ``manager.cache`` instead."""

    def __init__(self, client: KubeClient | None) -> None:
        self.client = client

    def __call__(self, resource: Resource, *, namespace: str | None = None,
                 indexers: Mapping[str, Indexer] | None = None, transform: Callable[[Obj], Obj] | None = None,
                 field_selector: str | None = None, label_selector: str | None = None,
                 waited: bool = True) -> WatchCache:
        return WatchCache(self.client, resource, namespace=namespace, indexers=indexers, transform=transform,
                          field_selector=field_selector, label_selector=label_selector)


def wait_all_synced(caches: Iterable[WatchCache], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    return all(c.wait_synced(max(0.0, deadline - time.monotonic())) for c in list(caches))
