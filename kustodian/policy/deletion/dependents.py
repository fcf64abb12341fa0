"""The frozen input of a provider's deletion decision, and the pure decision over it.

Gathering and deciding are apart (cert-manager's shape): whoever gathers (``LiveDependents``
from a ``ClusterView``, the webhook's gatherer over its watch caches) fills one
``DependentsOfProvider``: the provider, whether it carries the override annotation, its
dependents per kind (sorted as a message names them), the notes of the rules that found them,
and the reads the gathering made (which buckets of which kinds, at which versions) so a
memo of the decision knows when it is out of date.  ``decide_provider_delete`` reads nothing
else: no view, no clock.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple, overload

from kustodian.policy.deletion.message import MESSAGE_LIMIT, Section, fit
from kustodian.policy.deletion.verdict import (
    ALLOW_ANNOTATION,
    NO_OVERRIDE,
    DeleteDecision,
    NamedGroup,
    ObjectRef,
    Override,
    group_title,
)

__all__ = ["BucketRead", "DependentsOfProvider", "NamespacedProvider", "ProvidersInNamespace",
           "decide_namespace_teardown", "decide_provider_delete"]

#: one read made while gathering: ``(kind, index, key, version seen)``; ``index`` None is a read
#: of the whole kind (get/list), ``""`` whether the kind is held at all (``has_kind``)
BucketRead = tuple[str, str | None, str | None, Hashable]


@dataclass(frozen=True)
class DependentsOfProvider:
    """What a DELETE of one provider is decided from, gathered before deciding.

    ``dependents`` maps a dependent kind to its objects sorted by label (``ObjectRef.label``
    with ``home``); ``notes`` the note of the first rule that found dependents of that kind.
    ``hop_reads`` are the reads that chose where to look (a change there needs a new gather),
    ``leaf_reads`` the lookups whose objects are the dependents (a change there can be applied
    object by object); both empty when the view cannot tell versions.
    """

    provider: ObjectRef
    override: Override = NO_OVERRIDE
    dependents: Mapping[str, tuple[ObjectRef, ...]] = field(default_factory=dict)
    notes: Mapping[str, str] = field(default_factory=dict)
    hop_reads: tuple[BucketRead, ...] = ()
    leaf_reads: tuple[BucketRead, ...] = ()

    @property
    def home(self) -> str:
        return self.provider.namespace

    def __len__(self) -> int:
        return sum(len(refs) for refs in self.dependents.values())

    def reads(self) -> Iterator[BucketRead]:
        yield from self.hop_reads
        yield from self.leaf_reads


class _Labels(Sequence[str]):
    """The labels of sorted refs, made only for the names a message shows."""

    def __init__(self, refs: Sequence[ObjectRef], home: str) -> None:
        self._refs = refs
        self._home = home

    def __len__(self) -> int:
        return len(self._refs)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...

    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [r.label(self._home) for r in self._refs[i]]
        return self._refs[i].label(self._home)

    def __iter__(self) -> Iterator[str]:
        return (r.label(self._home) for r in self._refs)


def _titled(gathered: DependentsOfProvider) -> dict[str, tuple[ObjectRef, ...]]:
    """The dependents by group title, titles sorted; kinds that share a title merged by label,
    then kind."""
    by_title: dict[str, list[str]] = {}
    for kind, refs in gathered.dependents.items():
        if refs:
            by_title.setdefault(group_title(kind, gathered.notes), []).append(kind)
    out: dict[str, tuple[ObjectRef, ...]] = {}
    home = gathered.home
    for title in sorted(by_title):
        kinds = by_title[title]
        if len(kinds) == 1:
            out[title] = gathered.dependents[kinds[0]]
        else:
            runs = (((r.label(home), k, r) for r in gathered.dependents[k]) for k in sorted(kinds))
            out[title] = tuple(r for _, _, r in heapq.merge(*runs))
    return out


def decide_provider_delete(gathered: DependentsOfProvider, now: datetime | None = None, *,
                           question: bool = False) -> DeleteDecision:
    """May the provider be deleted, given its gathered dependents, at ``now`` (an override may
    carry a deadline; without ``now`` such an override does not apply)?  Rendered from the
    first names of each sorted group, so 50,000 dependents cost no more than a few.

    ``question``: the decision answers a question (``kustodian explain-delete``), not a DELETE
    in flight, so an override's message says the provider *would be* deleted, not that it *is
    being* deleted."""
    if not any(gathered.dependents.values()):
        return DeleteDecision(allowed=True)
    titled = _titled(gathered)
    section = Section(tuple((title, _Labels(refs, gathered.home)) for title, refs in titled.items()))
    me = gathered.provider
    override = gathered.override

    def named(counts: Sequence[int]) -> tuple[tuple[ObjectRef, tuple[NamedGroup, ...]], ...]:
        return ((me, tuple(NamedGroup(title, refs, n)
                           for (title, refs), n in zip(titled.items(), counts, strict=True))),)

    if override.applies(now):
        tense = "would be deleted" if question else "is being deleted"
        header = f"{me.quoted()} {tense} despite its dependents ({override.shown()}): "
        message, counts = fit(header, [section])
        return DeleteDecision(True, message, titled, overridden=True, providers=(me,),
                              valid_until=override.until, override=override.annotation, named=named(counts))
    header = f"{me.quoted()} cannot be deleted: it has dependents: "
    why_not = override.why_not(now)
    if not why_not:
        message, counts = fit(header, [section])
        return DeleteDecision(False, message, titled, providers=(me,), named=named(counts))
    note = f" (no override: {why_not})"
    budget = max(MESSAGE_LIMIT - len(note.encode()), len(header.encode()) + 64)
    message, counts = fit(header, [section], budget)
    return DeleteDecision(False, message + note, titled, providers=(me,), named=named(counts))


# -- a Namespace's DELETE -------------------------------------------------------------------


class NamespacedProvider(NamedTuple):
    """A provider in a namespace being deleted, and its dependents outside that namespace."""

    ref: ObjectRef
    overridden: bool
    outside: tuple[ObjectRef, ...]


@dataclass(frozen=True)
class ProvidersInNamespace:
    """What a Namespace's DELETE is decided from: the providers it holds that have dependents
    outside it (dependents inside go with it and do not count)."""

    namespace: str
    providers: tuple[NamespacedProvider, ...] = ()


def _grouped(
    refs: Iterable[ObjectRef], home_namespace: str, notes: Mapping[str, str] | None = None
) -> dict[str, tuple[ObjectRef, ...]]:
    """Refs by kind title (with a rule's note, if any), each group sorted by (label, kind): one
    sort of plain tuples, no key function, so 50,000 PersistentVolumes sort in C."""
    groups: dict[str, set[ObjectRef]] = {}
    for ref in refs:
        groups.setdefault(group_title(ref.kind, notes), set()).add(ref)
    out: dict[str, tuple[ObjectRef, ...]] = {}
    for title, members in sorted(groups.items()):
        keyed = sorted(
            (r.name if r.namespace in ("", home_namespace) else f"{r.namespace}/{r.name}", r.kind, r)
            for r in members
        )
        out[title] = tuple(r for _, _, r in keyed)
    return out


def _section(
    grouped: Mapping[str, tuple[ObjectRef, ...]], home_namespace: str, lead: str = "", tail: str = ""
) -> Section:
    groups = tuple((title, tuple(r.label(home_namespace) for r in refs)) for title, refs in grouped.items())
    return Section(groups, lead, tail)


def decide_namespace_teardown(gathered: ProvidersInNamespace) -> DeleteDecision:
    """May the namespace be deleted?  Refused up front when a provider in it has dependents
    outside it: once the namespace controller starts deleting, each provider's DELETE would be
    refused one by one and the namespace would hang in Terminating."""
    namespace = gathered.namespace
    blocking: list[tuple[ObjectRef, tuple[ObjectRef, ...]]] = []
    waived: list[tuple[ObjectRef, tuple[ObjectRef, ...]]] = []
    for provider in gathered.providers:
        if provider.outside:
            (waived if provider.overridden else blocking).append((provider.ref, provider.outside))
    chosen = blocking or waived
    if not chosen:
        return DeleteDecision(allowed=True)
    chosen.sort()
    per_provider = [(ref, _grouped(refs, namespace)) for ref, refs in chosen]
    sections = [_section(groups, namespace, f"{ref.quoted()} (", ")") for ref, groups in per_provider]
    grouped = _grouped((r for _, refs in chosen for r in refs), namespace)
    providers = tuple(ref for ref, _ in chosen)
    if blocking:
        header = f'Namespace "{namespace}" cannot be deleted: it holds providers with dependents outside it: '
    else:
        header = (
            f'Namespace "{namespace}" is being deleted although providers in it have dependents outside it '
            f"({ALLOW_ANNOTATION}=true): "
        )
    message, counts = fit(header, sections)
    left = iter(counts)
    named = tuple((ref, tuple(NamedGroup(title, refs, next(left)) for title, refs in groups.items()))
                  for ref, groups in per_provider)
    if blocking:
        return DeleteDecision(False, message, grouped, providers=providers, named=named)
    return DeleteDecision(True, message, grouped, overridden=True, providers=providers, named=named,
                          override=ALLOW_ANNOTATION)
