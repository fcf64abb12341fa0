"""The capacity controller against the real API server: reservations, rejections, GC, 409s.

ACs and ACRs are cluster-scoped, so every test uses node names and object names
derived from its namespace (other tests' objects never fit its nodes) and deletes
what it created by label.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kustodian.controllers.capacity.controller import GC_KEY, PLAN_KEY, CapacityReservations
from kustodian.controllers.capacity.main import build
from kustodian.kube.errors import NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import EVENTS, PODS
from kustodian.policy.capacity.model import GIB
from kustodian.runtime.workqueue import Controller
from kustodian.settings import CapacityGroup
from tests.conftest import KubeApi
from tests.support import wait_for

pytestmark = pytest.mark.api

CRDS = Path(__file__).resolve().parents[3] / "charts" / "kustodian" / "crds"
LABEL = "kustodian-test"


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now




@pytest.fixture(scope="module")
def crds(kube_api: KubeApi) -> None:
    for crd in ("availablecapacities.kustodian.io.yaml", "availablecapacityreservations.kustodian.io.yaml"):
        kube_api.kubectl("apply", "-f", str(CRDS / crd))
    for crd in ("availablecapacities", "availablecapacityreservations"):
        kube_api.kubectl("wait", "--for=condition=Established", f"crd/{crd}.kustodian.io", "--timeout=30s")


class Cluster:
    """Creates test objects with kubectl and reads them back with the client."""

    def __init__(self, kube_api: KubeApi, namespace: str, ctl: CapacityReservations) -> None:
        self.api, self.ns, self.ctl = kube_api, namespace, ctl

    def node(self, n: str) -> str:
        return f"{self.ns}-{n}"

    def apply(self, *objs: dict[str, Any]) -> None:
        self.api.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                "items": list(objs)}))

    def ac(self, name: str, node: str, storage_class: str, size: int) -> dict[str, Any]:
        return {"apiVersion": "kustodian.io/v1alpha1", "kind": "AvailableCapacity",
                "metadata": {"name": f"{self.ns}-{name}", "labels": {LABEL: self.ns}},
                "spec": {"location": f"uuid-{name}", "nodeId": self.node(node), "storageClass": storage_class,
                         "size": size}}

    def acr(self, name: str, nodes: list[str], requests: list[tuple[str, str, int]],
            status: str = "REQUESTED") -> dict[str, Any]:
        """An ACR named like its pod (``<ns>-<name>`` in the test namespace), and that pod."""
        return {"apiVersion": "kustodian.io/v1alpha1", "kind": "AvailableCapacityReservation",
                "metadata": {"name": f"{self.ns}-{name}", "labels": {LABEL: self.ns}},
                "spec": {"namespace": self.ns, "status": status,
                         "nodeRequests": {"requested": [self.node(n) for n in nodes]},
                         "reservationRequests": [
                             {"capacityRequest": {"name": r, "storageClass": sc, "size": size}}
                             for r, sc, size in requests]}}

    def pod(self, name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{self.ns}-{name}", "namespace": self.ns},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}

    def get(self, name: str) -> dict[str, Any] | None:
        try:
            return self.api.client.get(self.ctl.acr_resource, f"{self.ns}-{name}")
        except NotFound:
            return None

    def wait_status(self, name: str, status: str) -> dict[str, Any]:
        got: dict[str, Any] = {}

        def done() -> bool:
            nonlocal got
            got = self.get(name) or {}
            return bool(got.get("spec", {}).get("status") == status)

        wait_for(done, f"ACR {name} {status}")
        return got

    def reservations(self, acr: dict[str, Any]) -> dict[str, list[str]]:
        prefix = f"{self.ns}-"
        return {item["capacityRequest"]["name"]: [a.removeprefix(prefix) for a in item.get("reservations", [])]
                for item in acr["spec"]["reservationRequests"]}

    def events(self, name: str) -> list[dict[str, Any]]:
        items, _ = self.api.client.list(EVENTS, self.ns)
        return [e for e in items if e["involvedObject"].get("name") == f"{self.ns}-{name}"]


Factory = Callable[..., tuple[Cluster, CapacityReservations, Controller | None]]


@pytest.fixture
def capacity(kube_api: KubeApi, namespace: str, crds: None) -> Iterator[Factory]:
    """Build (and by default run) a controller; everything is stopped and deleted afterwards."""
    started: list[tuple[CapacityReservations, Controller | None, EventRecorder]] = []

    def make(*, run: bool = True, clock: Callable[[], datetime] | None = None,
             **settings: Any) -> tuple[Cluster, CapacityReservations, Controller | None]:
        recorder = EventRecorder(kube_api.client, "kustodian-test", min_interval=0, default_namespace=namespace)
        conf = CapacityGroup(gc_interval=timedelta(hours=1), **settings)
        ctl = build(conf, kube_api.client, recorder, **({"clock": clock} if clock else {}))
        runtime = Controller("capacity", ctl.reconcile, workers=2, base_backoff=0.05) if run else None
        started.append((ctl, runtime, recorder))
        ctl.wire(runtime.enqueue if runtime is not None else lambda key: None)
        for cache in ctl.caches:
            cache.start()
        for cache in ctl.caches:
            assert cache.wait_synced(10)
        if runtime is not None:
            runtime.start()
        return Cluster(kube_api, namespace, ctl), ctl, runtime

    yield make
    for ctl, runtime, recorder in started:
        if runtime is not None:
            runtime.stop(timeout=2)
        for cache in ctl.caches:
            cache.stop(timeout=1)
        recorder.close()
    for kind in ("availablecapacityreservations.kustodian.io", "availablecapacities.kustodian.io"):
        kube_api.kubectl("delete", kind, "-l", f"{LABEL}={namespace}", "--wait=false")


def test_lvg_volumes_share_one_drive_on_every_requested_node(capacity: Factory) -> None:
    """The seed's example: pvc3 and pvc2 (HDDLVG) land on one drive, pvc1/pvc4 on plain drives."""
    cluster, _, _ = capacity()
    acs = [cluster.ac(f"{n}-d{size}", n, "HDD", size * GIB) for n in ("n1", "n2") for size in (50, 100, 200)]
    cluster.apply(*acs, cluster.pod("app"),
                  cluster.acr("app", ["n1", "n2"], [("pvc1", "HDD", 10 * GIB), ("pvc2", "HDDLVG", 20 * GIB),
                                                    ("pvc3", "HDDLVG", 10 * GIB), ("pvc4", "HDD", 100 * GIB)]))
    acr = cluster.wait_status("app", "RESERVED")
    assert acr["spec"]["nodeRequests"]["reserved"] == [cluster.node("n1"), cluster.node("n2")]
    assert cluster.reservations(acr) == {
        "pvc1": ["n1-d100", "n2-d100"],
        "pvc2": ["n1-d50", "n2-d50"],
        "pvc3": ["n1-d50", "n2-d50"],
        "pvc4": ["n1-d200", "n2-d200"],
    }
    assert "reason" not in acr.get("status", {})


def test_an_impossible_reservation_is_rejected_with_a_reason_and_a_warning_event(capacity: Factory) -> None:
    cluster, _, _ = capacity()
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.pod("big"),
                  cluster.acr("big", ["n1"], [("data", "HDD", 1024 * GIB)]))
    acr = cluster.wait_status("big", "REJECTED")
    assert acr["status"]["reason"] == "Rejected"
    assert "data (HDD 1 TiB)" in acr["status"]["message"]
    assert "no free HDD/HDDLVG drive" not in acr["status"]["message"]  # plain request: plain wording
    assert acr["spec"]["nodeRequests"]["reserved"] == []
    wait_for(lambda: bool(cluster.events("big")), "the Warning event")
    (event,) = cluster.events("big")
    assert (event["type"], event["reason"]) == ("Warning", "Rejected")
    assert event["message"] == acr["status"]["message"]


def test_acrs_created_together_never_share_a_plain_drive(capacity: Factory) -> None:
    cluster, _, _ = capacity()
    names = ["a", "b", "c"]
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.ac("d2", "n1", "HDD", 100 * GIB),
                  *(cluster.pod(n) for n in names),
                  *(cluster.acr(n, ["n1"], [("data", "HDD", 50 * GIB)]) for n in names))
    wait_for(lambda: all((cluster.get(n) or {}).get("spec", {}).get("status") != "REQUESTED" for n in names),
             "every ACR decided")
    acrs = [cluster.get(n) or {} for n in names]
    reserved = [a for a in acrs if a["spec"]["status"] == "RESERVED"]
    assert len(reserved) == 2
    drives = [d for a in reserved for d in cluster.reservations(a)["data"]]
    assert sorted(drives) == ["d1", "d2"]
    (rejected,) = [a for a in acrs if a["spec"]["status"] == "REJECTED"]
    assert "every HDD drive reserved" in rejected["status"]["message"]


def test_a_reservation_whose_pod_is_gone_is_collected(capacity: Factory, kube_api: KubeApi) -> None:
    cluster, ctl, _ = capacity()
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.pod("web"),
                  cluster.acr("web", ["n1"], [("data", "HDD", 10 * GIB)]))
    cluster.wait_status("web", "RESERVED")
    kube_api.client.delete(PODS, f"{cluster.ns}-web", cluster.ns)
    wait_for(lambda: cluster.get("web") is None, "the orphaned ACR deleted")
    assert ctl.collected == 1
    wait_for(lambda: any(e["reason"] == "ReservationCollected" for e in cluster.events("web")), "the event")
    (event,) = [e for e in cluster.events("web") if e["reason"] == "ReservationCollected"]
    assert event["type"] == "Warning"
    assert f"its pod {cluster.ns}/{cluster.ns}-web no longer exists" in event["message"]


def test_a_reservation_older_than_the_ttl_is_collected(capacity: Factory) -> None:
    clock = FakeClock()
    cluster, ctl, runtime = capacity(clock=clock, reservation_ttl=timedelta(seconds=30))
    assert runtime is not None
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.pod("old"), cluster.pod("new"),
                  cluster.acr("old", ["n1"], [("data", "HDD", 10 * GIB)]))
    cluster.wait_status("old", "RESERVED")
    cluster.apply(cluster.acr("new", ["n1"], [("data", "HDD", 10 * GIB)]))
    cluster.wait_status("new", "REJECTED")  # "old" holds the only drive
    runtime.enqueue(GC_KEY)
    assert runtime.wait_idle(5)
    assert cluster.get("old") is not None  # young enough, and its pod exists

    clock.now += timedelta(minutes=5)
    runtime.enqueue(GC_KEY)
    wait_for(lambda: cluster.get("old") is None, "the expired ACR deleted")
    assert cluster.get("new") is not None  # REJECTED ones do not expire; their pod lives
    assert ctl.collected == 1
    wait_for(lambda: any(e["reason"] == "ReservationCollected" for e in cluster.events("old")), "the event")
    assert "longer than the 0:00:30 TTL" in cluster.events("old")[0]["message"]


def test_a_concurrent_edit_leads_to_a_re_plan_not_an_overwrite(capacity: Factory, kube_api: KubeApi) -> None:
    cluster, ctl, _ = capacity(run=False)  # reconcile by hand, from a frozen cache
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.ac("d2", "n2", "HDD", 100 * GIB),
                  cluster.pod("moving"), cluster.acr("moving", ["n1"], [("data", "HDD", 10 * GIB)]))
    wait_for(lambda: ctl.acrs.get(None, f"{cluster.ns}-moving") is not None
             and len([a for a in ctl.acs.list() if a["metadata"]["name"].startswith(cluster.ns)]) == 2, "caches")
    ctl.acrs.stop(timeout=1)  # the cache keeps the copy that asks for n1
    # the scheduler extender moves the request to n2 after our cache read, before our write
    kube_api.kubectl("patch", "availablecapacityreservation", f"{cluster.ns}-moving", "--type=merge",
                     "-p", json.dumps({"spec": {"nodeRequests": {"requested": [cluster.node("n2")]}}}))
    assert ctl.reconcile(PLAN_KEY) is None  # plan from stale -> 409 -> re-read -> re-plan -> write
    assert (ctl.conflicts, ctl.writes) == (1, 1)
    acr = cluster.get("moving") or {}
    assert acr["spec"]["status"] == "RESERVED"
    assert acr["spec"]["nodeRequests"] == {"requested": [cluster.node("n2")], "reserved": [cluster.node("n2")]}
    assert cluster.reservations(acr) == {"data": ["d2"]}
    # the next batch plans from our own write, not from the frozen REQUESTED copy
    (ours,) = [a for a in ctl.snapshot() if a["metadata"]["name"] == acr["metadata"]["name"]]
    assert ours["spec"]["status"] == "RESERVED"
    assert ctl.reconcile(PLAN_KEY) is None and ctl.writes == 1


def test_sequential_lvg_mode_waits_for_the_holder_then_reserves(capacity: Factory, kube_api: KubeApi) -> None:
    cluster, _, _ = capacity(sequential_lvg=True)
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.pod("first"), cluster.pod("second"),
                  cluster.acr("first", ["n1"], [("data", "HDDLVG", 10 * GIB)]))
    cluster.wait_status("first", "RESERVED")
    cluster.apply(cluster.acr("second", ["n1"], [("data", "HDDLVG", 10 * GIB)]))
    wait_for(lambda: (cluster.get("second") or {}).get("status", {}).get("reason") == "WaitingForLVGReservation",
             "second waiting")
    assert (cluster.get("second") or {})["spec"]["status"] == "REQUESTED"
    kube_api.kubectl("delete", "availablecapacityreservation", f"{cluster.ns}-first")  # its volume was created
    acr = cluster.wait_status("second", "RESERVED")
    assert cluster.reservations(acr) == {"data": ["d1"]}
    assert "reason" not in acr.get("status", {})
