"""Dependents kept live on a real API server: PVs deleted through the API reach the pool's kept
decision through the webhook's own watch, one event at a time, and no decision is computed
again (``kustodian_deletion_guard_memo_total``).  The in-process equivalence history is in
``tests/webhook/test_deletion_guard_live.py``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from kustodian.kube.resources import PERSISTENT_VOLUMES
from kustodian.webhook.app import parse_review
from kustodian.webhook.main import Webhook
from tests.conftest import KubeApi, serve_api
from tests.e2e.test_deletion_guard_freshness import delete_review, in_process_webhook, rook_and_a_pool
from tests.support import wait_for

pytestmark = pytest.mark.api

PVS = 12


@pytest.fixture
def private_api(kube_tools: Path | None) -> Iterator[KubeApi]:
    yield from serve_api(kube_tools)


def rbd_pv(name: str, ns: str, pool: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain",
                     "csi": {"driver": "rook-ceph.rbd.csi.ceph.com", "volumeHandle": f"0001-{name}",
                             "volumeAttributes": {"clusterID": ns, "pool": pool}}}}


def memo_counts(hook: Webhook) -> dict[str, float]:
    """``kustodian_deletion_guard_memo_total`` by event, as /metrics serves it."""
    text = generate_latest(hook.app.state.metrics.registry)
    return {m.group(1).decode(): float(m.group(2))
            for m in re.finditer(rb'kustodian_deletion_guard_memo_total\{event="(\w+)"\} (\S+)', text)}


def test_pvs_deleted_through_the_api_are_applied_to_the_pools_kept_decision(private_api: KubeApi,
                                                                            upstream: Path) -> None:
    api = private_api
    ns, pool = rook_and_a_pool(api, upstream / "rook" / "crds.yaml")  # Rook's real CRDs
    names = [f"{ns}-pv-{i:02d}" for i in range(PVS)]
    for name in names:
        api.client.create(PERSISTENT_VOLUMES, rbd_pv(name, ns, "pool-a"))
    api.client.create(PERSISTENT_VOLUMES, rbd_pv(f"{ns}-elsewhere", ns, "pool-b"))
    hook, client = in_process_webhook(api)
    review = parse_review(delete_review({"group": "ceph.rook.io", "version": "v1", "kind": "CephBlockPool"},
                                        "cephblockpools", pool))
    assert hook.guard is not None
    try:
        wait_for(lambda: all(n in hook.registry.validate_now(review).message for n in names),
                 "the pool's DELETE to be denied with every PV", 30)
        computed = memo_counts(hook)["computed"]
        for i, name in enumerate(names):
            client.delete(PERSISTENT_VOLUMES, name)
            wait_for(lambda name=name: name not in hook.registry.validate_now(review).message,  # type: ignore[misc]
                     f"{name} to leave the decision", 15)
            answer = hook.registry.validate_now(review)
            assert answer.allowed is (i == PVS - 1), answer.message
            if not answer.allowed:
                assert names[-1] in answer.message and f"{ns}-elsewhere" not in answer.message
        counts = memo_counts(hook)
    finally:
        hook.stop()
        client.close()
    assert counts["computed"] == computed, "a dependent's change made the guard walk the pool again"
    assert counts["applied"] >= PVS and counts["hit"] >= PVS
