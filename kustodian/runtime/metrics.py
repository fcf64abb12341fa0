"""Metrics every Kustodian process exposes, whatever it runs, named as Kubernetes components name them.

* ``process_*`` and ``python_info``: prometheus_client's process and platform collectors, on the
  component's own registry (not the global one), as client-go components export ``process_*``
  (:func:`with_process_metrics`);
* ``rest_client_requests_total{code,method,host}`` and
  ``rest_client_request_duration_seconds{verb,host}``: client-go's names, so a dashboard made
  for an upstream controller (local-static-provisioner's node cleanup) reads ours unchanged
  (:class:`RestClientMetrics`);
* watch caches (:class:`CacheCollector`), read at scrape time so the hot path keeps no books:
  ``kustodian_cache_objects``, ``kustodian_cache_synced``, ``kustodian_cache_fresh`` and
  ``kustodian_cache_relists_total`` (a counter: full lists only ever add up).

``kustodian_cache_fresh`` is 1 while a cache can be trusted: ``WatchCache.fresh`` when the cache
reports it (a watch established after the last list and caught up), else "has listed".
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, Counter, Histogram, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient

__all__ = ["CacheCollector", "RestClientMetrics", "register_process_collectors", "with_process_metrics"]


def register_process_collectors(registry: CollectorRegistry) -> None:
    """``process_*`` and ``python_info`` on ``registry`` (idempotent)."""
    for collector in (ProcessCollector, PlatformCollector):
        with contextlib.suppress(ValueError):  # already registered on this registry
            collector(registry=registry)


def with_process_metrics(registry: CollectorRegistry) -> CollectorRegistry:
    """Add ``process_*`` to ``registry`` unless it has them already; returns ``registry``."""
    register_process_collectors(registry)
    return registry


class RestClientMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter("rest_client_requests", "Requests to the API server, by status code, "
                                "method and host", ["code", "method", "host"], registry=registry)
        self.latency = Histogram("rest_client_request_duration_seconds", "Request latency, by verb and host",
                                 ["verb", "host"], registry=registry,
                                 buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0))

    def attach(self, client: KubeClient) -> None:
        host = urlsplit(client.config.server).netloc

        def observe(method: str, code: str, seconds: float) -> None:
            self.requests.labels(code, method, host).inc()
            self.latency.labels(method, host).observe(seconds)

        client.observers.append(observe)


class CacheCollector(Collector):
    """Size, sync state, freshness, staleness, relists and expired lists of the watch caches
    ``caches()`` returns by name."""

    def __init__(self, caches: Callable[[], Mapping[str, WatchCache]]) -> None:
        self._caches = caches

    def collect(self) -> Iterable[Metric]:
        size = GaugeMetricFamily("kustodian_cache_objects", "Objects held by a watch cache", labels=["kind"])
        synced = GaugeMetricFamily("kustodian_cache_synced", "1 once a watch cache has listed",
                                   labels=["kind"])
        fresh = GaugeMetricFamily("kustodian_cache_fresh", "1 while a watch cache is current (its watch "
                                  "established after its last list): decisions may read it",
                                  labels=["kind"])
        stale = GaugeMetricFamily("kustodian_cache_stale_seconds", "Seconds a watch cache has not been fresh",
                                  labels=["kind"])
        age = GaugeMetricFamily("kustodian_cache_last_event_age_seconds",
                                "Seconds since a watch cache's last list, event or bookmark", labels=["kind"])
        relists = CounterMetricFamily("kustodian_cache_relists", "Full lists done by a watch cache",
                                      labels=["kind"])
        expired = CounterMetricFamily("kustodian_cache_lists_expired",
                                      "Lists of a watch cache cut short by a 410 on their continue token "
                                      "(the list outlasted it; listed again)", labels=["kind"])
        for kind, cache in list(self._caches().items()):
            size.add_metric([kind], float(len(cache)))
            synced.add_metric([kind], 1.0 if cache.synced.is_set() else 0.0)
            fresh.add_metric([kind], 1.0 if cache.fresh else 0.0)
            relists.add_metric([kind], float(cache.relists))
            expired.add_metric([kind], float(cache.lists_expired))
            stale.add_metric([kind], cache.stale_for())
            last = cache.last_event_age()
            if last is not None:
                age.add_metric([kind], last)
        yield from (size, synced, fresh, stale, age, relists, expired)
