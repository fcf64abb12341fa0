"""The deletion guard never allows on stale or missing knowledge (real API server, real etcd).

Each test gets its own kube-testserver, because it stops the API server, edits etcd
behind its back or starts with no Rook CRDs at all.  Changes made directly in etcd
while the API server is down stand for writes through another API server of an HA
control plane: our watch could not see them, only a re-list can.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.kinds import wait_fresh
from kustodian.kube.resources import NAMESPACES, Resource
from kustodian.settings import WebhookSettings
from kustodian.testing.crds import rook_crds
from kustodian.testing.testserver import TestServer
from kustodian.testing.webhooks import webhook_configurations
from kustodian.webhook.app import parse_review
from kustodian.webhook.main import Webhook, build_webhook
from kustodian.webhook.review import Answer
from tests.conftest import KubeApi, serve_api
from tests.e2e.conftest import start_webhook, stop_webhook
from tests.support import wait_for

pytestmark = pytest.mark.api

POOLS = Resource("ceph.rook.io", "v1", "cephblockpools", "CephBlockPool", True)
NFSES = Resource("ceph.rook.io", "v1", "cephnfses", "CephNFS", True)
NFS_CRD_KEY = "/registry/apiextensions.k8s.io/customresourcedefinitions/cephnfses.ceph.rook.io"


@pytest.fixture
def private_api(kube_tools: Path | None) -> Iterator[KubeApi]:
    """A kube-testserver of this test's own (restarts and etcd edits stay here)."""
    yield from serve_api(kube_tools)


def delete_review(kind: dict[str, str], resource: str, obj: dict[str, Any]) -> bytes:
    meta = obj["metadata"]
    return orjson.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": str(uuid.uuid4()), "kind": kind, "operation": "DELETE",
                    "resource": {**kind, "resource": resource}, "name": meta["name"],
                    "namespace": meta.get("namespace", ""), "userInfo": {"username": "test"},
                    "oldObject": obj, "dryRun": True}})


@dataclass
class Seen:
    at: float
    answer: Answer


class Hammer:
    """Asks the guard the same question every few ms from a thread, keeping every answer."""

    def __init__(self, ask: Callable[[], Answer]) -> None:
        self.ask = ask
        self.answers: list[Seen] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Hammer:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.answers.append(Seen(time.monotonic(), self.ask()))
            self._stop.wait(0.005)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def last(self) -> Answer | None:
        return self.answers[-1].answer if self.answers else None


def etcd_put(server: TestServer, key: str, obj: dict[str, Any]) -> None:
    server.etcd("/v3/kv/put", {"key": base64.b64encode(key.encode()).decode(),
                               "value": base64.b64encode(json.dumps(obj).encode()).decode()})


def nfs(ns: str, name: str, pool: str) -> dict[str, Any]:
    return {"apiVersion": "ceph.rook.io/v1", "kind": "CephNFS",
            "metadata": {"name": name, "namespace": ns, "uid": str(uuid.uuid4()),
                         "creationTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "generation": 1},
            "spec": {"rados": {"pool": pool}}}


def rook_and_a_pool(api: KubeApi, real_crds: Path | None = None) -> tuple[str, dict[str, Any]]:
    """Rook's CRDs installed and Established (``real_crds``: upstream's ``crds.yaml``; else the
    test tier's schemaless stand-ins, which these tests delete from etcd), a fresh namespace,
    and CephBlockPool ``pool-a`` in it."""
    if real_crds is not None:
        api.kubectl("apply", "--server-side", "-f", str(real_crds), timeout=120)
    else:
        for doc in rook_crds():
            api.kubectl("create", "-f", "-", input=yaml.safe_dump(doc))
    api.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    ns = f"kt-{uuid.uuid4().hex[:8]}"
    api.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    pool = api.client.create(POOLS, {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
                                     "metadata": {"name": "pool-a", "namespace": ns},
                                     "spec": {"replicated": {"size": 3}}}, ns)
    return ns, pool


def in_process_webhook(api: KubeApi) -> tuple[Webhook, KubeClient]:
    client = KubeClient(load_config(str(api.kubeconfig)))
    hook = build_webhook(WebhookSettings(reclaim={"enabled": False}, capacity={"enabled": False},
                                         webhook={"insecure_http": True}), client)
    hook.start_caches()
    assert wait_fresh(hook.caches, 30), f"caches never fresh: {hook.kinds and hook.kinds.stale()}"
    return hook, client


@pytest.mark.parametrize("variant", ["restart", "compaction", "crd-gone"])
def test_no_delete_is_allowed_before_the_caches_caught_up_after_an_api_server_restart(
        private_api: KubeApi, variant: str) -> None:
    server = private_api.require_server()
    ns, pool = rook_and_a_pool(private_api)
    if variant == "crd-gone":  # the dependent exists and is seen; then its API vanishes for a while
        private_api.client.create(NFSES, {k: v for k, v in nfs(ns, "nfs-x", "pool-a").items()
                                          if k != "metadata"} | {"metadata": {"name": "nfs-x", "namespace": ns}},
                                  ns)
    hook, client = in_process_webhook(private_api)
    review = parse_review(delete_review({"group": "ceph.rook.io", "version": "v1", "kind": "CephBlockPool"},
                                        "cephblockpools", pool))
    hammer = Hammer(lambda: hook.registry.validate_now(review))
    try:
        if variant != "crd-gone":
            before = hook.registry.validate_now(review)
            assert before.allowed, before.message  # no dependents yet: the baseline is "allowed"
        else:
            wait_for(lambda: not hook.registry.validate_now(review).allowed, "nfs-x to be seen", 15)

        def while_down() -> None:
            if variant == "crd-gone":
                server.etcd_delete(NFS_CRD_KEY)  # the CephNFS API is gone, its objects stay in etcd
            else:
                etcd_put(server, f"/registry/ceph.rook.io/cephnfses/{ns}/nfs-x", nfs(ns, "nfs-x", "pool-a"))
            if variant == "compaction":
                server.etcd_bump_and_compact()  # resuming any watch from our resourceVersion is a 410
            hammer.start()

        server.restart_apiserver(between=while_down)
        back = time.monotonic()
        if variant == "crd-gone":
            # real time is the subject: the API stays away for a while (3 s by the clock) with the
            # server up, and every answer meanwhile must be a refusal
            time.sleep(3)
            private_api.kubectl("create", "-f", "-",
                                input=yaml.safe_dump(next(d for d in rook_crds()
                                                          if d["metadata"]["name"] == "cephnfses.ceph.rook.io")))

        def caught_up() -> bool:
            last = hammer.last()
            return last is not None and last.code == 403 and "nfs-x" in last.message

        wait_for(caught_up, "the guard to deny with the dependent written while the API server was down", 60)
        caught = time.monotonic()
        wait_for(lambda: sum(1 for s in list(hammer.answers) if s.at >= caught) >= 50,
                 "50 answers after catch-up", 30)
    finally:
        hammer.stop()
        hook.stop()
        client.close()

    codes = [(s.answer.allowed, s.answer.code) for s in hammer.answers]
    allowed = [s for s in hammer.answers if s.answer.allowed]
    assert not allowed, f"{len(allowed)} of {len(codes)} DELETEs were ALLOWED before catch-up"
    assert {c for _, c in codes} <= {503, 403}, codes
    refusals = [s.answer.message for s in hammer.answers if s.answer.code == 503]
    assert refusals, "the guard never noticed it was stale"
    bad = [m for m in refusals if not ("retry in a few seconds" in m and re.search(r" for \d+\.\ds", m))]
    assert not bad, bad[:2]
    assert any("CephNFS.ceph.rook.io" in m or "CustomResourceDefinition" in m for m in refusals), refusals[:3]
    assert all(s.answer.code == 403 and "nfs-x" in s.answer.message
               for s in hammer.answers if s.at >= caught), "after catch-up the decision must stay right"
    print(f"{variant}: {len(codes)} answers, {len(refusals)} x 503, caught up {caught - back:.2f}s after the "
          f"API server came back")


def test_rook_installed_after_the_webhook_is_guarded_once_its_caches_are_fresh(
        private_api: KubeApi, upstream: Path, tmp_path: Path) -> None:
    api = private_api
    stop = threading.Event()
    hook = start_webhook(api, tmp_path)  # no Rook CRD exists yet: ready, with Rook kinds unserved
    try:
        with hook.http() as http:
            ready = http.get("/readyz")
            assert ready.status_code == 200, ready.text
            assert "CephCluster.ceph.rook.io" in ready.text and "unserved" in ready.text
            assert 'kustodian_rule_kind_served{kind="CephCluster.ceph.rook.io"} 0.0' in http.get("/metrics").text
        api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(webhook_configurations(hook.url, hook.ca_bundle())))
        ns = f"kt-{uuid.uuid4().hex[:8]}"
        api.kubectl("create", "namespace", ns)
        cluster: dict[str, Any] = {"apiVersion": "ceph.rook.io/v1", "kind": "CephCluster",
                   "metadata": {"name": "my-cluster", "namespace": ns},
                   "spec": {"dataDirHostPath": "/var/lib/rook", "mon": {"count": 1},
                            "cephVersion": {"image": "quay.io/ceph/ceph:v19"}}}
        pool = {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
                "metadata": {"name": "pool-b", "namespace": ns}, "spec": {"replicated": {"size": 1}}}
        review = delete_review({"group": "ceph.rook.io", "version": "v1", "kind": "CephCluster"}, "cephclusters",
                               {**cluster, "metadata": {**cluster["metadata"], "uid": "u1"}})
        answers: list[tuple[float, int, str]] = []

        def ask() -> None:
            with hook.http() as http:
                while not stop.is_set():
                    resp = http.post("/validate", content=review).json()["response"]
                    status = resp.get("status") or {}
                    answers.append((time.monotonic(), 200 if resp["allowed"] else status["code"],
                                    status.get("message", "")))
                    stop.wait(0.005)

        asker = threading.Thread(target=ask, daemon=True)
        crds_applied = time.monotonic()
        api.kubectl("create", "-f", str(upstream / "rook" / "crds.yaml"))
        asker.start()
        api.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([cluster, pool]))
        objects_in = time.monotonic()
        denied = ""
        deadline = objects_in + 30
        while time.monotonic() < deadline:
            proc = api.kubectl("delete", "cephcluster", "my-cluster", "-n", ns, check=False)
            out = proc.stdout + proc.stderr
            assert proc.returncode != 0, f"CephCluster deleted while pool-b exists:\n{out}"
            if "cannot be deleted" in out:
                denied = out
                break
            assert "retry in a few seconds" in out, out  # the only other acceptable answer: 503
        caught_up = time.monotonic() - objects_in
        wait_for(lambda: sum(1 for a in list(answers) if a[0] >= objects_in + caught_up) >= 20,
                 "20 answers after the denial", 30)
        stop.set()
        asker.join(5)
        assert "pool-b" in denied and "CephBlockPools" in denied, denied
        # Once the guard has denied (it has seen pool-b), nothing after is ever allowed. Between the
        # API write and its watch event reaching the webhook (milliseconds), an answer can still be
        # "allowed": the documented limit of a watch-fed guard without a per-DELETE read (README,
        # "Never on stale or missing knowledge"); it must stay within a second of the write.
        first_denial = next(t for t, code, _ in answers if code == 403)
        after = [a for a in answers if a[0] >= first_denial]
        assert after and all(code in (503, 403) for _, code, _ in after), after[:5]
        lagging = [a for a in answers if objects_in <= a[0] < first_denial and a[1] == 200]
        assert all(t - objects_in < 1.0 for t, _, _ in lagging), lagging[:5]
        assert after[-1][1] == 403 and "pool-b" in after[-1][2]
        early = [a for a in answers if a[0] < objects_in]
        # before the Rook caches were fresh, answers were refusals (503) or, while no CephBlockPool
        # could exist yet, correctly "allowed"; a 503 must have been seen for a Rook kind
        assert any(code == 503 for _, code, _ in answers), \
            f"never saw a 503 between CRD install and fresh caches: {sorted({c for _, c, _ in early})}"
        print(f"rook after start: denied {caught_up:.2f}s after the objects were applied; "
              f"{sum(1 for _, c, _ in answers if c == 503)} x 503; CRDs applied at +0, objects at "
              f"+{objects_in - crds_applied:.2f}s")
    finally:
        stop.set()
        api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", "kustodian",
                    "--ignore-not-found", check=False)
        stop_webhook(hook)
