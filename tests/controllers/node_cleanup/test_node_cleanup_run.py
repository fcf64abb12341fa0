"""``run()`` as the process runs it: leader election on a real Lease, metrics at the upstream path."""

from __future__ import annotations

import threading

import httpx
import pytest

from kustodian.controllers.node_cleanup.main import run
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import LEASES
from kustodian.settings import NodeCleanupSettings
from tests.conftest import KubeApi
from tests.support import free_port, wait_for

pytestmark = pytest.mark.api


def test_run_leads_serves_upstream_metrics_and_releases_the_lease_on_stop(
        kube_api: KubeApi, namespace: str) -> None:
    port = free_port()
    settings = NodeCleanupSettings(kube={"kubeconfig": str(kube_api.kubeconfig), "namespace": namespace},
                                   node_cleanup={"storage_classes": ["local-test"]},
                                   metrics={"listen_address": f"127.0.0.1:{port}", "path": "/custom-metrics"},
                                   leader_election={"identity": "replica-a", "enabled": True})
    stop = threading.Event()
    runner = threading.Thread(target=run, args=(settings,), kwargs={"stop": stop}, daemon=True)
    runner.start()
    try:
        def holder() -> str:
            try:
                lease = kube_api.client.get(LEASES, "kustodian-node-cleanup", namespace)
            except NotFound:
                return ""
            return str(lease.get("spec", {}).get("holderIdentity") or "")

        wait_for(lambda: holder() == "replica-a", "the lease taken")

        def metrics() -> str:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/custom-metrics", timeout=2).text
            except httpx.TransportError:
                return ""

        wait_for(lambda: "kustodian_controller_reconcile" in metrics(), "metrics served")
        body = metrics()
        for name in ("local_volume_node_cleanup_persistentvolumeclaim_delete_total",
                     "local_volume_node_cleanup_persistentvolumeclaim_delete_failed_total",
                     "local_volume_node_cleanup_persistentvolume_delete",
                     "local_volume_node_cleanup_persistentvolume_delete_failed",
                     # issue 19: what a dashboard made for upstream's controller also reads
                     "process_cpu_seconds_total", "process_resident_memory_bytes",
                     "rest_client_requests_total", "rest_client_request_duration_seconds"):
            assert name in body
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).status_code == 404
    finally:
        stop.set()
        runner.join(10)
    assert not runner.is_alive()
    assert holder() == ""  # released: the next replica takes over at once
