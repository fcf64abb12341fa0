"""The metrics every process exposes, scraped as Prometheus scrapes them: plain HTTP on the
metrics address, apart from the TLS admission port (the webhook) or on the controllers' one."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import yaml
from cryptography import x509
from prometheus_client.parser import text_string_to_metric_families

from kustodian.testing.webhooks import webhook_configurations
from tests.conftest import KubeApi
from tests.e2e.conftest import start_webhook, stop_webhook
from tests.e2e.stories import deletion_guard_story
from tests.support import free_port, wait_for

pytestmark = pytest.mark.api

# what an admin's Prometheus rules and dashboard use (charts/kustodian: PrometheusRule, dashboard)
WEBHOOK_METRICS = {
    "process_cpu_seconds": "counter",
    "process_resident_memory_bytes": "gauge",
    "process_open_fds": "gauge",
    "process_start_time_seconds": "gauge",
    "kustodian_admission_requests": "counter",
    "kustodian_admission_duration_seconds": "histogram",
    "kustodian_admission_bad_requests": "counter",
    "kustodian_cache_objects": "gauge",
    "kustodian_cache_synced": "gauge",
    "kustodian_cache_fresh": "gauge",
    "kustodian_cache_relists": "counter",
    "kustodian_cache_lists_expired": "counter",
    "kustodian_tls_certificate_expiry_timestamp_seconds": "gauge",
}
CONTROLLERS_METRICS = {
    "process_cpu_seconds": "counter",
    "process_resident_memory_bytes": "gauge",
    "kustodian_leader_election_is_leader": "gauge",
    "kustodian_workqueue_depth": "gauge",
    "kustodian_workqueue_queue_duration_seconds": "histogram",
    "kustodian_controller_reconcile": "counter",
    "kustodian_controller_reconcile_duration_seconds": "histogram",
    "kustodian_controller_terminal_errors": "counter",
    "kustodian_cache_objects": "gauge",
    "kustodian_cache_fresh": "gauge",
    "kustodian_cache_relists": "counter",
    "kustodian_cache_lists_expired": "counter",
}


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
Scrape = dict[str, tuple[str, Samples]]


def scrape(url: str) -> Scrape:
    """``{family: (type, {(sample name, labels): value})}`` parsed with Prometheus' own text parser."""
    resp = httpx.get(url, timeout=5)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain; version=")  # Prometheus text format
    out: Scrape = {}
    for family in text_string_to_metric_families(resp.text):
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples}
        out[family.name] = (family.type, samples)
    return out


def missing_or_mistyped(got: Scrape, want: dict[str, str]) -> list[str]:
    return sorted(f"{name} ({kind}; got {got[name][0] if name in got else 'nothing'})"
                  for name, kind in want.items() if name not in got or got[name][0] != kind)


def test_the_webhook_serves_every_metric_on_its_plain_http_metrics_port(
        kube_api: KubeApi, rook_crds_installed: None, namespace: str, tmp_path: Path) -> None:
    port = free_port()
    hook = start_webhook(kube_api, tmp_path, "--metrics-listen-address", f"127.0.0.1:{port}")
    configs = webhook_configurations(hook.url, hook.ca_bundle(), name="kustodian-metrics")
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(configs))
    try:
        deletion_guard_story(kube_api, namespace)
        metrics = scrape(f"http://127.0.0.1:{port}/metrics")
        # the admission port keeps TLS: plain HTTP there is refused, the metrics port needs none
        with pytest.raises(httpx.HTTPError):
            httpx.get(hook.url.replace("https://", "http://") + "/metrics", timeout=5)
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5)
        # ready, and the webhook's notes after it (where the csi-addons configuration comes from)
        assert ready.status_code == 200 and ready.text.splitlines()[0] == "ok", ready.text
        assert "csi-addons-config: csi-addons-system/csi-addons-config" in ready.text, ready.text
    finally:
        kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration",
                         "kustodian-metrics", "--ignore-not-found")
        stop_webhook(hook)

    assert missing_or_mistyped(metrics, WEBHOOK_METRICS) == []
    requests = metrics["kustodian_admission_requests"][1]
    denied = [v for (name, labels), v in requests.items()
              if name == "kustodian_admission_requests_total" and ("decision", "denied") in labels
              and ("kind", "CephBlockPool.ceph.rook.io") in labels]
    assert denied and denied[0] >= 2  # the dry run and the real attempt of the story
    relists = metrics["kustodian_cache_relists"][1]
    assert relists[("kustodian_cache_relists_total", (("kind", "PersistentVolume"),))] >= 1
    assert metrics["kustodian_cache_fresh"][1][("kustodian_cache_fresh", (("kind", "PersistentVolume"),))] == 1
    cert = x509.load_pem_x509_certificate((tmp_path / "certs" / "tls.crt").read_bytes())
    (sample,) = metrics["kustodian_tls_certificate_expiry_timestamp_seconds"][1].values()
    assert sample == cert.not_valid_after_utc.timestamp()
    assert metrics["process_resident_memory_bytes"][1][("process_resident_memory_bytes", ())] > 0


def test_the_metrics_address_may_not_be_the_admission_port(tmp_path: Path) -> None:
    from tests.e2e.conftest import kustodian

    proc = kustodian("webhook", "--webhook-insecure-http", "--webhook-port", "9443", "--metrics-listen-address", ":9443",
                     "--kube-api-endpoint", "http://127.0.0.1:1")
    assert proc.returncode != 0
    assert "uses the admission port 9443" in proc.stderr


def leader_metrics(port: int, timeout: float = 20) -> Scrape:
    scrapes: list[Scrape] = []

    def leading() -> bool:
        try:
            got = scrape(f"http://127.0.0.1:{port}/metrics")
        except httpx.TransportError:
            return False
        scrapes.append(got)
        return any(v == 1 for v in got.get("kustodian_leader_election_is_leader", ("", {}))[1].values())

    wait_for(leading, "the controllers to report leading", timeout, poll=0.2)
    return scrapes[-1]


def test_the_controllers_serve_leader_workqueue_and_process_metrics(kube_api: KubeApi, namespace: str,
                                                                    tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    port = free_port()
    log = tmp_path / "controllers.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kustodian", "controllers", "--kubeconfig", str(kube_api.kubeconfig),
             "--namespace", namespace, "--leader-election-identity", "metrics-1",
             "--metrics-listen-address", f"127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
    try:
        metrics = leader_metrics(port)
    finally:
        proc.terminate()
        proc.wait(15)
    assert missing_or_mistyped(metrics, CONTROLLERS_METRICS) == [], log.read_text()
    leader = metrics["kustodian_leader_election_is_leader"][1]
    assert leader == {("kustodian_leader_election_is_leader", (("lease", "kustodian-controllers"),)): 1.0}
    depth = metrics["kustodian_workqueue_depth"][1]
    assert ("kustodian_workqueue_depth", (("controller", "reclaim-space"),)) in depth



def test_a_taken_metrics_port_stops_the_webhook_naming_the_flag(kube_api: KubeApi) -> None:
    import socket

    from tests.e2e.conftest import kustodian

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = kustodian("webhook", "--kubeconfig", str(kube_api.kubeconfig), "--webhook-insecure-http",
                         "--webhook-port", str(free_port()), "--metrics-listen-address", f"127.0.0.1:{port}", timeout=60)
    assert proc.returncode != 0
    assert f"127.0.0.1:{port}: cannot listen: Address already in use" in proc.stderr
