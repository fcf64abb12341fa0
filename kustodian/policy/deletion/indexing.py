"""Index building blocks: the provider context, index specs, and the generic matchers.

Every matcher comes as a pair that must agree: indexers (run by the watch cache
on every object it holds) that file a dependent under string keys, and a lookup
that computes the same keys from the provider and asks ``view.by_index``.  A
decision is therefore a handful of dict lookups whatever the cache size; nothing
in this package lists or scans a kind.

Index names are derived from the matcher's parameters, so two rules with the same
matcher share one index and two different matchers can never collide.  Keys are
``<namespace>/<value>`` for namespace-scoped references and ``<value>`` for
cluster-wide ones.  This module holds the kind-agnostic matchers
(``same-namespace``, ``field-ref``, ``skipIf``); Rook-specific ones live in
``rook_matchers.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from kustodian.policy.deletion.pools import PoolSet, provider_pools, values_at
from kustodian.policy.deletion.schema import Condition, FieldRef, Rule, SameNamespace, SkipIf, ViaRef
from kustodian.policy.objects import RawObject, field, name, namespace, str_field
from kustodian.policy.store import ClusterView, Indexer

NAMESPACE_INDEX = "kustodian.io/namespace"


@dataclass(frozen=True)
class Provider:
    """The object being deleted, with what matchers derive from it computed once."""

    kind: str
    obj: RawObject
    name: str
    namespace: str
    pools: PoolSet | None
    #: what matchers derived from a view, kept for that view (``(view, value)`` by name), so rules
    #: that share a derivation (the clusterIDs a provider's volumes are under) read it once
    derived: dict[str, tuple[object, Any]] = dc_field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, kind: str, obj: RawObject) -> Provider:
        return cls(kind, obj, name(obj), namespace(obj), provider_pools(kind, obj))


@dataclass(frozen=True)
class IndexSpec:
    """One index the watch cache must maintain: ``fn`` over objects of ``kind``, named ``name``."""

    kind: str
    name: str
    fn: Indexer

    def lookup(self, view: ClusterView, keys: Iterable[str]) -> list[RawObject]:
        return [obj for key in keys for obj in view.by_index(self.kind, self.name, key)]


# A rule's last hop: the dependents are exactly the objects of ``spec.kind`` filed under one of
# ``keys`` in ``spec``.  Matchers that end this way let a decision be kept up to date object by
# object (``live``): whether an object depends on a provider is then a question about that
# object alone (does ``spec.fn(obj)`` meet ``keys``?), so a watch event is applied in O(1).
Leaf = tuple[IndexSpec, list[str]]


def lookup_leaves(view: ClusterView, leaves: Iterable[Leaf]) -> list[RawObject]:
    return [obj for spec, keys in leaves for obj in spec.lookup(view, keys)]


def path(dotted: str) -> tuple[str, ...]:
    return tuple(dotted.split("."))


def strings(value: Any) -> Iterator[str]:
    """A field read as strings: a non-empty string, or the non-empty strings of a list."""
    if isinstance(value, str):
        if value:
            yield value
    elif isinstance(value, list):
        yield from (v for v in value if isinstance(v, str) and v)


def _holds(obj: RawObject, where: Iterable[Condition]) -> bool:
    # Same value *and* type: YAML "true" (a string) is not the boolean true.
    return all(
        (value := field(obj, *path(c.field))) == c.equals and type(value) is type(c.equals) for c in where
    )


def _where_suffix(where: Sequence[Condition]) -> str:
    if not where:
        return ""
    return "[" + ",".join(f"{c.field}={json.dumps(c.equals)}" for c in where) + "]"


# --- same-namespace and skipIf: objects filed under their namespace ------------------------


def namespace_index(kind: str, where: Sequence[Condition] = ()) -> IndexSpec:
    conditions = tuple(where)

    def fn(obj: RawObject) -> list[str]:
        ns = namespace(obj)
        return [ns] if ns and _holds(obj, conditions) else []

    return IndexSpec(kind, NAMESPACE_INDEX + _where_suffix(conditions), fn)


def same_namespace_indexes(rule: Rule, m: SameNamespace) -> list[IndexSpec]:
    return [namespace_index(rule.dependent, m.where)]


def leaves_same_namespace(rule: Rule, m: SameNamespace, provider: Provider, view: ClusterView) -> list[Leaf]:
    keys = [provider.namespace] if provider.namespace else []
    return [(namespace_index(rule.dependent, m.where), keys)]


def skip_index(skip: SkipIf) -> IndexSpec:
    return namespace_index(skip.kind, (Condition(field=skip.field, equals=skip.equals),))


def rule_skipped(rule: Rule, provider: Provider, view: ClusterView) -> bool:
    """True when the rule's ``skipIf`` object exists (an absent kind never skips: prefer blocking)."""
    skip = rule.skip_if
    if skip is None or not provider.namespace or not view.has_kind(skip.kind):
        return False
    return bool(skip_index(skip).lookup(view, [provider.namespace]))


# --- field-ref -----------------------------------------------------------------------------


def field_index(kind: str, m: FieldRef) -> IndexSpec:
    value_path = path(m.field)
    ns_path = path(m.namespace_field) if m.namespace_field else None
    where = m.where
    scope = "" if m.scope == "cluster" else "@namespace" + (f"({m.namespace_field})" if ns_path else "")

    def fn(obj: RawObject) -> list[str]:
        if not _holds(obj, where):
            return []
        values = list(strings(field(obj, *value_path)))
        if m.scope == "cluster":
            return values
        ns = (str_field(obj, *ns_path) if ns_path else "") or namespace(obj)
        return [f"{ns}/{v}" for v in values]

    return IndexSpec(kind, f"kustodian.io/field:{m.field}{scope}{_where_suffix(where)}", fn)


def cluster_field_index(kind: str, dotted: str) -> IndexSpec:
    """Objects of ``kind`` by the string at ``dotted``, across namespaces (e.g. storageClassName)."""
    return field_index(kind, FieldRef(type="field-ref", field=dotted, scope="cluster"))


def field_ref_indexes(rule: Rule, m: FieldRef) -> list[IndexSpec]:
    return [field_index(rule.dependent, m)]


def leaves_field_ref(rule: Rule, m: FieldRef, provider: Provider, view: ClusterView) -> list[Leaf]:
    if m.values_from:
        values = sorted({v for f in m.values_from for v in values_at(provider.obj, f)})
    else:
        values = [t.format(name=provider.name, namespace=provider.namespace) for t in m.values]
    keys = values if m.scope == "cluster" else [f"{provider.namespace}/{v}" for v in values]
    return [(field_index(rule.dependent, m), keys)]


# --- via-ref: dependents naming an object that names the provider -----------------------------


def _via_indexes(rule: Rule, m: ViaRef) -> tuple[IndexSpec, IndexSpec]:
    hop = field_index(m.via.kind, FieldRef(type="field-ref", field=m.via.field))
    last = field_index(rule.dependent, FieldRef.model_validate(
        {"type": "field-ref", "field": m.field, "namespaceField": m.namespace_field}))
    return hop, last


def via_ref_indexes(rule: Rule, m: ViaRef) -> list[IndexSpec]:
    return list(_via_indexes(rule, m))


def leaves_via_ref(rule: Rule, m: ViaRef, provider: Provider, view: ClusterView) -> list[Leaf]:
    """Two lookups: the ``via`` objects naming the provider (a hop), then the dependents naming them."""
    hop, last = _via_indexes(rule, m)
    if not provider.namespace or not view.has_kind(m.via.kind):
        return []
    via = hop.lookup(view, [f"{provider.namespace}/{provider.name}"])
    return [(last, sorted({f"{namespace(o)}/{name(o)}" for o in via}))]
