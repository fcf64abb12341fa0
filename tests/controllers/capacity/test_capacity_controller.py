"""The capacity controller against the real API server with csi-baremetal's own CRDs applied.

Objects are in upstream's format, as csi-baremetal's extender and capacity controller
write them: ACRs named ``<namespace>-<pod>`` (pods named plainly, as in a real cluster),
ACs and ACRs naming csi-baremetal node IDs, Kubernetes Nodes carrying the ID in the
``nodes.csi-baremetal.dell.com/uuid`` annotation.  ACs, ACRs and Nodes are
cluster-scoped, so every test derives their names from its namespace (other tests'
objects never fit its nodes) and deletes what it created by label.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Collection, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kustodian.controllers.capacity.controller import GC_KEY, PLAN_KEY, CapacityReservations
from kustodian.controllers.capacity.gather import ReservationSource
from kustodian.controllers.capacity.main import build
from kustodian.kube.errors import NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import EVENTS, PODS
from kustodian.policy.capacity.model import GIB
from kustodian.policy.capacity.stale import PodState
from kustodian.runtime.workqueue import WorkQueue
from kustodian.settings import CapacityGroup
from tests.conftest import KubeApi
from tests.support import wait_for

pytestmark = pytest.mark.api

LABEL = "kustodian-test"
API = "csi-baremetal.dell.com/v1"


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(scope="module")
def crds(kube_api: KubeApi, upstream: Path) -> None:
    """csi-baremetal's CRDs, verbatim from its operator's chart."""
    kube_api.kubectl("apply", "-f", str(upstream / "csi-baremetal" / "crds"))
    for crd in ("availablecapacities", "availablecapacityreservations", "logicalvolumegroups"):
        kube_api.kubectl("wait", "--for=condition=Established", f"crd/{crd}.csi-baremetal.dell.com",
                         "--timeout=30s")


class Cluster:
    """Creates test objects with kubectl and reads them back with the client."""

    def __init__(self, kube_api: KubeApi, namespace: str, ctl: CapacityReservations) -> None:
        self.api, self.ns, self.ctl = kube_api, namespace, ctl

    def node(self, n: str) -> str:
        """The csi-baremetal node ID of test node ``n``."""
        return f"{self.ns}-{n}"

    def k8s_node(self, n: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": f"k8s-{self.node(n)}", "labels": {LABEL: self.ns},
                             "annotations": {"nodes.csi-baremetal.dell.com/uuid": self.node(n)}}}

    def apply(self, *objs: dict[str, Any]) -> None:
        self.api.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                "items": list(objs)}))

    def ac(self, name: str, node: str, storage_class: str, size: int, **labels: str) -> dict[str, Any]:
        return {"apiVersion": API, "kind": "AvailableCapacity",
                "metadata": {"name": f"{self.ns}-{name}", "labels": {LABEL: self.ns, **labels}},
                "spec": {"Location": f"uuid-{name}", "NodeId": self.node(node), "storageClass": storage_class,
                         "Size": size}}

    def acr(self, pod: str, nodes: list[str], requests: list[tuple[str, str, int]],
            status: str = "REQUESTED") -> dict[str, Any]:
        """The ACR of pod ``pod`` as the extender creates it: ``<namespace>-<pod>``."""
        return {"apiVersion": API, "kind": "AvailableCapacityReservation",
                "metadata": {"name": f"{self.ns}-{pod}", "labels": {LABEL: self.ns}},
                "spec": {"Namespace": self.ns, "Status": status,
                         "NodeRequests": {"Requested": [self.node(n) for n in nodes]},
                         "ReservationRequests": [
                             {"CapacityRequest": {"Name": r, "StorageClass": sc, "Size": size}}
                             for r, sc, size in requests]}}

    def pod(self, name: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": self.ns},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}

    def bind(self, pod: str, n: str) -> None:
        """What the scheduler's Binding does once it picked node ``n``: set ``spec.nodeName``.

        kube-testserver serves no ``pods/binding`` subresource (README: ``/status`` only) and
        does not validate built-in kinds, so the binding's effect is written as a patch; the
        controller sees the same watch event a real binding produces.
        """
        self.api.kubectl("patch", "pod", pod, "-n", self.ns, "--type=merge",
                         "-p", json.dumps({"spec": {"nodeName": f"k8s-{self.node(n)}"}}))

    def get(self, pod: str) -> dict[str, Any] | None:
        try:
            return self.api.client.get(self.ctl.acr_resource, f"{self.ns}-{pod}")
        except NotFound:
            return None

    def wait_status(self, pod: str, status: str) -> dict[str, Any]:
        got: dict[str, Any] = {}

        def done() -> bool:
            nonlocal got
            got = self.get(pod) or {}
            return bool(got.get("spec", {}).get("Status") == status)

        wait_for(done, f"ACR of {pod} {status}")
        return got

    def wait_decided(self, pod: str) -> dict[str, Any]:
        """The ACR of ``pod`` once it is no longer REQUESTED (whatever was decided)."""
        got: dict[str, Any] = {}

        def done() -> bool:
            nonlocal got
            got = self.get(pod) or {}
            return bool(got.get("spec", {}).get("Status", "REQUESTED") != "REQUESTED")

        wait_for(done, f"ACR of {pod} decided")
        return got

    def reservations(self, acr: dict[str, Any]) -> dict[str, list[str]]:
        prefix = f"{self.ns}-"
        return {item["CapacityRequest"]["Name"]: [a.removeprefix(prefix) for a in item.get("Reservations", [])]
                for item in acr["spec"]["ReservationRequests"]}

    def events(self, pod: str) -> list[dict[str, Any]]:
        items, _ = self.api.client.list(EVENTS, self.ns)
        return [e for e in items if e["involvedObject"].get("name") == f"{self.ns}-{pod}"]


Factory = Callable[..., tuple[Cluster, CapacityReservations, WorkQueue | None]]


@pytest.fixture
def capacity(kube_api: KubeApi, namespace: str, crds: None) -> Iterator[Factory]:
    """Build (and by default run) a controller; everything is stopped and deleted afterwards."""
    started: list[tuple[CapacityReservations, WorkQueue | None, EventRecorder]] = []

    def make(*, run: bool = True, clock: Callable[[], datetime] | None = None,
             **settings: Any) -> tuple[Cluster, CapacityReservations, WorkQueue | None]:
        recorder = EventRecorder(kube_api.client, "kustodian-test", min_interval=0, default_namespace=namespace)
        conf = CapacityGroup(gc_interval=timedelta(hours=1), **settings)
        ctl = build(conf, kube_api.client, recorder, **({"clock": clock} if clock else {}))
        runtime = WorkQueue("capacity", ctl.reconcile, workers=2, base_backoff=0.05) if run else None
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
    for kind in ("availablecapacityreservations.csi-baremetal.dell.com",
                 "availablecapacities.csi-baremetal.dell.com", "nodes"):
        kube_api.kubectl("delete", kind, "-l", f"{LABEL}={namespace}", "--wait=false")


def test_lvg_volumes_share_one_drive_on_every_requested_node(capacity: Factory) -> None:
    """The seed's example: pvc3 and pvc2 (HDDLVG) land on one drive, pvc1/pvc4 on plain drives."""
    cluster, _, _ = capacity()
    acs = [cluster.ac(f"{n}-d{size}", n, "HDD", size * GIB) for n in ("n1", "n2") for size in (50, 100, 200)]
    cluster.apply(*acs, cluster.pod("app"),
                  cluster.acr("app", ["n1", "n2"], [("pvc1", "HDD", 10 * GIB), ("pvc2", "HDDLVG", 20 * GIB),
                                                    ("pvc3", "HDDLVG", 10 * GIB), ("pvc4", "HDD", 100 * GIB)]))
    acr = cluster.wait_status("app", "RESERVED")
    assert acr["spec"]["NodeRequests"]["Reserved"] == [cluster.node("n1"), cluster.node("n2")]
    assert cluster.reservations(acr) == {
        "pvc1": ["n1-d100", "n2-d100"],
        "pvc2": ["n1-d50", "n2-d50"],
        "pvc3": ["n1-d50", "n2-d50"],
        "pvc4": ["n1-d200", "n2-d200"],
    }
    assert "kustodian.io/reason" not in acr["metadata"].get("annotations", {})


def test_an_impossible_reservation_is_rejected_with_a_reason_and_a_warning_event(capacity: Factory) -> None:
    cluster, _, _ = capacity()
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.pod("big"),
                  cluster.acr("big", ["n1"], [("data", "HDD", 1024 * GIB)]))
    acr = cluster.wait_status("big", "REJECTED")
    assert acr["metadata"]["annotations"]["kustodian.io/reason"] == "Rejected"
    assert "data (HDD 1 TiB)" in acr["metadata"]["annotations"]["kustodian.io/message"]
    assert "no free HDD/HDDLVG drive" not in acr["metadata"]["annotations"]["kustodian.io/message"]  # plain request: plain wording
    assert "Reserved" not in acr["spec"]["NodeRequests"]  # omitempty, as upstream
    wait_for(lambda: bool(cluster.events("big")), "the Warning event")
    (event,) = cluster.events("big")
    assert (event["type"], event["reason"]) == ("Warning", "Rejected")
    assert event["message"] == acr["metadata"]["annotations"]["kustodian.io/message"]


def test_acrs_created_together_never_share_a_plain_drive(capacity: Factory) -> None:
    cluster, _, _ = capacity()
    names = ["a", "b", "c"]
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.ac("d2", "n1", "HDD", 100 * GIB),
                  *(cluster.pod(n) for n in names),
                  *(cluster.acr(n, ["n1"], [("data", "HDD", 50 * GIB)]) for n in names))
    wait_for(lambda: all((cluster.get(n) or {}).get("spec", {}).get("Status") != "REQUESTED" for n in names),
             "every ACR decided")
    acrs = [cluster.get(n) or {} for n in names]
    reserved = [a for a in acrs if a["spec"]["Status"] == "RESERVED"]
    assert len(reserved) == 2
    drives = [d for a in reserved for d in cluster.reservations(a)["data"]]
    assert sorted(drives) == ["d1", "d2"]
    (rejected,) = [a for a in acrs if a["spec"]["Status"] == "REJECTED"]
    assert "every HDD drive reserved" in rejected["metadata"]["annotations"]["kustodian.io/message"]


def test_a_reservation_whose_pod_is_gone_is_collected(capacity: Factory, kube_api: KubeApi) -> None:
    cluster, ctl, _ = capacity()
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.pod("web"),
                  cluster.acr("web", ["n1"], [("data", "HDD", 10 * GIB)]))
    cluster.wait_status("web", "RESERVED")
    kube_api.client.delete(PODS, "web", cluster.ns)
    wait_for(lambda: cluster.get("web") is None, "the orphaned ACR deleted")
    # the counter moves just after the delete the API server already shows: wait for it
    wait_for(lambda: ctl.collected >= 1, "the collection counted", timeout=2)
    assert ctl.collected == 1
    wait_for(lambda: any(e["reason"] == "ReservationCollected" for e in cluster.events("web")), "the event")
    (event,) = [e for e in cluster.events("web") if e["reason"] == "ReservationCollected"]
    assert event["type"] == "Warning"
    assert f"its pod {cluster.ns}/web no longer exists" in event["message"]


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
    # the counter moves just after the delete the API server already shows: wait for it
    wait_for(lambda: ctl.collected >= 1, "the collection counted", timeout=2)
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
                     "-p", json.dumps({"spec": {"NodeRequests": {"Requested": [cluster.node("n2")]}}}))
    assert ctl.reconcile(PLAN_KEY) is None  # plan from stale -> 409 -> re-read -> re-plan -> write
    assert (ctl.conflicts, ctl.writes) == (1, 1)
    acr = cluster.get("moving") or {}
    assert acr["spec"]["Status"] == "RESERVED"
    assert acr["spec"]["NodeRequests"] == {"Requested": [cluster.node("n2")], "Reserved": [cluster.node("n2")]}
    assert cluster.reservations(acr) == {"data": ["d2"]}
    # the next batch plans from our own write, not from the frozen REQUESTED copy
    (ours,) = [a for a in ctl.snapshot() if a["metadata"]["name"] == acr["metadata"]["name"]]
    assert ours["spec"]["Status"] == "RESERVED"
    assert ctl.reconcile(PLAN_KEY) is None and ctl.writes == 1


def test_sequential_lvg_mode_waits_for_the_holder_then_reserves(capacity: Factory, kube_api: KubeApi) -> None:
    cluster, _, _ = capacity()  # sequential LVG mode is the default, as upstream
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.pod("first"), cluster.pod("second"),
                  cluster.acr("first", ["n1"], [("data", "HDDLVG", 10 * GIB)]))
    cluster.wait_status("first", "RESERVED")
    cluster.apply(cluster.acr("second", ["n1"], [("data", "HDDLVG", 10 * GIB)]))
    wait_for(lambda: (cluster.get("second") or {}).get("metadata", {}).get("annotations", {}).get("kustodian.io/reason") == "WaitingForLVGReservation",
             "second waiting")
    assert (cluster.get("second") or {})["spec"]["Status"] == "REQUESTED"
    kube_api.kubectl("delete", "availablecapacityreservation", f"{cluster.ns}-first")  # its volume was created
    acr = cluster.wait_status("second", "RESERVED")
    assert cluster.reservations(acr) == {"data": ["d1"]}
    assert "kustodian.io/reason" not in acr["metadata"].get("annotations", {})


# -- upstream's objects, binding, lifecycle ----------------------------------------------------


def test_upstream_example_objects_are_planned_and_written_in_upstream_format(
        capacity: Factory, kube_api: KubeApi, upstream: Path) -> None:
    """csi-baremetal/derived: an HDD AC, an LVG AC (+ its LVG) and the extender's ACR default-web-0."""
    derived = upstream / "csi-baremetal" / "derived"
    files = [str(derived / f) for f in ("drive.yaml", "lvg.yaml", "ac.yaml")]
    kube_api.kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default"},
         "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
    try:
        for f in files:
            kube_api.kubectl("apply", "--validate=strict", "-f", f)
        _, ctl, _ = capacity()
        kube_api.kubectl("apply", "--validate=strict", "-f", str(derived / "acr.yaml"))

        def reserved() -> bool:
            acr = kube_api.client.get(ctl.acr_resource, "default-web-0")
            return bool(acr["spec"]["Status"] == "RESERVED")

        wait_for(reserved, "default-web-0 RESERVED")
        acr = kube_api.client.get(ctl.acr_resource, "default-web-0")
        spec = acr["spec"]
        # exactly what upstream's ReservationHelper.UpdateReservation would write, stored unpruned
        assert spec["Namespace"] == "default"
        assert spec["NodeRequests"] == {"Requested": ["b7e8a0f4-6c1d-4f38-9a52-0d3e6f1c2a71",
                                                      "5d2c9e31-8a47-4b6e-b1f0-7c9a3e2d4f58"],
                                        "Reserved": ["b7e8a0f4-6c1d-4f38-9a52-0d3e6f1c2a71"]}
        assert spec["ReservationRequests"] == [
            {"CapacityRequest": {"Name": "www-web-0", "StorageClass": "HDD", "Size": 107374182400},
             "Reservations": ["6a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d"]},
            {"CapacityRequest": {"Name": "logs-web-0", "StorageClass": "HDDLVG", "Size": 10737418240},
             "Reservations": ["0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f"]},
        ]
        assert set(acr["metadata"]["annotations"]) >= {"kustodian.io/status-since"}
        # kubectl reads it back with upstream's printer columns
        out = kube_api.kubectl("get", "acr", "default-web-0").stdout
        assert "RESERVED" in out and "default" in out
    finally:
        kube_api.kubectl("delete", "--ignore-not-found", "-f", str(derived / "acr.yaml"))
        for f in files:
            kube_api.kubectl("delete", "--ignore-not-found", "-f", f)
        kube_api.kubectl("delete", "pod", "web-0", "-n", "default", "--ignore-not-found", "--wait=false")


def test_a_bound_pod_releases_the_other_nodes_reservations_within_2s(capacity: Factory) -> None:
    cluster, ctl, _ = capacity()
    nodes = ["n1", "n2", "n3"]
    cluster.apply(*(cluster.k8s_node(n) for n in nodes),
                  *(cluster.ac(f"{n}-d", n, "HDD", 100 * GIB) for n in nodes),
                  cluster.pod("web"), cluster.pod("next"),
                  cluster.acr("web", nodes, [("data", "HDD", 10 * GIB)]))
    acr = cluster.wait_status("web", "RESERVED")
    assert acr["spec"]["NodeRequests"]["Reserved"] == [cluster.node(n) for n in nodes]  # hoarding 3 drives
    # a second pod that fits only on n1 and n3 is rejected while "web" holds every drive
    cluster.apply(cluster.acr("next", ["n1", "n3"], [("data", "HDD", 10 * GIB)]))
    cluster.wait_status("next", "REJECTED")

    bound_at = time.monotonic()
    cluster.bind("web", "n2")  # the scheduler picked n2

    def narrowed() -> bool:
        got = cluster.get("web") or {}
        return bool(got.get("spec", {}).get("NodeRequests", {}).get("Reserved") == [cluster.node("n2")])

    wait_for(narrowed, "web's reservations narrowed to n2", timeout=2)
    assert time.monotonic() - bound_at < 2
    acr = cluster.get("web") or {}
    assert acr["spec"]["Status"] == "RESERVED"
    assert cluster.reservations(acr) == {"data": ["n2-d"]}  # what the volume manager will look up
    # the counter moves just after the write the API server already shows: wait for it, briefly
    wait_for(lambda: ctl.released == 1, "the release counted", timeout=2)
    wait_for(lambda: any(e["reason"] == "ReservationNarrowed" for e in cluster.events("web")), "the event")
    # n1 and n3 are free again: when the extender asks again, "next" gets them
    cluster.api.kubectl("patch", "acr", f"{cluster.ns}-next", "--type=merge",
                        "-p", json.dumps({"spec": {"Status": "REQUESTED"}}))
    acr = cluster.wait_status("next", "RESERVED")
    assert cluster.reservations(acr) == {"data": ["n1-d", "n3-d"]}


def test_the_cache_and_the_api_server_fill_the_same_release_input(capacity: Factory) -> None:
    """Both sources answer the same questions alike once the caches caught up (the decision never
    knows which one it was given)."""
    cluster, ctl, _ = capacity(run=False)
    nodes = ["n1", "n2"]
    cluster.apply(*(cluster.k8s_node(n) for n in nodes),
                  *(cluster.ac(f"{n}-d", n, "HDD", 100 * GIB) for n in nodes), cluster.pod("web"),
                  cluster.acr("web", nodes, [("data", "HDD", 10 * GIB)], status="RESERVED"))
    acs = {f"{cluster.ns}-{n}-d" for n in nodes} | {f"{cluster.ns}-none"}
    ours = {f"k8s-{cluster.node(n)}" for n in nodes}

    def alike() -> bool:
        cached, fresh = ctl.cache_source, ctl.api_source
        return (cached.ac_nodes(acs) == fresh.ac_nodes(acs) == {f"{cluster.ns}-{n}-d": cluster.node(n) for n in nodes}
                and {k: v for k, v in cached.node_ids().items() if k in ours}
                == {k: v for k, v in fresh.node_ids().items() if k in ours}
                == {f"k8s-{cluster.node(n)}": cluster.node(n) for n in nodes}
                and cached.pods({f"{cluster.ns}/web"}) == fresh.pods({f"{cluster.ns}/web"}) != {}
                and [a["metadata"]["uid"] for a in cached.reservations({f"{cluster.ns}-web"})]
                == [a["metadata"]["uid"] for a in fresh.reservations({f"{cluster.ns}-web"})] != [])

    wait_for(alike, "the caches caught up with the API server")


class LaggingPods:
    """A reservation source whose pod cache misses ``hidden`` pods (a pod cache behind the ACR cache);
    it logs each gather under ``name``."""

    def __init__(self, name: str, inner: ReservationSource, log: list[str],
                 hidden: frozenset[str] = frozenset()) -> None:
        self.name, self.inner, self.log, self.hidden = name, inner, log, hidden

    def reservations(self, names: Collection[str] | None = None) -> list[dict[str, Any]]:
        self.log.append(self.name)
        return self.inner.reservations(names)

    def pods(self, keys: Collection[str] | None = None) -> dict[str, PodState]:
        return {k: v for k, v in self.inner.pods(keys).items() if k not in self.hidden}

    def node_ids(self) -> dict[str, str]:
        return self.inner.node_ids()

    def ac_nodes(self, names: Collection[str]) -> dict[str, str]:
        return self.inner.ac_nodes(names)


def test_a_collection_the_api_server_does_not_confirm_is_not_made(capacity: Factory) -> None:
    """The pod cache lags (the pod looks gone): the same decision on the ACR and its pod read from
    the API server keeps the reservation; once the pod is really gone the delete is confirmed."""
    cluster, ctl, runtime = capacity()
    assert runtime is not None
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.pod("web"),
                  cluster.acr("web", ["n1"], [("data", "HDD", 10 * GIB)]))
    cluster.wait_status("web", "RESERVED")
    assert runtime.wait_idle(5)  # the release pass the RESERVED write woke
    gathers: list[str] = []
    ctl.cache_source = LaggingPods("cache", ctl.cache_source, gathers, frozenset({f"{cluster.ns}/web"}))
    ctl.api_source = LaggingPods("api", ctl.api_source, gathers)
    runtime.enqueue(GC_KEY)
    assert runtime.wait_idle(5)
    # the cache said collect; the API server was asked after it (a release pass, woken by a late
    # watch event, gathers from the cache the same way and may log between the two)
    assert gathers[0] == "cache" and "api" in gathers, gathers
    assert cluster.get("web") is not None
    assert ctl.collected == 0

    cluster.api.client.delete(PODS, "web", cluster.ns)
    runtime.enqueue(GC_KEY)
    wait_for(lambda: cluster.get("web") is None, "the ACR of the deleted pod collected")
    wait_for(lambda: ctl.collected >= 1, "the collection counted", timeout=2)
    assert ctl.collected == 1


def test_an_acr_named_after_its_living_pod_is_never_collected(capacity: Factory) -> None:
    """The old GC looked for a pod named like the whole ACR (``<ns>-<pod>``) and deleted this one."""
    cluster, ctl, runtime = capacity()
    assert runtime is not None
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.pod("db-0"),
                  cluster.acr("db-0", ["n1"], [("data", "HDD", 10 * GIB)]))
    cluster.wait_status("db-0", "RESERVED")
    for _ in range(3):
        runtime.enqueue(GC_KEY)
        assert runtime.wait_idle(5)
    assert cluster.get("db-0") is not None
    assert ctl.collected == 0


def test_the_acr_of_a_running_pod_is_collected(capacity: Factory) -> None:
    cluster, ctl, _ = capacity()
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.pod("app"),
                  cluster.acr("app", ["n1"], [("data", "HDD", 10 * GIB)]))
    cluster.wait_status("app", "RESERVED")
    cluster.api.kubectl("patch", "pod", "app", "-n", cluster.ns, "--subresource=status", "--type=merge",
                        "-p", json.dumps({"status": {"phase": "Running"}}))
    wait_for(lambda: cluster.get("app") is None, "the Running pod's ACR deleted")
    # the counter moves just after the delete the API server already shows: wait for it
    wait_for(lambda: ctl.collected >= 1, "the collection counted", timeout=2)
    assert ctl.collected == 1
    wait_for(lambda: any(e["reason"] == "ReservationCollected" for e in cluster.events("app")), "the event")
    (event,) = [e for e in cluster.events("app") if e["reason"] == "ReservationCollected"]
    assert f"its pod {cluster.ns}/app is Running" in event["message"]


def test_ttl_counts_from_the_last_status_change(capacity: Factory) -> None:
    """Rejected for 59 minutes, reserved one minute ago: one minute old, not an hour."""
    clock = FakeClock()
    cluster, ctl, runtime = capacity(clock=clock, reservation_ttl=timedelta(minutes=10))
    assert runtime is not None
    cluster.apply(cluster.pod("late"), cluster.acr("late", ["n1"], [("data", "HDD", 10 * GIB)]))
    cluster.wait_status("late", "REJECTED")  # no AC yet
    clock.now += timedelta(minutes=59)
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB))
    cluster.api.kubectl("patch", "acr", f"{cluster.ns}-late", "--type=merge",
                        "-p", json.dumps({"spec": {"Status": "REQUESTED"}}))  # the extender asks again
    cluster.wait_status("late", "RESERVED")
    clock.now += timedelta(minutes=2)
    runtime.enqueue(GC_KEY)
    assert runtime.wait_idle(5)
    assert cluster.get("late") is not None
    clock.now += timedelta(minutes=10)
    runtime.enqueue(GC_KEY)
    wait_for(lambda: cluster.get("late") is None, "the expired ACR deleted")
    # the counter moves just after the delete the API server already shows: wait for it
    wait_for(lambda: ctl.collected >= 1, "the collection counted", timeout=2)
    assert ctl.collected == 1


def test_a_new_drive_is_planned_in_place_without_a_rebuild(capacity: Factory) -> None:
    """An AC event is applied to the kept planner (``CapacityPlanner.update``): the drive
    added after the first pass is used, and the planner was built once."""
    cluster, ctl, _ = capacity()
    cluster.apply(cluster.ac("small", "n1", "HDD", 100 * GIB), cluster.pod("first"),
                  cluster.acr("first", ["n1"], [("data", "HDD", 500 * GIB)]))
    cluster.wait_status("first", "REJECTED")
    cluster.apply(cluster.ac("big", "n1", "HDD", 1024 * GIB))
    wait_for(lambda: ctl.acs.get(None, f"{cluster.ns}-big") is not None, "the new AC in the cache")
    cluster.apply(cluster.pod("second"), cluster.acr("second", ["n1"], [("data", "HDD", 500 * GIB)]))
    acr = cluster.wait_status("second", "RESERVED")
    assert cluster.reservations(acr) == {"data": ["big"]}
    assert ctl.rebuilds == 1


# -- a rejection is final: never on an AC cache behind the ACR ----------------------------------


ROUNDS = 100


def test_an_acr_seen_before_its_acs_is_reserved_never_rejected(capacity: Factory, kube_api: KubeApi,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The AC watch is held back (its events wait on a gate) while an AC and, right after it,
    an ACR that only that AC can satisfy are created: the plan from the caches rejects, the
    rejection is checked on the API server's ACs, and RESERVED is written. 100 rounds, one
    controller, no false rejection; every round really planned on a cache without its AC."""
    cluster, ctl, _ = capacity()
    gate = threading.Event()
    gate.set()
    apply = ctl.acs._apply

    def held(etype: str, obj: dict[str, Any]) -> None:
        assert gate.wait(30), "the AC watch was held for more than 30 s"
        apply(etype, obj)

    monkeypatch.setattr(ctl.acs, "_apply", held)
    client = kube_api.client
    try:
        for i in range(ROUNDS):
            gate.clear()
            ac = cluster.ac(f"r{i}-d1", f"r{i}", "HDD", 100 * GIB)
            client.create(ctl.ac_resource, ac)
            client.create(ctl.acr_resource, cluster.acr(f"p{i}", [f"r{i}"], [("data", "HDD", 50 * GIB)]))
            acr = cluster.wait_decided(f"p{i}")
            assert ctl.acs.get(None, ac["metadata"]["name"]) is None  # planned without the AC in the cache
            assert acr["spec"]["Status"] == "RESERVED", acr["metadata"].get("annotations")
            assert cluster.reservations(acr) == {"data": [f"r{i}-d1"]}
            gate.set()
    finally:
        gate.set()
    assert ctl.overturned == ROUNDS
    assert not [e for i in range(ROUNDS) for e in cluster.events(f"p{i}") if e["reason"] == "Rejected"]


def test_a_rejection_stands_only_if_the_api_servers_acs_reject_too(capacity: Factory) -> None:
    """Reconciled by hand on a frozen AC cache: the ACR its ACs can hold (they are on the API
    server, not in the cache) is reserved; the one they cannot hold is rejected, as before."""
    cluster, ctl, _ = capacity(run=False)
    ctl.acs.stop(timeout=1)  # the AC cache never sees what follows
    cluster.apply(cluster.ac("d1", "n1", "HDD", 100 * GIB), cluster.pod("fits"), cluster.pod("big"),
                  cluster.acr("fits", ["n1"], [("data", "HDD", 50 * GIB)]))
    wait_for(lambda: ctl.acrs.get(None, f"{cluster.ns}-fits") is not None, "the ACR in the cache")
    assert ctl.acs.get(None, f"{cluster.ns}-d1") is None
    assert ctl.reconcile(PLAN_KEY) is None
    acr = cluster.get("fits") or {}
    assert acr["spec"]["Status"] == "RESERVED"
    assert cluster.reservations(acr) == {"data": ["d1"]}
    assert (ctl.confirmations, ctl.overturned) == (1, 1)
    cluster.apply(cluster.acr("big", ["n1"], [("data", "HDD", 1024 * GIB)]))
    wait_for(lambda: ctl.acrs.get(None, f"{cluster.ns}-big") is not None, "the ACR in the cache")
    assert ctl.reconcile(PLAN_KEY) is None
    rejected = cluster.get("big") or {}
    assert rejected["spec"]["Status"] == "REJECTED"
    assert "data (HDD 1 TiB)" in rejected["metadata"]["annotations"]["kustodian.io/message"]
    assert (ctl.confirmations, ctl.overturned) == (2, 1)
    assert (cluster.get("fits") or {})["spec"]["Status"] == "RESERVED"  # the fresh plan kept its drive
