"""``decide_reservation_gc`` over one frozen input, and ``confirms`` (a delete is made only when
the decision on the ACR and its pod read again collects it too)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kustodian.policy.capacity.gc import ReservationGcInput, confirms, decide_reservation_gc
from kustodian.policy.capacity.stale import PodState, stale_reservations

from .capacity_builders import NOW, GiB, acr, req

TTL = timedelta(minutes=30)


def _acr(name: str, created: str = "2024-01-01T11:50:00Z") -> dict[str, Any]:
    return acr(name, [req("v", "HDD", GiB, reservations=["ac-a"])], ["a"], status="RESERVED", reserved=["a"],
               created=created)


ACRS = (_acr("default-live"), _acr("default-gone"), _acr("default-up"),
        _acr("default-old", created="2024-01-01T11:00:00Z"))
PODS = {"default/live": PodState(), "default/up": PodState("k8s-a", "Running"), "default/old": PodState()}


def test_the_decision_over_the_input_is_stale_reservations() -> None:
    observed = ReservationGcInput(ACRS, PODS, TTL)
    assert list(decide_reservation_gc(observed, NOW)) == stale_reservations(ACRS, PODS, NOW, TTL)
    assert [s.name for s in decide_reservation_gc(observed, NOW)] == ["default-gone", "default-old", "default-up"]


CONFIRM_CASES: list[tuple[str, tuple[dict[str, Any], ...], dict[str, PodState], bool]] = [
    ("pod-gone-on-the-api-server-too", (_acr("default-gone"),), {}, True),
    ("pod-there-after-all", (_acr("default-gone"),), {"default/gone": PodState()}, False),
    ("pod-there-and-running", (_acr("default-gone"),), {"default/gone": PodState("k8s-a", "Running")}, True),
    ("acr-gone-already", (), {}, False),
]


@pytest.mark.parametrize(("acrs", "pods", "confirmed"), [c[1:] for c in CONFIRM_CASES],
                         ids=[c[0] for c in CONFIRM_CASES])
def test_a_collection_is_confirmed_by_the_decision_on_a_fresh_gather(
        acrs: tuple[dict[str, Any], ...], pods: dict[str, PodState], confirmed: bool) -> None:
    (first,) = [s for s in decide_reservation_gc(ReservationGcInput(ACRS, PODS, TTL), NOW) if s.name == "default-gone"]
    fresh = decide_reservation_gc(ReservationGcInput(acrs, pods, TTL), NOW)
    assert confirms(fresh, first) is confirmed
