"""``kustodian_protected_provider_dependents{kind,namespace,name}``: each storage provider's
dependents, as a gauge, with a bounded number of series.

Computed off the admission path: a daemon thread asks the deletion guard, every ``interval``,
what a DELETE of each cached provider would get now (``DeletionGuard.decision_now``: the
guard's memo, so a pass over unchanged providers costs a few dict reads each) and keeps the
counts (retrying within a second while a kind is not fresh, as at start-up); a scrape only
reads the last pass.  The figures are therefore exactly the guard's
(and ``kustodian report``'s: both run ``decide_delete``).

Cardinality is bounded by ``max_series`` whatever the cluster holds
(``policy.deletion.report.cap_series``): the providers with the most dependents keep a series,
the rest fold into one ``{kind="_folded",namespace="",name=""}`` series carrying their summed
dependents, and ``kustodian_protected_provider_series_folded`` says how many providers were
folded.  A provider kind whose caches are not fresh keeps its last known counts (never a
guessed 0); a kind no longer served loses its series.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Protocol

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kustodian.kube.view import CacheView
from kustodian.policy.deletion import DeleteDecision, ObjectRef, RuleSet, SeriesCap, cap_series
from kustodian.policy.objects import RawObject, name, namespace
from kustodian.runtime import Periodic

__all__ = ["FOLDED", "ProviderDependents"]

log = logging.getLogger(__name__)

FOLDED = ObjectRef("_folded", "", "")


class Guard(Protocol):
    rules: RuleSet
    view: CacheView

    def stale_kinds(self, kinds: Iterable[str]) -> list[tuple[str, float]]: ...

    def decision_now(self, kind_key: str, provider: RawObject) -> DeleteDecision: ...


class ProviderDependents(Collector):
    """The per-provider dependents gauge; ``refresh`` computes, ``start`` refreshes periodically."""

    def __init__(self, guard: Guard, *, max_series: int, interval: float) -> None:
        if max_series < 1:
            raise ValueError("max_series must be at least 1")
        self.guard = guard
        self.max_series = max_series
        self.interval = interval
        self._counts: dict[ObjectRef, int] = {}
        self._cap = SeriesCap((), 0, 0)
        self._lock = threading.Lock()
        # the periodic refresh, a runnable of the webhook's Manager: until a pass finds every kind
        # fresh (start-up, a re-list), the next one comes within a second
        self.loop = Periodic("provider-metrics", self._pass, needs_leader=False,
                             interval=lambda: self.interval if self.complete else min(self.interval, 1.0))
        self.passes = 0
        self.complete = False  # the last pass found every provider kind fresh
        self.last_pass_seconds = 0.0

    def refresh(self) -> SeriesCap:
        """One pass over every cached provider of a fresh kind; returns the capped result."""
        started = time.monotonic()
        rules, view = self.guard.rules, self.guard.view
        counts: dict[ObjectRef, int] = {}
        complete = True
        with self._lock:
            previous = dict(self._counts)
        for kind in sorted(rules.provider_kinds()):
            if self.loop.stopping.is_set() or not view.has_kind(kind):
                continue
            if self.guard.stale_kinds((*sorted(rules.kinds_read(kind)), kind)):
                complete = False
                counts.update({ref: n for ref, n in previous.items() if ref.kind == kind})
                continue
            for provider in view.list(kind):
                decision = self.guard.decision_now(kind, provider)
                ref = ObjectRef(kind, namespace(provider), name(provider))
                counts[ref] = sum(len(refs) for refs in decision.dependents.values())
        cap = cap_series(counts, self.max_series)
        with self._lock:
            self._counts, self._cap = counts, cap
        self.passes += 1
        self.complete = complete
        self.last_pass_seconds = time.monotonic() - started
        return cap

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            cap, providers = self._cap, len(self._counts)
        dependents = GaugeMetricFamily(
            "kustodian_protected_provider_dependents",
            "Dependents that block deleting each storage provider (what the deletion guard would name); "
            "providers beyond the series cap are summed under kind=\"_folded\"",
            labels=["kind", "namespace", "name"])
        for ref, n in cap.kept:
            dependents.add_metric(list(ref), float(n))
        if cap.folded_providers:
            dependents.add_metric(list(FOLDED), float(cap.folded_dependents))
        folded = GaugeMetricFamily(
            "kustodian_protected_provider_series_folded",
            "Providers whose dependents are summed into the kind=\"_folded\" series (over the series cap)")
        folded.add_metric([], float(cap.folded_providers))
        total = GaugeMetricFamily("kustodian_protected_providers",
                                  "Storage providers the deletion guard watches (with or without dependents)")
        total.add_metric([], float(providers))
        seconds = GaugeMetricFamily("kustodian_protected_provider_pass_seconds",
                                    "Duration of the last pass computing the per-provider dependents")
        seconds.add_metric([], self.last_pass_seconds)
        yield from (dependents, folded, total, seconds)

    def _pass(self) -> None:
        try:
            self.refresh()
        except Exception:  # a cache swapped under us: the next pass retries
            log.warning("computing the per-provider dependents metric failed", exc_info=True)

    def start(self) -> None:
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop()
