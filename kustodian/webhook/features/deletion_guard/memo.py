"""The deletion guard's decision memo: ``cached(key)`` on the event loop, ``compute(key, provider)``
in a worker thread, kept current by watch events.

Decisions are memoised per provider (uid, resourceVersion, terminating namespace) together
with the version of every bucket their gather read (``gather``); a DELETE whose buckets did
not change reuses the decision and its rendered, capped message, so repeated reviews
(kubectl retries, several webhook configurations, the API server's own retries) cost a
handful of dict reads whatever the number of dependents.

Each memo keeps its provider's dependents live (``policy.deletion.live``): a watch event on
a leaf bucket (a PV of this pool added or removed) is applied to the memo from the cache's
handler, in O(log n), and the decision is made again from the first names of sorted lists:
no DELETE, and no thread, walks the 50,000 PVs of a pool again.  A change to a hop, to the
provider, or a cache re-list (new epoch) leaves the memo invalid, and the decision is
computed whole: by the warmer (``warmer``) ahead of the request, or by the request in a
worker thread.  A burst of reviews for one object computes once (single flight).

Checking a memo is one comparison per cache it read (the cache's version, taken before the
first read, or moved on by a live update only when every bucket of that kind it read is
current) and, only when a cache changed, one per bucket: ~2 µs instead of ~11 µs for a
pool whose decision read 26 buckets of 9 kinds.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import NamedTuple

from kustodian.kube.cache import WatchCache
from kustodian.kube.view import CacheView, caches_of
from kustodian.policy.deletion import (
    BucketRead,
    DeleteDecision,
    LiveDependents,
    RuleSet,
    decide_provider_delete,
)
from kustodian.policy.gc_pause import gc_paused
from kustodian.policy.objects import RawObject
from kustodian.webhook.features.deletion_guard.gather import KindVersion, gather_dependents

__all__ = ["FREEZE_AT", "MEMO_SIZE", "DecisionMemo", "MemoEntry", "MemoKey", "memo_key"]

log = logging.getLogger(__name__)

MEMO_SIZE = 4096  # at least; and room for two versions of every cached provider (``limit``)
FREEZE_AT = 1_000  # dependents from which a computed decision is taken out of the cyclic GC

class MemoKey(NamedTuple):
    """The question a DELETE of one provider version asks (a tuple: hashed in C on every review)."""

    kind_key: str
    namespace: str
    name: str
    uid: str
    resource_version: str  # "": never memoised (no version to tell a later object from this one)
    deleting_namespace: str  # the provider's namespace when it is terminating, else ""


def memo_key(kind_key: str, provider: RawObject, deleting_namespace: str | None) -> MemoKey:
    """The question a DELETE of ``provider`` asks; without a resourceVersion it is never memoised."""
    meta = provider.get("metadata") or {}
    return MemoKey(kind_key, str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                   str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""),
                   deleting_namespace or "")


@dataclass(frozen=True)
class MemoEntry:
    reads: tuple[BucketRead, ...]  # the hops: a change here needs a whole new decision
    decision: DeleteDecision
    leaf_reads: tuple[BucketRead, ...] = ()  # the leaves: changes here are applied to ``live``
    live: LiveDependents | None = None  # None: not kept live (a matcher that is no plain lookup)
    epochs: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # leaf kind -> (cache id, epoch)
    # per kind read: its cache (None: none) and the cache's version() when nothing the memo read
    # had changed since; all still equal means no bucket changed (one check per kind, not per bucket)
    kinds: tuple[KindVersion, ...] | None = None

    def all_reads(self) -> Iterable[BucketRead]:
        yield from self.reads
        yield from self.leaf_reads


class DecisionMemo:
    """Deletion decisions by ``MemoKey``, each valid while the buckets its gather read are."""

    def __init__(self, rules: RuleSet, view: CacheView,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.rules = rules
        self.view = view
        # the watch caches behind the view, held by reference (they follow CRDs); none for a view
        # over plain lists, whose decisions are then never kept live
        self._caches: Mapping[str, WatchCache] = caches_of(view)
        self.now = now  # an override may carry a deadline: its decision is void after it
        self.entries: dict[MemoKey, MemoEntry] = {}
        self._provider_kinds = rules.provider_kinds()
        self.hits = 0  # answers read ready by a request
        self.computed = 0  # decisions gathered and decided whole
        self.applied = 0  # watch events applied to live entries
        # live entries: which keys read each leaf bucket, and the leaf indexers per kind; all
        # changes to entries and these maps happen under ``_live_lock`` (never on the event loop)
        self._live_lock = threading.Lock()
        self._subscribers: dict[tuple[str, str, str], set[MemoKey]] = {}
        self._leaf_indexers: dict[str, dict[str, Callable[[RawObject], Iterable[str]]]] = {}
        self._hooked: weakref.WeakSet[WatchCache] = weakref.WeakSet()  # caches whose changes we hear
        self._flights: dict[MemoKey, threading.Lock] = {}
        self._flights_lock = threading.Lock()

    # -- reading ----------------------------------------------------------------------------

    def cached(self, key: MemoKey, *, count: bool = True) -> DeleteDecision | None:
        """The memoised decision for ``key`` if it is still current, else None (a few dict reads:
        safe on the event loop).  ``count``: a request's hit (the warmer's are not counted)."""
        entry = self.entries.get(key)
        if entry is not None and (self._unchanged(entry) or self._current(entry.all_reads())):
            until = entry.decision.valid_until
            if until is not None and self.now() >= until:
                return None  # an override that has expired: decided again, at the new time
            if count:
                self.hits += 1
            return entry.decision
        return None

    def _current(self, reads: Iterable[BucketRead]) -> bool:
        return all(self.view.read_version(k, i, v) == seen for k, i, v, seen in reads)

    def _unchanged(self, entry: MemoEntry) -> bool:
        """No cache the entry read has changed at all since (the fast path of ``cached``)."""
        if entry.kinds is None:
            return False
        caches = self._caches
        return all(caches.get(kind) is cache and (cache is None or cache.version() == seen)
                   for kind, cache, seen in entry.kinds)

    # -- computing --------------------------------------------------------------------------

    def compute(self, key: MemoKey, provider: RawObject, *, count: bool = True) -> DeleteDecision:
        """Gather and decide ``key`` (about ``provider``) unless a current entry appeared meanwhile;
        memoised when the provider has a resourceVersion.  Off the event loop: this walks every
        dependent.  Single flight: reviews of one object that arrive together compute once."""
        if not key.resource_version:
            return self._decide(key, provider)
        with self._flights_lock:
            flight = self._flights.setdefault(key, threading.Lock())
        with flight:
            found = self.cached(key, count=count)
            if found is not None:
                return found
            try:
                return self._decide(key, provider)
            finally:
                with self._flights_lock:
                    self._flights.pop(key, None)

    def _decide(self, key: MemoKey, provider: RawObject) -> DeleteDecision:
        kind_key, deleting_namespace = key.kind_key, key.deleting_namespace or None
        self.computed += 1
        if not self.rules.for_provider(kind_key):
            return DeleteDecision(allowed=True)
        caches = self._hook_caches()  # hear changes before anything is read
        # The collector is off while a decision is gathered: what it builds is acyclic (lists and
        # tuples of cached objects), and with it on, each full collection walked the half-built
        # dependents of a 50,000-PV pool holding the GIL (25-86 ms each, several a decision, as
        # the warmer decided every pool again after a re-list at 500k PVs).
        with gc_paused():
            gathered = gather_dependents(kind_key, provider, self.view, self.rules, deleting_namespace)
            decision = decide_provider_delete(gathered.dependents, self.now())
            if len(gathered.dependents) >= FREEZE_AT:
                # what a kept decision holds lives as long as its memo: out of every later
                # collection (as the caches do after a list), or each full collection walks 50,000
                # refs (~7 ms)
                gc.freeze()
        if key.resource_version:
            kept_live = gathered.live.exact and bool(caches)  # a view without watch caches hears no events
            found, live = gathered.dependents, gathered.live if kept_live else None
            self.install(key, MemoEntry(found.hop_reads, decision, found.leaf_reads, live, gathered.epochs,
                                        gathered.kinds))
        return decision

    def install(self, key: MemoKey, entry: MemoEntry) -> None:
        with self._live_lock:
            if entry.live is not None and not self._current(entry.leaf_reads):
                # a leaf changed while we computed, and its event may have gone by before this
                # entry could hear it: keep the answer for its versions, but never update it
                entry = replace(entry, live=None)
            if len(self.entries) >= self.limit() and key not in self.entries:
                with contextlib.suppress(StopIteration, KeyError, RuntimeError):
                    oldest = next(iter(self.entries))
                    self._unsubscribe(oldest, self.entries.pop(oldest))
            before = self.entries.get(key)
            if before is not None:
                self._unsubscribe(key, before)
            self.entries[key] = entry
            if entry.live is not None:
                for bucket in entry.live.leaf_buckets():
                    self._subscribers.setdefault(bucket, set()).add(key)
                for kind, specs in entry.live.leaves.items():
                    named = self._leaf_indexers.setdefault(kind, {})
                    named.update((spec.name, spec.fn) for _, spec, _ in specs)

    def limit(self) -> int:
        """How many entries are kept: ``MEMO_SIZE``, or two per cached provider when more (a
        provider's new version is decided while its old entry is still here).  A fixed bound
        below the providers' count made every pass over them (the warmer's, the per-provider
        metric's, the deletion backstop's) evict what the next one needed: at 10,000 pools each
        pass computed every decision whole again."""
        caches = caches_of(self.view)  # a test's ListView has none
        providers = sum(len(c) for k, c in list(caches.items()) if k in self._provider_kinds)
        return max(MEMO_SIZE, 2 * providers)

    def _unsubscribe(self, key: MemoKey, entry: MemoEntry) -> None:
        if entry.live is None:
            return
        for bucket in entry.live.leaf_buckets():
            keys = self._subscribers.get(bucket)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._subscribers[bucket]

    # -- live updates -----------------------------------------------------------------------

    def _hook_caches(self) -> Mapping[str, WatchCache]:
        """Hear every change of every cache (caches come and go with their CRDs); the caches."""
        caches = self._caches
        for kind, cache in list(caches.items()):
            if cache not in self._hooked:
                self._hooked.add(cache)
                cache.add_handler(functools.partial(self._on_change, kind, cache))
        return caches

    def _on_change(self, kind: str, cache: WatchCache, _type: str, new: RawObject | None,
                   old: RawObject | None) -> None:
        """A watch event (on the cache's thread, after its indexes were updated): apply it to every
        live entry with a leaf bucket the object left or entered, and mark those buckets as seen
        at their new version.  Hop buckets keep the version the entry saw, so a change there
        still invalidates it."""
        indexers = self._leaf_indexers.get(kind)
        if not indexers or self._caches.get(kind) is not cache:
            return
        with self._live_lock:
            touched: set[tuple[str, str]] = set()
            for index, fn in indexers.items():
                for obj in (old, new):
                    if obj is not None:
                        with contextlib.suppress(Exception):  # as the cache: a failing indexer files nothing
                            touched.update((index, k) for k in fn(obj))
            affected: set[MemoKey] = set()
            for index, k in touched:
                affected |= self._subscribers.get((kind, index, k), set())
            for key in affected:
                entry = self.entries.get(key)
                if entry is None or entry.live is None or entry.epochs.get(kind) != (id(cache), cache.epoch):
                    continue  # re-listed or re-created: the entry is stale by version, computed whole
                try:
                    self.entries[key] = self._applied(entry, kind, touched, new, old)
                except Exception:  # never keep a half-applied entry
                    log.exception("applying a %s change to the decision for %s %s/%s failed", kind,
                                  key.kind_key, key.namespace, key.name)
                    self._unsubscribe(key, self.entries.pop(key))

    def _applied(self, entry: MemoEntry, kind: str, touched: set[tuple[str, str]],
                 new: RawObject | None, old: RawObject | None) -> MemoEntry:
        assert entry.live is not None
        changed = entry.live.apply(kind, old, new)
        leaf_reads = tuple(
            (k, i, b, self.view.read_version(k, i, b)) if k == kind and (i, b) in touched else read
            for read in entry.leaf_reads for k, i, b, _ in (read,))
        self.applied += 1
        decision = entry.live.decision(self.now()) if changed else entry.decision
        kinds = entry.kinds
        if kinds is not None:  # the kind's version moves on only if every bucket of it read is current
            cache = self._caches.get(kind)
            current = self._current(r for r in (*entry.reads, *leaf_reads) if r[0] == kind)
            kinds = tuple((k, c, cache.version() if k == kind and current and c is cache and cache else v)
                          for k, c, v in kinds)
        return replace(entry, decision=decision, leaf_reads=leaf_reads, kinds=kinds)
