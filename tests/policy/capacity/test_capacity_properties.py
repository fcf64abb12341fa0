"""Properties of the planner over generated clusters (hypothesis).

Small clusters (3 nodes, a handful of drives, sizes of a few MiB around extent
boundaries) make collisions, sharing and alignment edge cases common.  The soundness
checker in ``capacity_builders`` recomputes every promise from the written ACRs.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kustodian.policy.capacity import PlanOptions, plan, plan_all
from kustodian.policy.capacity.synthetic import synthetic_cluster

from .capacity_builders import NOW, MiB, ac, acr, assert_sound, req, written

NODES = ["node-0", "node-1", "node-2"]
AC_CLASSES = ["HDD", "SSD", "NVME", "HDDLVG", "SSDLVG", "NVMELVG", "SYSLVG"]
REQUEST_CLASSES = [*AC_CLASSES, "ANY"]
SETTINGS = settings(max_examples=200, deadline=None, database=None)

sizes = st.one_of(
    st.integers(min_value=0, max_value=40 * MiB),
    st.integers(min_value=0, max_value=12).map(lambda k: k * MiB),
    st.integers(min_value=1, max_value=10).map(lambda k: k * 4 * MiB + 1),
)
groups = st.sampled_from(["", "", "g"])


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    acs = [
        ac(f"ac-{i:02d}", draw(st.sampled_from(NODES)), draw(st.sampled_from(AC_CLASSES)), draw(sizes),
           group=draw(groups) or None)
        for i in range(draw(st.integers(min_value=0, max_value=10)))
    ]
    acrs = []
    for i in range(draw(st.integers(min_value=1, max_value=6))):
        n_requests = draw(st.integers(min_value=1, max_value=3))
        requests = [
            req(f"v{j}", draw(st.sampled_from(REQUEST_CLASSES)), draw(sizes), group=draw(groups) or None)
            for j in range(n_requests)
        ]
        nodes = draw(st.lists(st.sampled_from(NODES), min_size=0, max_size=3, unique=True))
        minute = draw(st.integers(min_value=0, max_value=3))  # ties exercise the name order
        acrs.append(acr(f"pod-{i}", requests, nodes, created=f"2024-01-01T11:5{minute}:00Z"))
    return acs, acrs


@SETTINGS
@given(clusters())
def test_no_ac_is_over_committed_and_every_reservation_fits(cluster: tuple[list[Any], list[Any]]) -> None:
    acs, acrs = cluster
    decisions = plan_all(acrs, acs, NOW)
    assert sorted(d.acr_name for d in decisions) == sorted(a["metadata"]["name"] for a in acrs)
    assert_sound(acs, written(acrs, decisions))
    for d in decisions:
        if d.status == "RESERVED":
            assert d.reserved_nodes and not d.reason
            assert all(len(chosen) == len(d.reserved_nodes) for chosen in d.reservations.values())
        else:
            assert d.status == "REJECTED" and d.reason and not d.reserved_nodes and not d.reservations


@SETTINGS
@given(clusters(), clusters())
def test_a_second_batch_respects_the_first(first: tuple[list[Any], list[Any]], second: tuple[list[Any], list[Any]]) -> None:
    acs = first[0]
    batch1 = written(first[1], plan_all(first[1], acs, NOW))
    batch2 = [{**a, "metadata": {**a["metadata"], "name": "late-" + a["metadata"]["name"]}} for a in second[1]]
    decisions = plan_all(batch1 + batch2, acs, NOW)
    assert {d.acr_name for d in decisions} == {a["metadata"]["name"] for a in batch2}
    assert_sound(acs, batch1 + written(batch2, decisions))


@SETTINGS
@given(clusters(), st.randoms(use_true_random=False), st.booleans())
def test_input_order_does_not_change_the_plan(
    cluster: tuple[list[Any], list[Any]], rng: random.Random, sequential: bool
) -> None:
    acs, acrs = cluster
    options = PlanOptions(sequential_lvg=sequential)
    expected = plan_all(acrs, acs, NOW, options)
    shuffled_acs = rng.sample(acs, len(acs))
    shuffled_acrs = rng.sample(acrs, len(acrs))
    for a in shuffled_acrs:
        rng.shuffle(a["spec"]["ReservationRequests"])  # the ACR's own request order is irrelevant too
    assert plan_all(shuffled_acrs, shuffled_acs, NOW, options) == expected


@SETTINGS
@given(clusters())
def test_the_first_of_a_batch_is_planned_as_if_alone(cluster: tuple[list[Any], list[Any]]) -> None:
    acs, acrs = cluster
    decisions = plan_all(acrs, acs, NOW)
    first = next(a for a in acrs if a["metadata"]["name"] == decisions[0].acr_name)
    assert plan(first, acs, acrs, NOW) == decisions[0]


@SETTINGS
@given(clusters())
def test_a_rejection_names_every_requested_node(cluster: tuple[list[Any], list[Any]]) -> None:
    acs, acrs = cluster
    by_name = {a["metadata"]["name"]: a for a in acrs}
    for d in plan_all(acrs, acs, NOW):
        nodes = by_name[d.acr_name]["spec"]["NodeRequests"]["Requested"]
        if d.status == "REJECTED" and nodes:
            assert d.reason.startswith("no requested node can hold every volume: ")
            assert all(f"{n}:" in d.reason or f"{n}," in d.reason for n in nodes)


@SETTINGS
@given(clusters())
def test_sequential_mode_is_sound_and_waiting_reserves_nothing(cluster: tuple[list[Any], list[Any]]) -> None:
    acs, acrs = cluster
    decisions = plan_all(acrs, acs, NOW, PlanOptions(sequential_lvg=True))
    for d in decisions:
        if d.status == "WAIT":
            assert d.retry_after is not None and d.retry_after.total_seconds() > 0
            assert not d.reserved_nodes and not d.reservations
    assert_sound(acs, written(acrs, decisions))


@settings(max_examples=20, deadline=None, database=None)
@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=1, max_value=4))
def test_synthetic_clusters_plan_soundly(seed: int, nodes_per_acr: int) -> None:
    acs, acrs = synthetic_cluster(20, 6, 60, 3, seed, nodes_per_acr=nodes_per_acr)
    decisions = plan_all(acrs, acs, NOW)
    assert_sound(acs, written(acrs, decisions))
    assert any(d.status == "RESERVED" for d in decisions)
