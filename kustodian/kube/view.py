"""``policy.store.ClusterView`` backed by watch caches: what the webhook hands to policy.

Besides the reads policy needs, it answers two questions for the admission path:
``state(kind)`` (is what we know about this kind current? see ``kube.kinds``) and
``read_version(...)`` (a value that changes whenever a read could answer
differently), which lets a caller memoise a decision and reuse it until one of the
buckets it read changes.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from kustodian.kube.cache import WatchCache
from kustodian.kube.kinds import FollowedKinds, KindState
from kustodian.policy.objects import RawObject


@runtime_checkable
class WatchedView(Protocol):
    """A view whose reads are served by watch caches (:class:`CacheView`), which a reader may hear
    change (the deletion guard's memo); a view over plain lists (``ListView``) has none."""

    @property
    def caches(self) -> Mapping[str, WatchCache]: ...


def caches_of(view: object) -> Mapping[str, WatchCache]:
    """The watch caches behind ``view`` (held by reference: they follow CRDs), ``{}`` for a plain view."""
    return view.caches if isinstance(view, WatchedView) else {}


class CacheView:
    """Serves policy reads from caches; a kind without a cache is reported absent.

    ``caches`` is held by reference: with ``kinds`` (CRD following) caches appear and
    disappear as CRDs do, and every reader sees the current set.
    """

    def __init__(self, caches: Mapping[str, WatchCache], kinds: FollowedKinds | None = None) -> None:
        self._caches = caches if isinstance(caches, dict) else dict(caches)
        self.kinds = kinds

    @property
    def caches(self) -> Mapping[str, WatchCache]:
        return self._caches

    def has_kind(self, kind: str) -> bool:
        cache = self._caches.get(kind)
        return cache is not None and cache.synced.is_set()

    def get(self, kind: str, namespace: str, name: str) -> RawObject | None:
        cache = self._caches.get(kind)
        return cache.get(namespace or None, name) if cache is not None else None

    def list(self, kind: str, namespace: str | None = None) -> Sequence[RawObject]:
        cache = self._caches.get(kind)
        return cache.list(namespace) if cache is not None else []

    def by_index(self, kind: str, index: str, key: str) -> Sequence[RawObject]:
        cache = self._caches.get(kind)
        return cache.by_index(index, key) if cache is not None else []

    def synced(self) -> bool:
        return all(c.synced.is_set() for c in list(self._caches.values()))

    def state(self, kind: str) -> KindState:
        if self.kinds is not None:
            return self.kinds.state(kind)
        cache = self._caches.get(kind)
        if cache is None:
            return KindState(kind, False)
        if cache.fresh:
            return KindState(kind, True)
        return KindState(kind, True, cache.stale_for(), kind, cache.renewing)

    def read_version(self, kind: str, index: str | None = None, key: str | None = None) -> Hashable:
        """Changes whenever ``by_index(kind, index, key)`` (or, without ``index``, any read of
        ``kind``; with ``index=""``, ``has_kind(kind)``) may answer differently, including the
        cache being replaced."""
        cache = self._caches.get(kind)
        if cache is None:
            return None
        if index == "":
            return id(cache), cache.synced.is_set()
        if index is None:
            return id(cache), cache.synced.is_set(), cache.version()
        return id(cache), cache.bucket_version(index, key or "")
