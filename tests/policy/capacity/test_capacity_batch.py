"""``plan_all`` (batch order, reservations seen across a batch) and sequential LVG mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from kustodian.policy.capacity import PlanOptions, ReservationDecision, plan, plan_all

from .capacity_builders import NOW, GiB, MiB, ac, acr, assert_sound, held, req, written

T0 = "2024-01-01T11:00:00Z"
T1 = "2024-01-01T11:30:00Z"


def test_batch_plans_oldest_first_then_by_name_and_only_requested() -> None:
    acrs = [
        acr("c", [req("v", "HDD", GiB)], ["n"], created=T0),
        acr("b", [req("v", "HDD", GiB)], ["n"], created=T1),
        acr("a", [req("v", "HDD", GiB)], ["n"], created=T1),
        acr("no-time", [req("v", "HDD", GiB)], ["n"], created=None),
        acr("bad-time", [req("v", "HDD", GiB)], ["n"], created="yesterday"),
        acr("done", [req("v", "HDD", GiB, reservations=["h0"])], ["n"], status="RESERVED", reserved=["n"]),
        acr("refused", [req("v", "HDD", GiB)], ["n"], status="REJECTED"),
        acr("leaving", [req("v", "HDD", GiB)], ["n"], deleting=True),
    ]
    acs = [ac(f"h{i}", "n", "HDD", GiB) for i in range(4)]
    decisions = plan_all(acrs, acs, NOW)
    assert [d.acr_name for d in decisions] == ["c", "a", "b", "bad-time", "no-time"]
    # h0 is held by "done"; the oldest three get the other drives, the rest find none.
    assert [d.reservations.get("v") for d in decisions] == [("h1",), ("h2",), ("h3",), None, None]
    assert [d.status for d in decisions] == ["RESERVED"] * 3 + ["REJECTED"] * 2


def test_batch_later_acr_shares_the_group_an_earlier_one_made() -> None:
    acs = [ac("small", "n", "HDD", 50 * GiB), ac("big", "n", "HDD", 100 * GiB)]
    acrs = [
        acr("first", [req("v", "HDDLVG", 60 * GiB)], ["n"], created=T0),
        acr("second", [req("v", "HDDLVG", 10 * GiB)], ["n"], created=T1),
    ]
    first, second = plan_all(acrs, acs, NOW)
    assert first.reservations == {"v": ("big",)}
    assert second.reservations == {"v": ("big",)}
    assert_sound(acs, written(acrs, [first, second]))


def test_batch_never_promises_the_same_drive_twice() -> None:
    acs = [ac("h", "a", "HDD", GiB), ac("g", "b", "HDD", GiB)]
    acrs = [acr(f"p{i}", [req("v", "HDD", GiB)], ["a", "b"], created=T0) for i in range(3)]
    decisions = plan_all(acrs, acs, NOW)
    assert [(d.acr_name, d.status, d.reserved_nodes) for d in decisions] == [
        ("p0", "RESERVED", ("a", "b")),
        ("p1", "REJECTED", ()),
        ("p2", "REJECTED", ()),
    ]
    # The rejection reflects what p0 just took, not the cluster before the batch.
    assert decisions[1].reason == (
        "no requested node can hold every volume: a, b: v (HDD 1 GiB): "
        "no free HDD drive of 1 GiB or more (every HDD drive reserved)"
    )
    assert_sound(acs, written(acrs, decisions))


def test_batch_first_decision_matches_planning_it_alone() -> None:
    acs = [ac("h", "a", "HDD", GiB), ac("vg", "a", "HDDLVG", GiB)]
    acrs = [
        acr("x", [req("v", "HDD", GiB), req("w", "HDDLVG", 8 * MiB)], ["a"], created=T0),
        held("y", [("w", "HDDLVG", 8 * MiB, ["vg"])], ["a"]),
    ]
    assert plan_all(acrs, acs, NOW)[0] == plan(acrs[0], acs, acrs, NOW)


# -- sequential LVG mode ----------------------------------------------------------------

SEQ = PlanOptions(sequential_lvg=True)


@dataclass
class SeqCase:
    id: str
    target: dict[str, Any]
    others: list[dict[str, Any]] = field(default_factory=list)
    options: PlanOptions = SEQ
    status: str = "RESERVED"
    retry_after: timedelta | None = None
    reason_has: tuple[str, ...] = ()


def _lvg(
    name: str, storage_class: str = "HDDLVG", nodes: tuple[str, ...] = ("a",), created: str | None = "2024-01-01T11:58:00Z"
) -> dict[str, Any]:
    return acr(name, [req("v", storage_class, 4 * MiB)], list(nodes), created=created)


HOLDER = held("holder", [("x", "HDDLVG", 4 * MiB, ["a-vg"])], ["a"])
SEQ_ACS = [ac("a-vg", "a", "HDDLVG", GiB), ac("a-ssd", "a", "SSD", GiB), ac("b-vg", "b", "HDDLVG", GiB),
           ac("a-svg", "a", "SSDLVG", GiB)]

SEQ_CASES = [
    # On by default, as upstream's SequentialLVGReservation.
    SeqCase("on-by-default-waits-beside-an-lvg-holder", _lvg("pod"), [HOLDER], options=PlanOptions(),
            status="WAIT", retry_after=timedelta(seconds=10)),
    SeqCase("off-plans-beside-an-lvg-holder", _lvg("pod"), [HOLDER], options=PlanOptions(sequential_lvg=False)),
    SeqCase(
        "waits-while-an-lvg-acr-of-the-same-class-is-reserved-on-its-node",
        _lvg("pod"),
        [HOLDER],
        status="WAIT",
        retry_after=timedelta(seconds=10),
        reason_has=(
            "sequential LVG mode: waiting for reservation(s) holder (HDDLVG on a)",
            "planning anyway from 2024-01-01T12:03:00+00:00",
        ),
    ),
    SeqCase("an-lvg-holder-of-another-class-does-not-block", _lvg("pod", "SSDLVG"), [HOLDER]),
    SeqCase("an-lvg-holder-on-another-node-does-not-block", _lvg("pod", nodes=("b",)), [HOLDER]),
    SeqCase(
        "any-blocked-node-makes-the-acr-wait",
        _lvg("pod", nodes=("b", "a")),
        [HOLDER],
        status="WAIT",
        retry_after=timedelta(seconds=10),
    ),
    SeqCase(
        "a-plain-holder-does-not-block",
        _lvg("pod"),
        [held("holder", [("x", "SSD", GiB, ["a-ssd"])], ["a"])],
    ),
    SeqCase(
        "an-acr-without-lvg-requests-never-waits",
        acr("pod", [req("v", "SSD", GiB)], ["a"], created="2024-01-01T11:58:00Z"),
        [HOLDER],
    ),
    SeqCase(
        "retry-is-capped-by-the-timeout",
        _lvg("pod", created="2024-01-01T11:55:05Z"),
        [HOLDER],
        status="WAIT",
        retry_after=timedelta(seconds=5),
    ),
    SeqCase("after-the-timeout-plans-anyway", _lvg("pod", created="2024-01-01T11:55:00Z"), [HOLDER]),
    SeqCase("without-a-creation-time-plans-rather-than-wait-forever", _lvg("pod", created=None), [HOLDER]),
    SeqCase(
        "timeout-is-an-option",
        _lvg("pod", created="2024-01-01T11:00:00Z"),
        [HOLDER],
        options=PlanOptions(sequential_lvg=True, sequential_lvg_timeout=timedelta(hours=2),
                            sequential_lvg_retry=timedelta(minutes=1)),
        status="WAIT",
        retry_after=timedelta(minutes=1),
    ),
    SeqCase("its-own-earlier-reservation-does-not-block-it", _lvg("pod"),
            [held("pod", [("v", "HDDLVG", 4 * MiB, ["a-vg"])], ["a"])]),
]


@pytest.mark.parametrize("case", SEQ_CASES, ids=[c.id for c in SEQ_CASES])
def test_sequential_lvg(case: SeqCase) -> None:
    d = plan(case.target, SEQ_ACS, case.others, NOW, case.options)
    assert d.status == case.status, d.reason
    assert d.retry_after == case.retry_after
    for text in case.reason_has:
        assert text in d.reason
    if case.status == "WAIT":
        assert d.reserved_nodes == () and dict(d.reservations) == {}


def test_sequential_batch_lets_one_lvg_acr_per_node_and_class_reserve() -> None:
    acrs = [
        _lvg("first", created="2024-01-01T11:58:00Z"),
        _lvg("second", created="2024-01-01T11:59:00Z"),
        _lvg("other-class", "SSDLVG", created="2024-01-01T11:59:00Z"),
        _lvg("stale", created="2024-01-01T11:00:00Z"),
    ]
    decisions = {d.acr_name: d for d in plan_all(acrs, SEQ_ACS, NOW, SEQ)}
    # "stale" is oldest, so it reserves first; the others then wait behind it, except
    # the SSDLVG one.  "stale" would have planned anyway: its timeout is long past.
    assert {n: d.status for n, d in decisions.items()} == {
        "stale": "RESERVED", "first": "WAIT", "second": "WAIT", "other-class": "RESERVED",
    }
    assert "waiting for reservation(s) stale (HDDLVG on a)" in decisions["first"].reason


def test_wait_decision_type() -> None:
    d = plan(_lvg("pod"), SEQ_ACS, [HOLDER], NOW, SEQ)
    assert isinstance(d, ReservationDecision) and d.status == "WAIT"


def test_wait_reason_stays_short_when_holders_are_everywhere() -> None:
    nodes = [f"n{i}" for i in range(7)]
    acs = [ac(f"{n}-vg", n, "HDDLVG", GiB) for n in nodes]
    holders = [held(f"h{j}", [("x", "HDDLVG", 4 * MiB, [f"{n}-vg" for n in nodes])], nodes) for j in range(6)]
    d = plan(_lvg("pod", nodes=tuple(nodes)), acs, holders, NOW, SEQ)
    assert d.status == "WAIT"
    assert "h0 (HDDLVG on n0, HDDLVG on n1, HDDLVG on n2, HDDLVG on n3, HDDLVG on n4 and 2 more)" in d.reason
    assert "h4 (" in d.reason and "h5 (" not in d.reason and "and 1 more reservations" in d.reason


@pytest.mark.parametrize(("limit", "nodes"), [(0, ("a", "b", "c")), (2, ("a", "b")), (1, ("a",))],
                         ids=["zero-reserves-on-every-fitting-node", "two", "one"])
def test_max_reserved_nodes_takes_the_first_that_fit(limit: int, nodes: tuple[str, ...]) -> None:
    acs = [ac(f"{n}1", n, "HDD", GiB) for n in "abc"] + [ac("d1", "d", "HDD", MiB)]
    target = acr("pod", [req("v", "HDD", GiB)], ["d", "a", "b", "c"])
    d = plan(target, acs, [], NOW, PlanOptions(max_reserved_nodes=limit))
    assert d.reserved_nodes == nodes
