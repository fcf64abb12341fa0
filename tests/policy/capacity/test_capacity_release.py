"""``decide_reservation_release`` over one frozen input: what a bound pod hands back."""

from __future__ import annotations

from typing import Any

from kustodian.policy.capacity.release import ReservationReleaseInput, decide_reservation_release
from kustodian.policy.capacity.stale import PodState

from .capacity_builders import GiB, acr, req


def _acr(name: str, nodes: tuple[str, ...] = ("a", "b")) -> dict[str, Any]:
    return acr(name, [req("v", "HDD", GiB, reservations=[f"ac-{n}" for n in nodes])], list(nodes),
               status="RESERVED", reserved=list(nodes))


AC_NODES = {"ac-a": "a", "ac-b": "b"}
NODE_IDS = {"k8s-a": "a", "k8s-b": "b"}


def test_a_bound_pod_keeps_only_its_nodes_reservations() -> None:
    observed = ReservationReleaseInput((_acr("default-web"),), {"default/web": PodState("k8s-b")}, NODE_IDS,
                                       AC_NODES)
    (release,) = decide_reservation_release(observed)
    assert release.node_id == "b"
    assert release.reservation is observed.reservations[0]
    assert release.narrowed["spec"]["NodeRequests"]["Reserved"] == ["b"]
    assert release.narrowed["spec"]["ReservationRequests"][0]["Reservations"] == ["ac-b"]


def test_nothing_is_released_without_a_binding_a_node_id_or_the_acs_node() -> None:
    web = (_acr("default-web"),)
    assert decide_reservation_release(ReservationReleaseInput(web, {"default/web": PodState()}, NODE_IDS,
                                                              AC_NODES)) == ()
    assert decide_reservation_release(ReservationReleaseInput(web, {"default/web": PodState("k8s-c")}, NODE_IDS,
                                                              AC_NODES)) == ()
    # the AC on the bound node is unknown: a guess could drop the AC the volume needs
    assert decide_reservation_release(ReservationReleaseInput(web, {"default/web": PodState("k8s-b")}, NODE_IDS,
                                                              {"ac-a": "a"})) == ()
