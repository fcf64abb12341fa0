"""Gathering a provider's dependents from the watch caches into one frozen input.

The gatherer reads; the decision (``policy.deletion.dependents.decide_provider_delete``) does
not.  What was read is part of what is gathered: every bucket the walk over the rules read,
with the version it had *before* it was read (a change in between invalidates, never hides),
split into the reads that chose where to look (hops) and the final lookups whose objects
are the dependents (leaves).  The memo (``memo``) keeps a decision until one of those
versions moves, and applies changes to leaf buckets object by object (``LiveDependents``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from kustodian.kube.cache import WatchCache
from kustodian.kube.view import CacheView, caches_of
from kustodian.policy.deletion import BucketRead, DependentsOfProvider, LiveDependents, RuleSet
from kustodian.policy.objects import RawObject

__all__ = ["GatheredDependents", "KindVersion", "gather_dependents"]

#: per kind read: its cache (None: none) and the cache's ``version()`` before the first read
KindVersion = tuple[str, WatchCache | None, Hashable]


class _ReadsNoted:
    """The gatherer's view: reads from the caches, noting the version of every bucket read."""

    def __init__(self, view: CacheView) -> None:
        self._view = view
        self.reads: list[BucketRead] = []

    def has_kind(self, kind: str) -> bool:
        self.reads.append((kind, "", None, self._view.read_version(kind, "")))
        return self._view.has_kind(kind)

    def get(self, kind: str, namespace: str, name: str) -> RawObject | None:
        self.reads.append((kind, None, None, self._view.read_version(kind)))
        return self._view.get(kind, namespace, name)

    def list(self, kind: str, namespace: str | None = None) -> Sequence[RawObject]:
        self.reads.append((kind, None, None, self._view.read_version(kind)))
        return self._view.list(kind, namespace)

    def by_index(self, kind: str, index: str, key: str) -> Sequence[RawObject]:
        # the version is read before the data: a change in between invalidates, never hides
        self.reads.append((kind, index, key, self._view.read_version(kind, index, key)))
        return self._view.by_index(kind, index, key)


@dataclass(frozen=True)
class GatheredDependents:
    """One gather: the frozen input of the decision (with its reads), the same dependents as a
    structure that watch events can update (``live``), and what tells a later reader whether
    the caches moved since: the epoch of each dependent kind's cache (a re-list starts a new
    one) and each kind's cache version before the first read (None: the view has no caches)."""

    dependents: DependentsOfProvider
    live: LiveDependents
    epochs: Mapping[str, tuple[int, int]]
    kinds: tuple[KindVersion, ...] | None


def gather_dependents(kind_key: str, provider: RawObject, view: CacheView, rules: RuleSet,
                      deleting_namespace: str | None) -> GatheredDependents:
    """What blocks the DELETE of ``provider``, read from ``view``'s caches, with the reads made.

    The epochs and versions are taken before any read: an event or a re-list during the
    gather leaves the result out of date by version, never silently current."""
    caches = caches_of(view)  # a view over plain lists (tests, offline tools) has none
    epochs = {rule.dependent: (id(cache), cache.epoch) for rule in rules.for_provider(kind_key)
              if (cache := caches.get(rule.dependent)) is not None}
    before = {kind: (cache, cache.version()) for kind, cache in list(caches.items())}
    hops, leaves = _ReadsNoted(view), _ReadsNoted(view)
    live = LiveDependents(kind_key, provider, hops, rules, deleting_namespace=deleting_namespace,
                          leaf_view=leaves)
    dependents = live.gathered(tuple(hops.reads), tuple(leaves.reads))
    read = sorted({k for k, _, _, _ in dependents.reads()})
    kinds = tuple((k, *before.get(k, (None, None))) for k in read) if caches else None
    return GatheredDependents(dependents, live, epochs, kinds)
