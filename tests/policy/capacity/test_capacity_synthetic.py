"""``synthetic_cluster``: the reproducible input of the planner benchmark."""

from __future__ import annotations

import pytest

from kustodian.policy.capacity import validate_available_capacity, validate_reservation
from kustodian.policy.capacity.synthetic import synthetic_cluster


def test_same_seed_same_cluster_other_seed_other_cluster() -> None:
    assert synthetic_cluster(10, 4, 20, 3, seed=7) == synthetic_cluster(10, 4, 20, 3, seed=7)
    assert synthetic_cluster(10, 4, 20, 3, seed=7) != synthetic_cluster(10, 4, 20, 3, seed=8)


@pytest.mark.parametrize(
    ("nodes", "drives", "acrs", "volumes", "per_acr"),
    [(1, 1, 1, 1, 3), (30, 12, 50, 3, 3), (5, 2, 10, 4, 10)],
    ids=["tiny", "default-shape", "more-nodes-asked-than-exist"],
)
def test_shape_and_validity(nodes: int, drives: int, acrs: int, volumes: int, per_acr: int) -> None:
    acs, reservations = synthetic_cluster(nodes, drives, acrs, volumes, seed=1, nodes_per_acr=per_acr)
    assert len(acs) == nodes * drives
    assert len(reservations) == acrs
    assert len({a["metadata"]["name"] for a in acs}) == len(acs)
    assert len({r["metadata"]["name"] for r in reservations}) == acrs
    for a in acs:
        assert validate_available_capacity(a) == []
    for r in reservations:
        assert validate_reservation(r) == []
        assert r["spec"]["Status"] == "REQUESTED"
        assert len(r["spec"]["ReservationRequests"]) == volumes
        requested = r["spec"]["NodeRequests"]["Requested"]
        assert 1 <= len(requested) <= per_acr and len(set(requested)) == len(requested)


def test_grouped_requests_ask_for_nodes_that_have_the_group() -> None:
    acs, reservations = synthetic_cluster(50, 4, 400, 2, seed=3)
    grouped_nodes = {a["spec"]["NodeId"] for a in acs if a["metadata"]["labels"]}
    grouped = [r for r in reservations if r["spec"]["ReservationRequests"][0]["CapacityRequest"].get("StorageGroup")]
    assert grouped
    for r in grouped:
        assert set(r["spec"]["NodeRequests"]["Requested"]) <= grouped_nodes
