"""The writer's sources of findings: the deletion guard's and the schedule validator's caches.

Each reads the feature it reports on through a small protocol (the features stay independent of
each other and of this one) and returns one ``SourcePass`` per pass: the findings of
``policy.deletion.findings`` / ``policy.reclaim.findings``, and which of them cannot be told now
because a cache they read is not current (those results are kept as last written).

Off the admission path, in the writer's thread.  The deletion guard's pass reads every cached
provider's ``deletionTimestamp`` (a dict read each) and asks the guard's memo for the decision of
the few being deleted, so a pass over 100,000 providers costs milliseconds; a Namespace being
deleted costs one walk over its providers.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from kustodian.kube.view import CacheView
from kustodian.policy.deletion import (
    GUARD_POLICY,
    NAMESPACE_RULE,
    DeleteDecision,
    RuleSet,
    decide_namespace_teardown,
    deleting_since,
    gather_namespace,
    namespace_finding,
    provider_finding,
    refusal_mode,
)
from kustodian.policy.modes import Mode
from kustodian.policy.objects import RawObject, name, namespace
from kustodian.policy.policy_reports import Finding, SourcePass
from kustodian.policy.reclaim.findings import POLICY as SCHEDULE_POLICY
from kustodian.policy.reclaim.findings import policy_finding
from kustodian.policy.reclaim.validation import KIND_CONFIGMAP, KIND_NAMESPACE, KIND_STORAGECLASS
from kustodian.policy.store import ClusterView

__all__ = ["DeletionFindings", "ScheduleFindings"]

NAMESPACE = "Namespace"


class GuardReader(Protocol):
    """What the deletion guard offers a reader off the request path."""

    @property
    def rules(self) -> RuleSet: ...

    @property
    def view(self) -> ClusterView: ...

    @property
    def mode(self) -> Mode: ...

    def stale_kinds(self, kinds: Iterable[str]) -> list[tuple[str, float]]: ...

    def decision_now(self, kind_key: str, provider: RawObject) -> DeleteDecision: ...


class DeletionFindings:
    """Providers (and Namespaces) being deleted while dependents still use them."""

    name = "deletion-guard"

    def __init__(self, guard: GuardReader) -> None:
        self.guard = guard

    def collect(self, now: datetime) -> SourcePass:
        guard = self.guard
        rules, view = guard.rules, guard.view
        kinds = sorted(rules.provider_kinds())
        everything = frozenset({(GUARD_POLICY, k) for k in kinds} | {(GUARD_POLICY, NAMESPACE_RULE)})
        if guard.stale_kinds((NAMESPACE,)):  # which namespaces are going cannot be told: keep it all
            return SourcePass(stale=everything)
        closed = frozenset(name(ns) for ns in view.list(NAMESPACE) if deleting_since(ns) is not None)
        findings: list[Finding] = []
        stale: set[tuple[str, str]] = set()
        read_by_all: set[str] = set()
        for kind in kinds:
            reads = (*sorted(rules.kinds_read(kind)), kind)
            read_by_all.update(reads)
            if guard.stale_kinds(reads):
                stale.add((GUARD_POLICY, kind))
                continue
            if not view.has_kind(kind):
                continue  # not served: no provider of it exists
            for provider in view.list(kind):
                if deleting_since(provider) is None or namespace(provider) in closed:
                    continue
                decision = guard.decision_now(kind, provider)
                found = provider_finding(kind, provider, decision,
                                         mode=refusal_mode(decision, rules, (kind,), guard.mode))
                if found is not None:
                    findings.append(found)
        if closed and guard.stale_kinds(read_by_all):
            stale.add((GUARD_POLICY, NAMESPACE_RULE))
        elif closed:
            for ns_name in sorted(closed):
                ns = view.get(NAMESPACE, "", ns_name)
                if ns is None:
                    continue
                gathered = gather_namespace(ns_name, view, rules, now)
                decision = decide_namespace_teardown(gathered)
                mode = refusal_mode(decision, rules, {p.kind for p in decision.providers}, guard.mode)
                found = namespace_finding(ns, gathered, decision, mode=mode)
                if found is not None:
                    findings.append(found)
        return SourcePass(tuple(findings), frozenset(stale), closed)


class ReclaimReader(Protocol):
    """What the reclaim-space policy offers a reader off the request path."""

    @property
    def mode(self) -> Mode: ...

    @property
    def config_ref(self) -> tuple[str, str]: ...

    @property
    def view(self) -> CacheView | None: ...

    def stored_config(self) -> tuple[bool, RawObject | None]: ...


class ScheduleFindings:
    """StorageClasses, Namespaces and the central ConfigMap whose reclaim policy does not validate."""

    name = "reclaim-validation"

    def __init__(self, reclaim: ReclaimReader) -> None:
        self.reclaim = reclaim

    def collect(self, now: datetime) -> SourcePass:
        reclaim, view = self.reclaim, self.reclaim.view
        if view is None:
            return SourcePass()
        findings: list[Finding] = []
        stale: set[tuple[str, str]] = set()
        for kind in (KIND_NAMESPACE, KIND_STORAGECLASS):
            if not view.state(kind).fresh:
                stale.add((SCHEDULE_POLICY, kind))
                continue
            for obj in view.list(kind):
                found = policy_finding(kind, obj, mode=reclaim.mode, config_map=reclaim.config_ref)
                if found is not None:
                    findings.append(found)
        current, config = reclaim.stored_config()
        if not current:
            stale.add((SCHEDULE_POLICY, KIND_CONFIGMAP))
        elif config is not None:
            found = policy_finding(KIND_CONFIGMAP, config, mode=reclaim.mode, api_version="v1",
                                   config_map=reclaim.config_ref)
            if found is not None:
                findings.append(found)
        return SourcePass(tuple(findings), frozenset(stale))
