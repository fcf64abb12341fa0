"""Process-wide metrics every component exports, named as Kubernetes components name them.

* ``process_*`` and ``python_*``: prometheus_client's process and platform collectors, on the
  component's own registry (not the global one), as client-go components export ``process_*``;
* ``rest_client_requests_total{code,method,host}`` and
  ``rest_client_request_duration_seconds{verb,host}``: client-go's names, so a dashboard made
  for an upstream controller (local-static-provisioner's node cleanup) reads ours unchanged.
"""

from __future__ import annotations

import contextlib
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, Counter, Histogram, PlatformCollector, ProcessCollector

from kustodian.kube.client import KubeClient

__all__ = ["RestClientMetrics", "register_process_collectors"]


def register_process_collectors(registry: CollectorRegistry) -> None:
    """``process_*`` and ``python_info`` on ``registry`` (idempotent)."""
    for collector in (ProcessCollector, PlatformCollector):
        with contextlib.suppress(ValueError):  # already registered on this registry
            collector(registry=registry)


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
