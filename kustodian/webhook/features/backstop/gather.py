"""What the deletion backstop's record should hold now, gathered from the deletion guard.

Exactly the guard's knowledge: for every provider of a kind whose caches are fresh (the kind
and every kind its decision reads, ``DeletionGuard.stale_kinds``), the guard's own decision
(``decision_now``: its memo, kept current per watch event, so a pass over unchanged providers
costs a few dict reads each) gives the dependents; ``policy.deletion.backstop`` turns them into
entries.  A kind that is not fresh contributes nothing, and says so (``RecordKnowledge.fresh``), so
the writer keeps what the record already holds for it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import NamedTuple, Protocol

from kustodian.kube.liveness import ApiLiveness
from kustodian.kube.view import CacheView
from kustodian.policy.deletion import (
    NAMESPACES_SCOPE,
    DeleteDecision,
    ProviderFacts,
    RuleSet,
    protected_entries,
    read_override,
    record_key,
)
from kustodian.policy.objects import RawObject, name, namespace

__all__ = ["BackstopGuard", "RecordGatherer", "RecordKnowledge"]

Scope = tuple[str, str]  # (group, resource)


class BackstopGuard(Protocol):
    """What the backstop reads of the deletion guard (``DeletionGuard`` is one)."""

    rules: RuleSet
    view: CacheView
    liveness: ApiLiveness | None

    def stale_kinds(self, kinds: Iterable[str]) -> list[tuple[str, float]]: ...

    def decision_now(self, kind_key: str, provider: RawObject) -> DeleteDecision: ...


@dataclass(frozen=True)
class RecordKnowledge:
    """The entries fresh knowledge calls for, and which scopes that knowledge covers.

    ``complete``: every provider kind and every kind their decisions read was fresh, so the
    record may be confirmed (and its Namespace entries replaced).
    """

    entries: dict[str, str]
    fresh_scopes: frozenset[Scope]
    stale_scopes: frozenset[Scope]
    stale_groups: frozenset[str]
    complete: bool
    providers: int = 0

    def fresh(self, scope: Scope) -> bool:
        """May an entry of ``scope`` that fresh knowledge did not produce be dropped?  Yes for a
        kind read fresh, and for a resource no cache serves (not served, or no longer guarded)
        unless a kind of its group is stale (its CRD may be served again); never for a stale kind,
        nor for Namespaces unless the pass was complete."""
        if scope in self.fresh_scopes:
            return True
        if scope == NAMESPACES_SCOPE or scope in self.stale_scopes:
            return False
        return scope[0] not in self.stale_groups


class Kept(NamedTuple):
    versions: Hashable
    found: list[tuple[RawObject, ProviderFacts]]
    outside: dict[int, tuple[DeleteDecision, int]]


class RecordGatherer:
    """Gathers ``RecordKnowledge`` from the guard.  Between passes it keeps, per provider kind, the
    facts it found and the version of every cache they were read from (the kind, what its decisions
    read, the Namespaces): a kind none of whose caches changed is not asked again (only whether an
    override applies, which time alone can change), so a pass after a PersistentVolume event
    asks only about the kinds that read PersistentVolumes.  And it keeps how many of each
    decision's dependents are outside its provider's namespace (a decision is reused until it
    changes, so a pool with 50,000 PersistentVolumes is not walked again on every pass)."""

    def __init__(self, guard: BackstopGuard) -> None:
        self.guard = guard
        # per kind: the versions its facts were read at, [(provider, facts)], and each decision's
        # count of dependents outside its provider's namespace (by the decision's id, with it)
        self._kinds: dict[str, Kept] = {}

    def gather(self, now: datetime) -> RecordKnowledge:
        guard = self.guard
        rules, view = guard.rules, guard.view
        facts: list[ProviderFacts] = []
        fresh: set[Scope] = set()
        stale: set[Scope] = set()
        stale_groups: set[str] = set()
        complete = True
        kept: dict[str, Kept] = {}
        read_fresh: list[tuple[str, Scope | None]] = []
        for kind in sorted(rules.provider_kinds()):
            cache = view.caches.get(kind)
            scope = (cache.resource.group, cache.resource.plural) if cache is not None else None
            if self._stale(kind):
                complete = False
                stale_groups.add(kind.partition(".")[2])
                if scope is not None:
                    stale.add(scope)
                continue
            read_fresh.append((kind, scope))
            if scope is None or not view.has_kind(kind):
                continue  # not served: fresh knowledge that there is none
            fresh.add(scope)
            versions = self._versions(kind)
            last = self._kinds.get(kind)
            if last is not None and last.versions == versions:
                found = [(p, replace(f, waived=read_override(kind, p).applies(now))) for p, f in last.found]
                kept[kind] = Kept(versions, found, last.outside)
            else:
                outside: dict[int, tuple[DeleteDecision, int]] = {}
                before = last.outside if last is not None else {}
                found = [(p, self._facts(kind, scope, p, now, before=before, outside=outside))
                         for p in view.list(kind)]
                kept[kind] = Kept(versions, found, outside)
            facts.extend(f for _, f in found)
        # a kind that went stale while it was read: what was read of it is kept (it only adds),
        # but it drops nothing
        for kind, scope in read_fresh:
            if self._stale(kind):
                complete = False
                stale_groups.add(kind.partition(".")[2])
                if scope is not None:
                    fresh.discard(scope)
                    stale.add(scope)
                kept.pop(kind, None)
        self._kinds = kept
        if complete:
            fresh.add(NAMESPACES_SCOPE)
        return RecordKnowledge(protected_entries(facts), frozenset(fresh), frozenset(stale),
                               frozenset(stale_groups), complete, len(facts))

    def _versions(self, kind: str) -> Hashable:
        caches = self.guard.view.caches
        read = sorted({*self.guard.rules.kinds_read(kind), kind, "Namespace"})
        return tuple((k, id(c), c.version()) for k in read for c in (caches.get(k),) if c is not None)

    def _stale(self, kind: str) -> bool:
        return bool(self.guard.stale_kinds((*sorted(self.guard.rules.kinds_read(kind)), kind)))

    def _facts(self, kind: str, scope: Scope, provider: RawObject, now: datetime, *,
               before: dict[int, tuple[DeleteDecision, int]],
               outside: dict[int, tuple[DeleteDecision, int]]) -> ProviderFacts:
        decision = self.guard.decision_now(kind, provider)
        home = namespace(provider)
        total = sum(len(refs) for refs in decision.dependents.values())
        out = 0
        if home and total:
            kept = before.get(id(decision))
            if kept is not None and kept[0] is decision:
                out = kept[1]
            else:
                out = sum(1 for refs in decision.dependents.values() for r in refs if r.namespace != home)
            outside[id(decision)] = (decision, out)
        return ProviderFacts(record_key(*scope, home, name(provider)), home, total, out,
                             read_override(kind, provider).applies(now))
