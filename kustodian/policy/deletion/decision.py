"""Deciding a DELETE: of one provider object, or of a whole namespace.

Each is a gather over a ``ClusterView`` (``LiveDependents``, ``gather_namespace``)
followed by a pure decision over what was gathered (``dependents``); the webhook
gathers from its watch caches itself, to keep what it read, and decides the same way.
Both decisions share one walk over the provider's rules, so "what blocks this pool"
has a single answer for the webhook, the namespace guard
and ``kustodian explain-delete``.

Namespace teardown is refused up front when a provider in the namespace has
dependents *outside* it: once the namespace controller starts deleting, each CR
DELETE would be refused one by one and the namespace would hang in Terminating.
Dependents inside the namespace go with it and do not count.
"""

from __future__ import annotations

from datetime import datetime

from kustodian.policy.deletion.dependents import (
    NamespacedProvider,
    ProvidersInNamespace,
    decide_namespace_teardown,
)
from kustodian.policy.deletion.indexing import NAMESPACE_INDEX
from kustodian.policy.deletion.live import LiveDependents
from kustodian.policy.deletion.message import short_kind
from kustodian.policy.deletion.rules import RuleSet
from kustodian.policy.deletion.verdict import ALLOW_ANNOTATION, DeleteDecision, ObjectRef, is_overridden
from kustodian.policy.objects import RawObject
from kustodian.policy.store import ClusterView

__all__ = [
    "ALLOW_ANNOTATION", "DeleteDecision", "ObjectRef", "decide_delete", "decide_namespace_delete",
    "dependents_table", "gather_namespace", "is_overridden",
]



def decide_delete(
    kind_key: str,
    provider: RawObject,
    view: ClusterView,
    rules: RuleSet,
    *,
    deleting_namespace: str | None = None,
    now: datetime | None = None,
    question: bool = False,
) -> DeleteDecision:
    """May ``provider`` (of kind ``kind_key``) be deleted now?

    With ``deleting_namespace`` (the namespace is terminating), dependents inside that
    namespace are going away too and do not block.  ``now`` decides whether an override with a
    deadline (``kustodian.io/allow-delete-until``) still applies; without it, it does not.
    ``question``: asked, not a DELETE in flight (an override's message: "would be deleted").
    """
    if not rules.for_provider(kind_key):
        return DeleteDecision(allowed=True)
    live = LiveDependents(kind_key, provider, view, rules, deleting_namespace=deleting_namespace)
    return live.decision(now, question=question)


def gather_namespace(namespace: str, view: ClusterView, rules: RuleSet,
                     now: datetime | None = None) -> ProvidersInNamespace:
    """The providers held in ``namespace`` that have dependents outside it, with those dependents."""
    found: list[NamespacedProvider] = []
    for kind in sorted(rules.provider_kinds()):
        if not view.has_kind(kind):
            continue
        for obj in view.by_index(kind, NAMESPACE_INDEX, namespace):
            refs = LiveDependents(kind, obj, view, rules, deleting_namespace=namespace).refs()
            if refs:
                found.append(NamespacedProvider(ObjectRef.of(kind, obj), is_overridden(obj, kind, now),
                                                 tuple(refs)))
    return ProvidersInNamespace(namespace, tuple(found))


def decide_namespace_delete(namespace: str, view: ClusterView, rules: RuleSet,
                            now: datetime | None = None) -> DeleteDecision:
    """May ``namespace`` be deleted, given the providers it holds and their outside dependents?"""
    return decide_namespace_teardown(gather_namespace(namespace, view, rules, now))


def dependents_table(decision: DeleteDecision) -> list[tuple[str, str, str]]:
    """Rows ``(kind, namespace, name)`` for ``kustodian explain-delete``, grouped as in the message."""
    return [(short_kind(r.kind), r.namespace, r.name) for refs in decision.dependents.values() for r in refs]
