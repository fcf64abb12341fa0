"""The Manager against a real API server: a leader that cannot sync gives the Lease up; any error
is retried with backoff, a Terminal one is not; one cache per kind shared by every user."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from kustodian.errors import Terminal
from kustodian.kube.cache import object_key
from kustodian.kube.errors import Invalid, NotFound
from kustodian.kube.resources import CONFIG_MAPS, LEASES, Resource
from kustodian.runtime.manager import LeaderElection, Manager
from kustodian.runtime.workqueue import Result
from tests.conftest import KubeApi
from tests.support import wait_for

pytestmark = pytest.mark.api

# a kind no CRD serves: its list answers 404 forever, so its cache can never sync
MISSING = Resource("missing.kustodian.io", "v1", "widgets", "Widget", True)


class Recorder:
    """A reconciler over the ConfigMaps of one namespace; ``behave`` decides each pass."""

    name = "recorder"

    def __init__(self, manager: Manager, namespace: str, behave: Any = None) -> None:
        self.primary = manager.cache(CONFIG_MAPS, namespace=namespace)
        self.calls: list[tuple[str, float]] = []
        self.behave = behave

    def wire(self, enqueue: Any) -> None:
        self.primary.add_handler(lambda etype, new, old: enqueue(object_key(new or old or {})))

    def reconcile(self, key: str) -> Result | None:
        self.calls.append((key, time.monotonic()))
        if self.behave is not None:
            self.behave(key, len([c for c in self.calls if c[0] == key]))
        return None


def _lease_holder(kube_api: KubeApi, namespace: str, name: str) -> str:
    try:
        lease = kube_api.client.get(LEASES, name, namespace)
    except NotFound:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def test_a_leader_whose_caches_cannot_sync_gives_the_lease_up_and_exits_non_zero(
        kube_api: KubeApi, namespace: str) -> None:
    lease = f"ctl-{uuid.uuid4().hex[:6]}"
    fast = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}
    zombie = Manager(kube_api.client, name="replica-1", sync_timeout=2.0,
                     leader_election=LeaderElection(namespace, lease, "replica-1", **fast))
    zombie.cache(MISSING)  # e.g. a CRD that is not installed
    Recorder(zombie, namespace)
    rc: list[int] = []
    started = time.monotonic()
    thread = threading.Thread(target=lambda: rc.append(zombie.run(threading.Event())), daemon=True)
    thread.start()
    wait_for(lambda: _lease_holder(kube_api, namespace, lease) == "replica-1", "replica-1 leads", timeout=10)
    thread.join(15)
    assert rc == [1], "a leader that cannot sync must exit non-zero"
    assert time.monotonic() - started < 2.0 + 5.0  # the sync timeout, plus election and release
    assert _lease_holder(kube_api, namespace, lease) == "", "the Lease was not released"
    assert not zombie.acting

    # a second replica that can sync takes over at once (no wait for the lease to expire)
    healthy = Manager(kube_api.client, name="replica-2", sync_timeout=10.0,
                      leader_election=LeaderElection(namespace, lease, "replica-2", **fast))
    rec = Recorder(healthy, namespace)
    healthy.add(rec)
    stop = threading.Event()
    rc2: list[int] = []
    second = threading.Thread(target=lambda: rc2.append(healthy.run(stop)), daemon=True)
    taken_from = time.monotonic()
    second.start()
    try:
        wait_for(lambda: healthy.acting, "replica-2 acts", timeout=10)
        assert time.monotonic() - taken_from < 3.0
        assert _lease_holder(kube_api, namespace, lease) == "replica-2"
    finally:
        stop.set()
        second.join(15)
    assert rc2 == [0]


def test_an_unexpected_error_is_retried_with_backoff_until_it_succeeds_and_terminal_is_not(
        kube_api: KubeApi, namespace: str) -> None:
    """The first pass of ``flaky`` makes a real write the API server refuses (422); the retry
    succeeds.  ``doomed`` raises Terminal: exactly one pass."""

    def behave(key: str, attempt: int) -> None:
        name = key.partition("/")[2]
        if name == "flaky":
            value = "not a valid label value!" if attempt == 1 else "fixed"
            kube_api.client.patch(CONFIG_MAPS, name, {"metadata": {"labels": {"state": value}}}, namespace)
        elif name == "doomed":
            raise Terminal("this ConfigMap can never be made right")

    manager = Manager(kube_api.client, name="retry", sync_timeout=10.0, resync_period=0)
    rec = Recorder(manager, namespace, behave)
    queue = manager.add(rec)
    for name in ("flaky", "doomed"):
        kube_api.client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": name, "namespace": namespace}})
    stop = threading.Event()
    thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
    thread.start()
    try:
        flaky = f"{namespace}/flaky"
        wait_for(lambda: (kube_api.client.get(CONFIG_MAPS, "flaky", namespace)["metadata"].get("labels") or {})
                 .get("state") == "fixed", "the retried pass fixed the ConfigMap")
        attempts = [t for k, t in rec.calls if k == flaky]
        assert len(attempts) >= 2 and attempts[1] - attempts[0] >= 0.04  # backed off, not a hot loop
        reg = manager.registry
        assert (reg.get_sample_value("kustodian_controller_reconcile_total",
                                     {"controller": "recorder", "result": "retry"}) or 0) >= 1
        # nothing ready, planned or running: no retry of "doomed" can come any more
        wait_for(lambda: queue.pending() == 0, "the queue to hold no key")
        assert [k for k, _ in rec.calls].count(f"{namespace}/doomed") == 1
        assert reg.get_sample_value("kustodian_controller_terminal_errors_total",
                                    {"controller": "recorder"}) == 1.0
    finally:
        stop.set()
        thread.join(15)
    # the 422 was real: the API server refused the first write
    with pytest.raises(Invalid):
        kube_api.client.patch(CONFIG_MAPS, "flaky", {"metadata": {"labels": {"state": "bad value!"}}}, namespace)


def test_one_cache_per_kind_is_shared_and_indexes_are_merged(kube_api: KubeApi) -> None:
    manager = Manager(kube_api.client, name="shared")
    a = manager.cache(CONFIG_MAPS, indexers={"by-a": lambda obj: ("a",)})
    b = manager.cache(CONFIG_MAPS, indexers={"by-b": lambda obj: ("b",)})
    assert a is b
    assert a.by_index("by-a", "a") == [] and a.by_index("by-b", "b") == []  # both declared on one cache
    with pytest.raises(KeyError):
        a.by_index("by-c", "c")
    other = manager.cache(CONFIG_MAPS, namespace="elsewhere")
    assert other is not a and len(manager.caches) == 2
