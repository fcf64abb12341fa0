"""``policy.store.ClusterView`` backed by watch caches: what the webhook hands to policy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kustodian.kube.cache import WatchCache
from kustodian.policy.objects import RawObject


class CacheView:
    """Serves policy reads from caches; a kind without a cache is reported absent."""

    def __init__(self, caches: Mapping[str, WatchCache]) -> None:
        self._caches = dict(caches)

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
        return all(c.synced.is_set() for c in self._caches.values())
