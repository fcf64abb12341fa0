"""Deciding a DELETE: of one provider object, or of a whole namespace.

The webhook gathers (the object from the request, a ``ClusterView`` over its
watch caches), calls one of these functions, and acts on the returned
``DeleteDecision``.  Both decisions share one walk over the provider's rules, so
"what blocks this pool" has a single answer for the webhook, the namespace guard
and ``kustodian explain-delete``.

Namespace teardown is refused up front when a provider in the namespace has
dependents *outside* it: once the namespace controller starts deleting, each CR
DELETE would be refused one by one and the namespace would hang in Terminating.
Dependents inside the namespace go with it and do not count.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from kustodian.policy.deletion.indexing import NAMESPACE_INDEX, Provider
from kustodian.policy.deletion.matchers import find_dependents, rule_skipped
from kustodian.policy.deletion.message import Section, fit_message, plural, short_kind
from kustodian.policy.deletion.rules import RuleSet
from kustodian.policy.objects import RawObject, map_field
from kustodian.policy.store import ClusterView

ALLOW_ANNOTATION = "kustodian.io/allow-delete-with-dependents"


class ObjectRef(NamedTuple):
    """A provider or dependent, by kind key, namespace (``""`` when cluster-scoped) and name.

    A NamedTuple rather than a dataclass: hashing, equality and ordering run in C, which
    matters when a pool has thousands of PersistentVolumes on the admission hot path.
    """

    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, kind: str, obj: RawObject) -> ObjectRef:
        meta = obj.get("metadata")
        if type(meta) is not dict and not isinstance(meta, Mapping):  # fast path: decoded JSON
            return cls(kind, "", "")
        ns, nm = meta.get("namespace"), meta.get("name")
        return cls(kind, ns if isinstance(ns, str) else "", nm if isinstance(nm, str) else "")

    def label(self, home_namespace: str = "") -> str:
        """``name`` when cluster-scoped or in ``home_namespace``, else ``namespace/name``."""
        return self.name if self.namespace in ("", home_namespace) else f"{self.namespace}/{self.name}"

    def quoted(self) -> str:
        """``CephBlockPool "rook-ceph/replicapool"``: how messages name a provider."""
        return f'{short_kind(self.kind)} "{self.label()}"'


@dataclass(frozen=True)
class DeleteDecision:
    """Whether a DELETE may proceed, and why.

    ``dependents`` maps a kind plural (``"PersistentVolumes"``) to the blocking objects, sorted;
    it is filled even when ``overridden`` lets the DELETE through, so the webhook can name
    them in a Warning event.  ``providers`` are the objects whose dependents these are.
    """

    allowed: bool
    message: str = ""
    dependents: Mapping[str, tuple[ObjectRef, ...]] = field(default_factory=dict)
    overridden: bool = False
    providers: tuple[ObjectRef, ...] = ()


def is_overridden(obj: RawObject) -> bool:
    # objects.annotations() is shadowed by its module's `from __future__ import annotations` for mypy.
    value = map_field(obj, "metadata", "annotations").get(ALLOW_ANNOTATION, "")
    return str(value).strip().lower() == "true"


def _dependents(
    provider: Provider,
    view: ClusterView,
    rules: RuleSet,
    outside: str | None,
    notes: dict[str, str] | None = None,
) -> list[ObjectRef]:
    """Distinct dependents of ``provider``, unordered (``_grouped`` sorts them for display);
    with ``outside``, only those not in that namespace.

    ``notes`` receives, per dependent kind, the ``note`` of a rule that found one.
    """
    me = ObjectRef(provider.kind, provider.namespace, provider.name)
    found: set[ObjectRef] = set()
    seen: set[tuple[str, int]] = set()  # the same cached object matched by several rules
    for rule in rules.for_provider(provider.kind):
        if not view.has_kind(rule.dependent) or rule_skipped(rule, provider, view):
            continue
        kind = rule.dependent
        for obj in find_dependents(rule, provider, view):
            key = (kind, id(obj))
            if key in seen:
                continue
            seen.add(key)
            ref = ObjectRef.of(kind, obj)
            if ref != me and (outside is None or ref.namespace != outside):
                found.add(ref)
                if rule.note and notes is not None:
                    notes.setdefault(kind, rule.note)
    return list(found)


@functools.lru_cache(maxsize=256)
def _title(kind: str) -> str:
    return plural(short_kind(kind))


def _grouped(
    refs: Iterable[ObjectRef], home_namespace: str, notes: Mapping[str, str] | None = None
) -> dict[str, tuple[ObjectRef, ...]]:
    """Refs by kind title (with a rule's note, if any), each group sorted by (label, kind): one
    sort of plain tuples, no key function, so 50,000 PersistentVolumes sort in C."""
    groups: dict[str, set[ObjectRef]] = {}
    for ref in refs:
        title = _title(ref.kind)
        if notes and ref.kind in notes:
            title = f"{title} ({notes[ref.kind]})"
        groups.setdefault(title, set()).add(ref)
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


def decide_delete(
    kind_key: str,
    provider: RawObject,
    view: ClusterView,
    rules: RuleSet,
    *,
    deleting_namespace: str | None = None,
) -> DeleteDecision:
    """May ``provider`` (of kind ``kind_key``) be deleted now?

    With ``deleting_namespace`` (the namespace is terminating), dependents inside that
    namespace are going away too and do not block.
    """
    if not rules.for_provider(kind_key):
        return DeleteDecision(allowed=True)
    subject = Provider.of(kind_key, provider)
    notes: dict[str, str] = {}
    refs = _dependents(subject, view, rules, deleting_namespace, notes)
    if not refs:
        return DeleteDecision(allowed=True)
    me = ObjectRef(kind_key, subject.namespace, subject.name)
    grouped = _grouped(refs, subject.namespace, notes)
    section = _section(grouped, subject.namespace)
    if is_overridden(provider):
        header = f"{me.quoted()} is being deleted despite its dependents ({ALLOW_ANNOTATION}=true): "
        return DeleteDecision(True, fit_message(header, [section]), grouped, overridden=True, providers=(me,))
    header = f"{me.quoted()} cannot be deleted: it has dependents: "
    return DeleteDecision(False, fit_message(header, [section]), grouped, providers=(me,))


def decide_namespace_delete(namespace: str, view: ClusterView, rules: RuleSet) -> DeleteDecision:
    """May ``namespace`` be deleted, given the providers it holds and their outside dependents?"""
    blocking: list[tuple[ObjectRef, list[ObjectRef]]] = []
    waived: list[tuple[ObjectRef, list[ObjectRef]]] = []
    for kind in sorted(rules.provider_kinds()):
        if not view.has_kind(kind):
            continue
        for obj in view.by_index(kind, NAMESPACE_INDEX, namespace):
            refs = _dependents(Provider.of(kind, obj), view, rules, namespace)
            if refs:
                (waived if is_overridden(obj) else blocking).append((ObjectRef.of(kind, obj), refs))
    chosen = blocking or waived
    if not chosen:
        return DeleteDecision(allowed=True)
    chosen.sort()
    sections = [
        _section(_grouped(refs, namespace), namespace, f"{ref.quoted()} (", ")") for ref, refs in chosen
    ]
    grouped = _grouped((r for _, refs in chosen for r in refs), namespace)
    providers = tuple(ref for ref, _ in chosen)
    if blocking:
        header = f'Namespace "{namespace}" cannot be deleted: it holds providers with dependents outside it: '
        return DeleteDecision(False, fit_message(header, sections), grouped, providers=providers)
    header = (
        f'Namespace "{namespace}" is being deleted although providers in it have dependents outside it '
        f"({ALLOW_ANNOTATION}=true): "
    )
    return DeleteDecision(True, fit_message(header, sections), grouped, overridden=True, providers=providers)


def dependents_table(decision: DeleteDecision) -> list[tuple[str, str, str]]:
    """Rows ``(kind, namespace, name)`` for ``kustodian explain-delete``, grouped as in the message."""
    return [(short_kind(r.kind), r.namespace, r.name) for refs in decision.dependents.values() for r in refs]
