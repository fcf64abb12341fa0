"""``stale_reservations`` (what the GC deletes) and ``bound_releases`` (what a bound pod frees).

ACRs are named as csi-baremetal's extender names them: ``<namespace>-<pod>``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kustodian.policy.capacity import PodState, bound_releases, pod_key, stale_reservations

from .capacity_builders import NOW, GiB, acr, req

TTL = timedelta(minutes=30)
PENDING = PodState()
PODS = {"default/live": PENDING, "apps/web-0": PENDING, "default/up": PodState("k8s-a", "Running"),
        "default/bound": PodState("k8s-b", "Pending")}
SINCE = "kustodian.io/status-since"


def _acr(name: str, *, status: str = "RESERVED", created: str | None = "2024-01-01T11:50:00Z",
         nodes: tuple[str, ...] = ("a",), **kw: Any) -> dict[str, Any]:
    return acr(name, [req("v", "HDD", GiB, reservations=[f"ac-{n}" for n in nodes] if status == "RESERVED" else [])],
               list(nodes), status=status, reserved=list(nodes) if status == "RESERVED" else [],
               created=created, **kw)


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("young-reserved-acr-of-a-live-pod-stays", _acr("default-live"), ""),
    ("acr-named-ns-dash-pod-whose-pod-exists-stays", _acr("apps-web-0", namespace="apps"), ""),
    ("reserved-acr-older-than-ttl-goes", _acr("default-live", created="2024-01-01T11:00:00Z"), "TTL"),
    ("reserved-acr-exactly-ttl-old-stays", _acr("default-live", created="2024-01-01T11:30:00Z"), ""),
    ("ttl-counts-from-the-last-status-change-not-creation",
     _acr("default-live", created="2024-01-01T00:00:00Z", annotations={SINCE: "2024-01-01T11:58:00Z"}), ""),
    ("ttl-from-an-old-status-change-goes",
     _acr("default-live", created="2024-01-01T11:59:00Z", annotations={SINCE: "2024-01-01T11:00:00Z"}), "TTL"),
    ("old-requested-acr-of-a-live-pod-stays",
     _acr("default-live", status="REQUESTED", created="2024-01-01T00:00:00Z"), ""),
    ("reserved-acr-of-a-gone-pod-goes", _acr("default-gone"), "no longer exists"),
    ("requested-acr-of-a-gone-pod-goes", _acr("default-gone", status="REQUESTED"), "no longer exists"),
    ("rejected-acr-of-a-gone-pod-goes", _acr("default-gone", status="REJECTED"), "no longer exists"),
    ("cancelled-acr-of-a-gone-pod-goes", _acr("default-gone", status="CANCELLED"), "no longer exists"),
    ("acr-of-a-running-pod-goes", _acr("default-up"), "is Running"),
    ("pod-is-looked-up-in-the-acr-namespace", _acr("apps-live", namespace="apps"), "no longer exists"),
    ("name-without-the-namespace-prefix-names-no-pod", _acr("live"), ""),
    ("no-timestamp-is-never-stale-by-age", _acr("default-live", created=None), ""),
    ("bad-timestamp-is-never-stale-by-age", _acr("default-live", created="soon"), ""),
    ("year-9999-timestamp-is-not-stale-and-does-not-overflow", _acr("default-live", created="9999-12-31T23:59:59Z"),
     ""),
]


@pytest.mark.parametrize(("obj", "why"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_stale_reservations(obj: dict[str, Any], why: str) -> None:
    got = stale_reservations([obj], PODS, NOW, TTL)
    if not why:
        assert got == []
    else:
        assert [s.name for s in got] == [obj["metadata"]["name"]]
        assert why in got[0].why


def test_stale_reservations_are_sorted_and_unique() -> None:
    acrs = [_acr("default-zed"), _acr("default-gone"), _acr("default-gone", created="2024-01-01T00:00:00Z"),
            _acr("default-live")]
    assert [s.name for s in stale_reservations(acrs, PODS, NOW, TTL)] == ["default-gone", "default-zed"]


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        (_acr("ns-p", namespace="ns"), "ns/p"),
        (_acr("ns-web-0", namespace="ns"), "ns/web-0"),
        (_acr("default-p", namespace=""), "default/p"),  # getReservationName: "" is "default"
        (_acr("other-p", namespace="ns"), ""),
        (_acr("ns-", namespace="ns"), ""),
    ],
    ids=["namespace-dash-pod", "pod-name-with-dashes", "empty-namespace-is-default", "foreign-name", "no-pod-part"],
)
def test_pod_key(obj: dict[str, Any], key: str) -> None:
    assert pod_key(obj) == key


NODE_IDS = {"k8s-a": "a", "k8s-b": "b", "k8s-c": "c"}
RELEASE_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    ("bound-pod-releases-the-other-nodes", _acr("default-bound", nodes=("a", "b", "c")), [("default-bound", "b")]),
    ("unbound-pod-releases-nothing", _acr("default-live", nodes=("a", "b")), []),
    ("one-node-is-nothing-to-release", _acr("default-bound", nodes=("b",)), []),
    ("bound-to-a-node-not-reserved-releases-nothing", _acr("default-bound", nodes=("a", "c")), []),
    ("requested-acr-is-not-narrowed", _acr("default-bound", status="REQUESTED", nodes=("a", "b")), []),
]


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in RELEASE_CASES], ids=[c[0] for c in RELEASE_CASES])
def test_bound_releases(obj: dict[str, Any], want: list[tuple[str, str]]) -> None:
    assert bound_releases([obj], PODS, NODE_IDS) == want


def test_bound_pod_on_a_node_without_csi_id_releases_nothing() -> None:
    assert bound_releases([_acr("default-bound", nodes=("a", "b"))], PODS, {}) == []
