"""Metrics every Kustodian process exposes, whatever it runs (Prometheus naming).

* ``process_*`` (CPU, memory, open files, start time): prometheus_client's process collector,
  added to each process's registry once (:func:`with_process_metrics`);
* watch caches (:class:`CacheCollector`), read at scrape time so the hot path keeps no books:
  ``kustodian_cache_objects``, ``kustodian_cache_synced``, ``kustodian_cache_fresh`` and
  ``kustodian_cache_relists_total`` (a counter: full lists only ever add up).

``kustodian_cache_fresh`` is 1 while a cache can be trusted. Until the caches report freshness
themselves (a watch established after the last list and caught up: ``WatchCache.fresh``), it
falls back to "has listed", the only state a cache exposes today.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["CacheCollector", "with_process_metrics"]


def with_process_metrics(registry: CollectorRegistry) -> CollectorRegistry:
    """Add ``process_*`` to ``registry`` unless it has them already; returns ``registry``."""
    # "Duplicated timeseries": already registered (a second server on the same registry)
    with contextlib.suppress(ValueError):
        ProcessCollector(registry=registry)
    return registry


def _fresh(cache: Any) -> bool:
    fresh = getattr(cache, "fresh", None)
    if fresh is None:
        return bool(cache.synced.is_set())
    return bool(fresh() if callable(fresh) else fresh.is_set() if hasattr(fresh, "is_set") else fresh)


class CacheCollector(Collector):
    """Size, sync state, freshness and relists of the watch caches ``caches()`` returns by name."""

    def __init__(self, caches: Callable[[], Mapping[str, Any]]) -> None:
        self._caches = caches

    def collect(self) -> Iterable[Metric]:
        size = GaugeMetricFamily("kustodian_cache_objects", "Objects held by a watch cache", labels=["kind"])
        synced = GaugeMetricFamily("kustodian_cache_synced", "1 once a watch cache has listed",
                                   labels=["kind"])
        fresh = GaugeMetricFamily("kustodian_cache_fresh", "1 while a watch cache can be trusted for "
                                  "decisions (listed, and watching when the cache reports it)",
                                  labels=["kind"])
        relists = CounterMetricFamily("kustodian_cache_relists", "Full lists done by a watch cache",
                                      labels=["kind"])
        for kind, cache in self._caches().items():
            size.add_metric([kind], float(len(cache)))
            synced.add_metric([kind], 1.0 if cache.synced.is_set() else 0.0)
            fresh.add_metric([kind], 1.0 if _fresh(cache) else 0.0)
            relists.add_metric([kind], float(cache.relists))
        yield size
        yield synced
        yield fresh
        yield relists
