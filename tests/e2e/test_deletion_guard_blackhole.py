"""A silent partition (issue 32): the connection to the API server drops every byte, no FIN, no RST.

The webhook's client reaches kube-testserver through ``tests.faultproxy.FaultProxy``; the
test writes through its own client, straight to the API server.  While the hole is open the
webhook's watches look alive (no error ever reaches them), so only the round trips of
``kube.liveness`` can tell: a pool that gained a PV meanwhile is never allowed to go, an
allow is answered 503 for want of proof, the kinds turn stale and ``/readyz`` fails within
10 s; once the route is back the guard decides right within 5 s.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.kinds import wait_fresh
from kustodian.kube.resources import PERSISTENT_VOLUMES
from kustodian.settings import WebhookSettings
from kustodian.webhook.app import parse_review
from kustodian.webhook.main import build_webhook
from kustodian.webhook.review import AdmissionRequest, Answer
from tests.conftest import KubeApi, serve_api
from tests.e2e.test_deletion_guard_freshness import POOLS, delete_review, rook_and_a_pool
from tests.e2e.test_deletion_guard_live import rbd_pv
from tests.faultproxy import FaultProxy
from tests.support import wait_for

pytestmark = pytest.mark.api

POOL_KIND = {"group": "ceph.rook.io", "version": "v1", "kind": "CephBlockPool"}
DETECTED_WITHIN = 10.0  # issue 32: stale and not ready within 10 s of the partition
RIGHT_WITHIN = 5.0  # issue 32: right decisions within 5 s of the route coming back


@pytest.fixture
def private_api(kube_tools: Path | None) -> Iterator[KubeApi]:
    yield from serve_api(kube_tools)


class Probe:
    """``GET`` on the webhook app in process (what the kubelet's readiness probe asks)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def get(self, path: str) -> httpx.Response:
        async def get() -> httpx.Response:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app),
                                         base_url="http://webhook") as http:
                return await http.get(path)

        return asyncio.run(get())


class Asker:
    """Asks the guard about ``reviews`` in a loop from a thread of its own (each answer may wait for
    a round trip), keeping every answer with the time it was asked."""

    def __init__(self, ask: dict[str, AdmissionRequest], validate: object) -> None:
        self.ask = ask
        self.validate = validate
        self.answers: list[tuple[float, str, Answer]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for what, req in self.ask.items():
                asked = time.monotonic()
                self.answers.append((asked, what, self.validate(req)))  # type: ignore[operator]
            self._stop.wait(0.01)

    def __enter__(self) -> Asker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def test_a_silent_partition_never_lets_a_pool_with_a_new_pv_go_and_heals_within_seconds(
        private_api: KubeApi) -> None:
    api = private_api
    server = api.require_server()
    ns, pool_a = rook_and_a_pool(api)
    pool_b = api.client.create(POOLS, {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
                                       "metadata": {"name": "pool-b", "namespace": ns},
                                       "spec": {"replicated": {"size": 3}}}, ns)
    proxy = FaultProxy("127.0.0.1", server.port)
    client = KubeClient(load_config(str(api.kubeconfig), proxy.url))
    hook = build_webhook(WebhookSettings(reclaim={"enabled": False}, capacity={"enabled": False},
                                         webhook={"insecure_http": True}), client)
    probe = Probe(hook.app)
    gains_a_pv = parse_review(delete_review(POOL_KIND, "cephblockpools", pool_a))
    stays_empty = parse_review(delete_review(POOL_KIND, "cephblockpools", pool_b))
    validate = hook.registry.validate_now
    try:
        hook.start_caches()
        assert wait_fresh(hook.caches, 30), f"caches never fresh: {hook.kinds and hook.kinds.stale()}"
        # the baseline: no dependents yet, and the API server answers (on a loaded machine one round
        # trip may miss its 1 s budget: that answer is a 503, and the next is asked)
        wait_for(lambda: validate(gains_a_pv).allowed and validate(stays_empty).allowed,
                 "both pools to be allowed before the partition", 15)
        wait_for(lambda: probe.get("/readyz").status_code == 200, "/readyz to pass before the partition", 15)

        proxy.blackhole()
        cut = time.monotonic()
        pv = rbd_pv(f"{ns}-pv-in-the-dark", ns, "pool-a")
        api.client.create(PERSISTENT_VOLUMES, pv)  # straight to the API server: the webhook cannot see it
        with Asker({"pool-a": gains_a_pv, "pool-b": stays_empty}, validate) as asker:
            during = validate(gains_a_pv)
            assert not during.allowed and during.code == 503, (during.code, during.message)

            # real time is the subject: the partition must be noticed by the clock, no DELETE needed
            def detected() -> bool:
                ready = probe.get("/readyz")
                return (ready.status_code == 503 and "api-server-answers" in ready.text
                        and hook.kinds is not None and "PersistentVolume" in hook.kinds.stale())

            wait_for(detected, "the kinds to turn stale and /readyz to fail", DETECTED_WITHIN + 5)
            noticed = time.monotonic() - cut
            assert noticed <= DETECTED_WITHIN, f"the silent partition was noticed only after {noticed:.1f}s"
            empty = validate(stays_empty)  # an allow-path DELETE during the partition
            assert not empty.allowed and empty.code == 503, (empty.code, empty.message)
            assert "PersistentVolume" in empty.message, empty.message
            healed_at = time.monotonic()
            proxy.restore()

            def refused_with_its_pv() -> bool:
                answer = validate(gains_a_pv)
                return answer.code == 403 and pv["metadata"]["name"] in answer.message  # type: ignore[index]

            wait_for(refused_with_its_pv, "the pool refused with the PV made during the partition",
                     RIGHT_WITHIN + 10)
            right = time.monotonic() - healed_at
            assert right <= RIGHT_WITHIN, f"decisions were right only {right:.1f}s after the route came back"
            wait_for(lambda: validate(stays_empty).allowed, "the empty pool to be allowed again", 10)
        wait_for(lambda: probe.get("/readyz").status_code == 200, "/readyz to pass again", 10)
    finally:
        proxy.restore()
        hook.stop()
        client.close()
        proxy.close()

    early = [(round(at - cut, 2), what) for at, what, answer in asker.answers
             if what == "pool-a" and answer.allowed]
    assert not early, f"the pool that gained a PV was ALLOWED to go: {early}"
    empty_allowed = [round(at - cut, 2) for at, what, answer in asker.answers
                     if what == "pool-b" and answer.allowed and at < healed_at]
    assert not empty_allowed, f"allows sent during the partition without proof: {empty_allowed}"
    assert any(what == "pool-b" and not answer.allowed and answer.code == 503
               for _, what, answer in asker.answers)
