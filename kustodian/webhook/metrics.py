"""Prometheus metrics of the webhook, on a registry of its own (one per app)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class CacheCollector(Collector):
    """Cache sizes and sync state, read at scrape time (no bookkeeping on the hot path)."""

    def __init__(self, caches: Callable[[], Mapping[str, Any]]) -> None:
        self._caches = caches

    def collect(self) -> Iterable[GaugeMetricFamily]:
        size = GaugeMetricFamily("kustodian_cache_objects", "Objects held by a watch cache", labels=["kind"])
        synced = GaugeMetricFamily("kustodian_cache_synced", "1 once a watch cache has listed",
                                   labels=["kind"])
        relists = GaugeMetricFamily("kustodian_cache_relists", "Full lists done by a watch cache",
                                    labels=["kind"])
        for kind, cache in self._caches().items():
            size.add_metric([kind], float(len(cache)))
            synced.add_metric([kind], 1.0 if cache.synced.is_set() else 0.0)
            relists.add_metric([kind], float(cache.relists))
        yield size
        yield synced
        yield relists


class WebhookMetrics:
    def __init__(self, caches: Callable[[], Mapping[str, Any]] = dict) -> None:
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
        self.rejected_connections = Counter(
            "kustodian_webhook_rejected_connections",
            "Requests or connections refused by a limit (body-too-large answered 413, "
            "headers-too-large 431; header-timeout, body-timeout: closed)",
            ["reason"], registry=self.registry,
        )
        self.certificate_not_after = Gauge(
            "kustodian_webhook_certificate_expiry_timestamp_seconds",
            "When the serving certificate in force expires (Unix time)", registry=self.registry,
        )
        self.registry.register(CacheCollector(caches))
