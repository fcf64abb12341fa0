"""The cluster-wide protection report: every provider that a DELETE would be refused for, and why.

Pure: a view and the rules in, rows out.  The same ``decide_delete`` the webhook runs is
asked for each provider object, so the report and the guard cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from kustodian.policy.deletion.decision import ObjectRef, decide_delete
from kustodian.policy.deletion.rules import RuleSet
from kustodian.policy.objects import name, namespace
from kustodian.policy.store import ClusterView

__all__ = ["Protection", "SeriesCap", "cap_series", "protections", "provider_dict"]


@dataclass(frozen=True)
class Protection:
    """``provider`` cannot be deleted while ``dependents`` exist (unless ``overridden``)."""

    provider: ObjectRef
    dependents: Mapping[str, tuple[ObjectRef, ...]]
    overridden: bool
    message: str

    @property
    def count(self) -> int:
        return sum(len(refs) for refs in self.dependents.values())

    def as_dict(self) -> dict[str, object]:
        # a provider with dependents may be deleted only when overridden
        return provider_dict(self.provider, self.dependents, allowed=self.overridden,
                             overridden=self.overridden, message=self.message)


def provider_dict(provider: ObjectRef, dependents: Mapping[str, Sequence[ObjectRef]], *, allowed: bool,
                  overridden: bool, message: str) -> dict[str, object]:
    """One shape for "a provider and its dependents", in every command's JSON and YAML: an object of
    ``explain-delete -o json`` and an item of ``report -o json``.  ``kind`` is the kind key
    (``CephBlockPool.ceph.rook.io``), the dependents one flat list in the order of the message."""
    flat = [{"kind": r.kind, "namespace": r.namespace, "name": r.name}
            for refs in dependents.values() for r in refs]
    return {"kind": provider.kind, "namespace": provider.namespace, "name": provider.name, "allowed": allowed,
            "overridden": overridden, "message": message, "dependentCount": len(flat), "dependents": flat}


def protections(view: ClusterView, rules: RuleSet, now: datetime | None = None) -> list[Protection]:
    """Every provider object in ``view`` with at least one dependent, sorted by kind, namespace, name;
    ``overridden`` as at ``now`` (an override may carry a deadline)."""
    out: list[Protection] = []
    seen: set[ObjectRef] = set()  # manifests may declare one object twice (--from DIR): report it once
    for kind in sorted(rules.provider_kinds()):
        if not view.has_kind(kind):
            continue
        objects: Sequence[Mapping[str, object]] = view.list(kind)
        for obj in objects:
            decision = decide_delete(kind, obj, view, rules, now=now)
            if not decision.dependents:
                continue
            ref = ObjectRef(kind, namespace(obj), name(obj))
            if ref in seen:
                continue
            seen.add(ref)
            out.append(Protection(ref, decision.dependents, decision.overridden, decision.message))
    out.sort(key=lambda p: p.provider)
    return out


@dataclass(frozen=True)
class SeriesCap:
    """Which providers get a metric series of their own under a cap, and what the rest add up to."""

    kept: tuple[tuple[ObjectRef, int], ...]
    folded_providers: int
    folded_dependents: int


def cap_series(counts: Mapping[ObjectRef, int], max_series: int) -> SeriesCap:
    """The ``max_series`` providers with the most dependents (ties by kind, namespace, name) keep
    a series; the rest fold into one, so a cluster of any size costs at most ``max_series + 1``
    series.  With more providers than the cap, one kept slot goes to the fold."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if len(ranked) <= max_series:
        return SeriesCap(tuple(ranked), 0, 0)
    keep = max(max_series - 1, 0)  # the folded series is one of the max_series
    rest = ranked[keep:]
    return SeriesCap(tuple(ranked[:keep]), len(rest), sum(n for _, n in rest))
