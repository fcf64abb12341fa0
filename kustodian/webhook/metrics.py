"""Prometheus metrics of the webhook, on a registry of its own (one per app).

Served on the plain-HTTP metrics address (``--metrics-listen-address``, apart from the TLS admission
port) and, for compatibility, at ``/metrics`` on the admission port.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from cryptography import x509
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kustodian.kube.cache import WatchCache
from kustodian.runtime import CacheCollector, with_process_metrics

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class CertificateCollector(Collector):
    """``kustodian_tls_certificate_expiry_timestamp_seconds``: when the served certificate expires.

    Read from the file at scrape time, so a renewed pair (built-in TLS, cert-manager) shows at
    once; a file that cannot be read yields no sample (the alert then sees ``absent``).
    """

    def __init__(self, cert_file: Callable[[], str | None]) -> None:
        self._cert_file = cert_file

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily("kustodian_tls_certificate_expiry_timestamp_seconds",
                                   "Unix time when the serving certificate expires", labels=["file"])
        path = self._cert_file()
        if path:
            try:
                cert = x509.load_pem_x509_certificate(Path(path).read_bytes())
            except (OSError, ValueError):
                cert = None
            if cert is not None:
                family.add_metric([path], cert.not_valid_after_utc.timestamp())
        yield family


class RuleKindsCollector(Collector):
    """``kustodian_rule_kind_served{kind}``: 1 when a kind a rule names is served (its CRD exists)."""

    def __init__(self, kinds: Any) -> None:
        self._kinds = kinds  # kube.kinds.FollowedKinds

    def collect(self) -> Iterable[Metric]:
        served = GaugeMetricFamily("kustodian_rule_kind_served",
                                   "1 when a kind a rule names is served by the cluster (its CRD exists)",
                                   labels=["kind"])
        unserved = set(self._kinds.unserved())
        for kind in sorted(self._kinds.wanted):
            served.add_metric([kind], 0.0 if kind in unserved else 1.0)
        yield served


class WebhookMetrics:
    def __init__(self, caches: Callable[[], Mapping[str, WatchCache]] | None = dict,
                 cert_file: Callable[[], str | None] | None = None, kinds: Any = None,
                 registry: CollectorRegistry | None = None) -> None:
        self.registry = with_process_metrics(registry if registry is not None else CollectorRegistry())
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
        if caches is not None:  # else the caches' Manager reports them on this registry
            self.registry.register(CacheCollector(caches))
        if kinds is not None:
            self.registry.register(RuleKindsCollector(kinds))
        if cert_file is not None:
            self.registry.register(CertificateCollector(cert_file))
