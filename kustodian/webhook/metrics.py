"""Prometheus metrics of the webhook, on a registry of its own (one per app)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class CacheCollector(Collector):
    """Cache sizes and sync state, read at scrape time (no bookkeeping on the hot path)."""

    def __init__(self, caches: Callable[[], Mapping[str, Any]], kinds: Any = None) -> None:
        self._caches = caches
        self._kinds = kinds  # kube.kinds.FollowedKinds, when kinds follow CRDs

    def collect(self) -> Iterable[GaugeMetricFamily]:
        size = GaugeMetricFamily("kustodian_cache_objects", "Objects held by a watch cache", labels=["kind"])
        synced = GaugeMetricFamily("kustodian_cache_synced", "1 once a watch cache has listed",
                                   labels=["kind"])
        relists = GaugeMetricFamily("kustodian_cache_relists", "Full lists done by a watch cache",
                                    labels=["kind"])
        fresh = GaugeMetricFamily("kustodian_cache_fresh",
                                  "1 while a watch cache is current (watch established after its last list)",
                                  labels=["kind"])
        stale = GaugeMetricFamily("kustodian_cache_stale_seconds", "Seconds a watch cache has not been fresh",
                                  labels=["kind"])
        age = GaugeMetricFamily("kustodian_cache_last_event_age_seconds",
                                "Seconds since a watch cache's last list, event or bookmark", labels=["kind"])
        for kind, cache in list(self._caches().items()):
            size.add_metric([kind], float(len(cache)))
            synced.add_metric([kind], 1.0 if cache.synced.is_set() else 0.0)
            relists.add_metric([kind], float(cache.relists))
            fresh.add_metric([kind], 1.0 if cache.fresh else 0.0)
            stale.add_metric([kind], cache.stale_for())
            last = cache.last_event_age()
            if last is not None:
                age.add_metric([kind], last)
        yield from (size, synced, relists, fresh, stale, age)
        if self._kinds is not None:
            served = GaugeMetricFamily("kustodian_rule_kind_served",
                                       "1 when a kind a rule names is served by the cluster (its CRD exists)",
                                       labels=["kind"])
            unserved = set(self._kinds.unserved())
            for kind in sorted(self._kinds.wanted):
                served.add_metric([kind], 0.0 if kind in unserved else 1.0)
            yield served


class WebhookMetrics:
    def __init__(self, caches: Callable[[], Mapping[str, Any]] = dict, kinds: Any = None) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "kustodian_admission_requests", "Admission reviews answered",
            ["webhook", "operation", "kind", "decision"], registry=self.registry,
        )
        self.latency = Histogram(
            "kustodian_admission_duration_seconds", "Time to decide one admission review",
            ["webhook", "operation"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.bad_requests = Counter(
            "kustodian_admission_bad_requests", "Bodies that were not an AdmissionReview v1",
            ["webhook"], registry=self.registry,
        )
        self.registry.register(CacheCollector(caches, kinds))
