"""The dependents of one provider, kept up to date object by object.

``LiveDependents`` answers what ``decide_delete`` answers (it *is* how ``decide_delete``
answers), and can then be told about single changes: ``apply(kind, old, new)`` costs
O(log n) and the next ``decision()`` renders the capped message from the first few names
of sorted lists, so a pool with 50,000 PersistentVolumes is not walked again when one of
them comes or goes.

Why one object can be judged alone: every matcher but one ends in a plain index lookup
(``indexing.Leaf``: the objects of a kind filed under given keys), and the keys come from
hops (StorageClasses, CephClusters, skip rules) that are read once, at construction.  An
object is therefore a dependent exactly when the indexer of some leaf files it under one of
that leaf's keys.  What this does *not* cover is the caller's to notice: a change to any
hop (or to the provider itself) needs a new ``LiveDependents``; so does a rule whose
matcher is not a plain lookup (``exact`` is then False and ``apply`` must not be used).
A gatherer that must tell the two apart (the webhook's, to know which changes it may apply)
passes a ``hop_view`` and a ``leaf_view`` and puts what each read into the frozen
``DependentsOfProvider`` (``gathered``); the decision itself is ``decide_provider_delete``
over that input, and reads nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from datetime import datetime

from sortedcontainers import SortedKeyList

from kustodian.policy.deletion.dependents import BucketRead, DependentsOfProvider, decide_provider_delete
from kustodian.policy.deletion.indexing import IndexSpec, Provider, lookup_leaves
from kustodian.policy.deletion.matchers import find_dependents, find_leaves, rule_skipped
from kustodian.policy.deletion.rules import RuleSet
from kustodian.policy.deletion.schema import Rule
from kustodian.policy.deletion.verdict import DeleteDecision, ObjectRef, read_override
from kustodian.policy.objects import RawObject
from kustodian.policy.store import ClusterView

__all__ = ["LiveDependents"]


def _keys_of(spec: IndexSpec, obj: RawObject) -> tuple[str, ...]:
    # as the watch cache files it: an indexer that fails leaves the object unindexed
    try:
        return tuple(spec.fn(obj))
    except Exception:
        return ()


class LiveDependents:
    """What blocks the DELETE of one provider object, kept current by ``apply``.

    ``hop_view`` answers every read that decides *where* to look; ``leaf_view`` the final
    lookups (the same view unless the caller wants to tell them apart).
    """

    def __init__(self, kind_key: str, provider: RawObject, hop_view: ClusterView, rules: RuleSet,
                 *, deleting_namespace: str | None = None, leaf_view: ClusterView | None = None) -> None:
        subject = Provider.of(kind_key, provider)
        self.provider = provider
        self.home = subject.namespace
        self.me = ObjectRef(kind_key, subject.namespace, subject.name)
        self.outside = deleting_namespace
        self.rules: tuple[Rule, ...] = tuple(rules.for_provider(kind_key))
        self.exact = True
        # per dependent kind, in rule order: (rule index, leaf index spec, keys)
        self.leaves: dict[str, list[tuple[int, IndexSpec, frozenset[str]]]] = {}
        self._first: dict[ObjectRef, int] = {}  # dependent -> index of the first rule finding it
        self._per_rule = [0] * len(self.rules)  # dependents each rule found first
        found: dict[str, list[ObjectRef]] = {}
        for i, rule in enumerate(self.rules):
            if not hop_view.has_kind(rule.dependent) or rule_skipped(rule, subject, hop_view):
                continue
            leaves = find_leaves(rule, subject, hop_view)
            if leaves is None:
                self.exact = False
                objs = find_dependents(rule, subject, hop_view)
            else:
                for spec, keys in leaves:
                    self.leaves.setdefault(spec.kind, []).append((i, spec, frozenset(keys)))
                objs = lookup_leaves(leaf_view or hop_view, leaves)
            first = self._first
            kind = rule.dependent
            for obj in objs:
                ref = ObjectRef.of(kind, obj)
                if ref in first or self._excluded(ref):
                    continue
                first[ref] = i
                self._per_rule[i] += 1
                found.setdefault(kind, []).append(ref)
        home = self.home
        # one list per dependent kind, by label: labels are unique within a kind (a name has no "/")
        self._sorted: dict[str, SortedKeyList] = {
            kind: SortedKeyList(refs, key=lambda r: r.label(home)) for kind, refs in found.items()
        }

    def _excluded(self, ref: ObjectRef) -> bool:
        """The provider itself, and what goes with a terminating namespace, never block."""
        return ref == self.me or (self.outside is not None and ref.namespace == self.outside)

    # -- changes ----------------------------------------------------------------------------

    def apply(self, kind: str, old: RawObject | None, new: RawObject | None) -> bool:
        """One object of ``kind`` changed (``new`` None: deleted); True when the answer changed.

        Only for ``exact`` instances whose hops did not change (see the module doc)."""
        leaves = self.leaves.get(kind)
        current = new if new is not None else old
        if not leaves or current is None:
            return False
        ref = ObjectRef.of(kind, current)
        if self._excluded(ref):
            return False
        first: int | None = None
        if new is not None:
            for i, spec, keys in leaves:
                if not keys.isdisjoint(_keys_of(spec, new)):
                    first = i
                    break
        before = self._first.get(ref)
        if before == first:
            return False
        refs = self._sorted.get(kind)
        if before is not None:
            self._per_rule[before] -= 1
            del self._first[ref]
            if refs is not None:
                refs.remove(ref)
        if first is not None:
            self._per_rule[first] += 1
            self._first[ref] = first
            if refs is None:
                home = self.home
                refs = self._sorted[kind] = SortedKeyList(key=lambda r: r.label(home))
            refs.add(ref)
        return True

    # -- the answer -------------------------------------------------------------------------

    def _notes(self) -> dict[str, str]:
        # the note of the first rule (in order) that found a dependent of the kind first
        notes: dict[str, str] = {}
        for rule, n in zip(self.rules, self._per_rule, strict=True):
            if n and rule.note:
                notes.setdefault(rule.dependent, rule.note)
        return notes

    def gathered(self, hop_reads: tuple[BucketRead, ...] = (),
                 leaf_reads: tuple[BucketRead, ...] = ()) -> DependentsOfProvider:
        """The dependents now, frozen (one copy of each sorted list, in C), with the reads the
        gatherer made to find them."""
        return DependentsOfProvider(self.me, read_override(self.me.kind, self.provider),
                                    {kind: tuple(refs) for kind, refs in self._sorted.items() if refs},
                                    self._notes(), hop_reads, leaf_reads)

    def decision(self, now: datetime | None = None, *, question: bool = False) -> DeleteDecision:
        """The decision at ``now`` (``decide_provider_delete`` over ``gathered()``)."""
        if not self._first:
            return DeleteDecision(allowed=True)
        return decide_provider_delete(self.gathered(), now, question=question)

    def __len__(self) -> int:
        return len(self._first)

    def refs(self) -> list[ObjectRef]:
        """The dependents, unordered."""
        return list(self._first)

    def leaf_buckets(self) -> Iterable[tuple[str, str, str]]:
        """``(kind, index, key)`` of every bucket a leaf reads."""
        return itertools.chain.from_iterable(
            ((kind, spec.name, key) for _, spec, keys in leaves for key in keys)
            for kind, leaves in self.leaves.items())
