"""A DELETE that misses the guard's memo is parsed, checked and decided once (real API server).

The API server calls the webhook over TLS; the webhook runs in this process so every step
of a review can be counted: parsing, the trust checks (``webhook.trust`` through the
registry), the guard's handler, the gather from the caches and the pure decision.  Before,
a review whose decision was not memoised was parsed, checked and handled on the event loop,
given up (``SlowPath``) and done again in a worker thread.
"""

from __future__ import annotations

import base64
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from kustodian.kube.errors import Forbidden
from kustodian.kube.resources import NAMESPACES, PERSISTENT_VOLUMES
from kustodian.policy.deletion.dependents import decide_provider_delete
from kustodian.testing.crds import rook_crds
from kustodian.testing.webhooks import webhook_configurations
from kustodian.webhook import app as webhook_app
from kustodian.webhook import registry as webhook_registry
from kustodian.webhook.features.deletion_guard import memo as guard_memo
from kustodian.webhook.features.deletion_guard.gather import gather_dependents
from kustodian.webhook.review import AdmissionRequest
from tests.conftest import KubeApi, serve_api
from tests.e2e.test_deletion_guard_freshness import POOLS, in_process_webhook
from tests.e2e.test_deletion_guard_live import rbd_pv
from tests.support import wait_for
from tests.webhook.conftest import serve

pytestmark = pytest.mark.api

POOL = "CephBlockPool.ceph.rook.io"
F = TypeVar("F", bound=Callable[..., Any])


@pytest.fixture
def private_api(kube_tools: Path | None) -> Iterator[KubeApi]:
    yield from serve_api(kube_tools)


class Calls:
    """How often each step ran for the reviews of one pool, and on which threads it decided."""

    def __init__(self, pool: str) -> None:
        self.pool = pool
        self.count: Counter[str] = Counter()
        self.decided_on: list[str] = []
        self._lock = threading.Lock()

    def note(self, step: str, req: AdmissionRequest | None = None) -> None:
        if req is None or (req.kind_key == POOL and req.name == self.pool):
            with self._lock:
                self.count[step] += 1

    def wrap_request(self, step: str, fn: F) -> F:
        def counted(*args: Any, **kw: Any) -> Any:
            out = fn(*args, **kw)
            self.note(step, out if isinstance(out, AdmissionRequest) else args[0])
            return out
        return counted  # type: ignore[return-value]

    def wrap_decision(self, step: str, fn: F) -> F:
        def counted(*args: Any, **kw: Any) -> Any:
            self.note(step)
            with self._lock:
                self.decided_on.append(threading.current_thread().name)
            return fn(*args, **kw)
        return counted  # type: ignore[return-value]


def test_a_delete_that_misses_the_memo_is_checked_and_decided_once(
        private_api: KubeApi, tls_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    api = private_api
    for doc in rook_crds():  # Rook's kinds served and followed before the webhook starts
        api.kubectl("create", "-f", "-", input=yaml.safe_dump(doc))
    api.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    hook, client = in_process_webhook(api)
    guard = hook.guard
    assert guard is not None
    # nothing may decide ahead of the request: the warmer and the per-provider metrics stop
    # before the pool exists, so its first DELETE finds no memo
    guard.stop()
    if hook.provider_metrics is not None:
        hook.provider_metrics.stop()
    srv = serve(hook.app, tls_dir)
    try:
        ns = f"kt-{uuid.uuid4().hex[:8]}"
        api.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        api.client.create(POOLS, {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
                                  "metadata": {"name": "pool-a", "namespace": ns},
                                  "spec": {"replicated": {"size": 3}}}, ns)
        api.client.create(PERSISTENT_VOLUMES, rbd_pv(f"{ns}-pv", ns, "pool-a"))
        wait_for(lambda: hook.view.get(POOL, ns, "pool-a") is not None
                 and hook.view.get("PersistentVolume", "", f"{ns}-pv") is not None,
                 "the pool and its PV in the webhook's caches", 30)
        calls = Calls("pool-a")
        monkeypatch.setattr(webhook_app, "parse_review", calls.wrap_request("parsed", webhook_app.parse_review))
        monkeypatch.setattr(webhook_registry, "_untrusted",
                            calls.wrap_request("trust-checked", webhook_registry._untrusted))
        handlers = hook.registry.validators[(POOL, "DELETE")]
        handlers[:] = [calls.wrap_request("handled", h) for h in handlers]
        monkeypatch.setattr(guard_memo, "gather_dependents",
                            calls.wrap_decision("gathered", gather_dependents))
        monkeypatch.setattr(guard_memo, "decide_provider_delete",
                            calls.wrap_decision("decided", decide_provider_delete))
        api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(
            webhook_configurations(srv.url, _ca_bundle(srv.ca))))
        hits, computed = guard.memo_hits, guard.memo_misses

        with pytest.raises(Forbidden) as refused:
            api.client.delete(POOLS, "pool-a", ns)
        assert f"{ns}-pv" in str(refused.value)
        assert dict(calls.count) == {"parsed": 1, "trust-checked": 1, "handled": 1, "gathered": 1,
                                     "decided": 1}, calls.count
        assert (guard.memo_hits, guard.memo_misses) == (hits, computed + 1)  # a miss, computed once
        assert calls.decided_on and srv.thread.name not in calls.decided_on  # in a worker thread

        # the same DELETE again: answered from the memo, nothing gathered or decided again
        with pytest.raises(Forbidden):
            api.client.delete(POOLS, "pool-a", ns)
        assert dict(calls.count) == {"parsed": 2, "trust-checked": 2, "handled": 2, "gathered": 1,
                                     "decided": 1}, calls.count
        assert guard.memo_hits == hits + 1
        assert api.client.get(POOLS, "pool-a", ns) is not None
    finally:
        api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", "kustodian",
                    "--ignore-not-found")
        srv.stop()
        hook.stop()
        client.close()


def _ca_bundle(ca: Path) -> str:
    return base64.b64encode(ca.read_bytes()).decode()
