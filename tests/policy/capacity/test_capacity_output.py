"""``apply_decision`` (the ACR the controller writes) and ``plan_table`` (the CLI rows)."""

from __future__ import annotations

import copy
from datetime import timedelta
from types import MappingProxyType
from typing import Any

import pytest

from kustodian.policy.capacity import (
    PLAN_TABLE_HEADER,
    ReservationDecision,
    apply_decision,
    narrow_to_node,
    plan_all,
    plan_table,
    validate_reservation,
)

from .capacity_builders import NOW, GiB, ac, acr, req

RESERVED = ReservationDecision("pod", "RESERVED", ("b", "a"), {"v": ("b1", "a1"), "w": ("b2", "a2")})
REJECTED = ReservationDecision("pod", "REJECTED", reason="no requested node can hold every volume: a: ...")
WAIT = ReservationDecision("pod", "WAIT", reason="sequential LVG mode: waiting", retry_after=timedelta(seconds=10))


def _asking(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return acr("pod", [req("v", "HDD", GiB, reservations=["old"]), req("w", "SSD", GiB)], ["a", "b"],
               annotations=annotations)


SINCE = "kustodian.io/status-since"
STAMP = "2024-01-01T12:00:00Z"  # NOW
CASES: list[tuple[str, ReservationDecision, dict[str, Any], dict[str, Any]]] = [
    (
        "reserved-writes-nodes-and-acs-in-node-order-and-drops-the-reason",
        RESERVED,
        _asking({"kustodian.io/reason": "Rejected", "kustodian.io/message": "old", "other": "1"}),
        {"Status": "RESERVED", "Reserved": ["b", "a"], "Reservations": [["b1", "a1"], ["b2", "a2"]],
         "annotations": {"other": "1", SINCE: STAMP}},
    ),
    (
        "reserved-without-annotations-adds-only-the-status-time",
        RESERVED,
        _asking(),
        {"Status": "RESERVED", "Reserved": ["b", "a"], "Reservations": [["b1", "a1"], ["b2", "a2"]],
         "annotations": {SINCE: STAMP}},
    ),
    (
        "rejected-leaves-reservations-out-as-omitempty-does-and-says-why",
        REJECTED,
        _asking(),
        {"Status": "REJECTED", "Reserved": None, "Reservations": [None, None],
         "annotations": {"kustodian.io/reason": "Rejected", "kustodian.io/message": REJECTED.reason,
                         SINCE: STAMP}},
    ),
    (
        "wait-leaves-the-spec-and-the-status-time-alone",
        WAIT,
        _asking(),
        {"Status": "REQUESTED", "Reserved": [], "Reservations": [["old"], []],
         "annotations": {"kustodian.io/reason": "WaitingForLVGReservation", "kustodian.io/message": WAIT.reason}},
    ),
]


@pytest.mark.parametrize(("decision", "obj", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_apply_decision(decision: ReservationDecision, obj: dict[str, Any], want: dict[str, Any]) -> None:
    before = copy.deepcopy(obj)
    new = apply_decision(obj, decision, NOW)
    assert obj == before  # the input is never mutated
    assert new["spec"]["Status"] == want["Status"]
    assert new["spec"]["NodeRequests"].get("Reserved") == want["Reserved"]
    assert new["spec"]["NodeRequests"]["Requested"] == ["a", "b"]
    assert [r.get("Reservations") for r in new["spec"]["ReservationRequests"]] == want["Reservations"]
    assert new["metadata"].get("annotations", {}) == want["annotations"]
    assert "status" not in new  # the upstream CRD has none: it would be pruned
    assert validate_reservation(new) == []


def test_status_time_is_kept_when_the_status_does_not_change() -> None:
    obj = apply_decision(_asking(), RESERVED, NOW)
    again = apply_decision(obj, RESERVED, NOW + timedelta(hours=1))
    assert again["metadata"]["annotations"][SINCE] == STAMP


NARROW_CASES: list[tuple[str, dict[str, Any], str, dict[str, list[str]] | None]] = [
    ("keeps-the-bound-nodes-acs", apply_decision(_asking(), RESERVED), "a", {"v": ["a1"], "w": ["a2"]}),
    ("first-node-too", apply_decision(_asking(), RESERVED), "b", {"v": ["b1"], "w": ["b2"]}),
    ("a-node-not-reserved-releases-nothing", apply_decision(_asking(), RESERVED), "c", None),
    ("one-node-left-is-nothing-to-release",
     apply_decision(_asking(), ReservationDecision("pod", "RESERVED", ("a",), {"v": ("a1",), "w": ("a2",)})), "a", None),
    ("not-reserved-is-left-alone", _asking(), "a", None),
]


def node_of(ac_name: str) -> str:
    return ac_name[0]  # "a1" is on node "a"


@pytest.mark.parametrize(("obj", "node", "want"), [c[1:] for c in NARROW_CASES], ids=[c[0] for c in NARROW_CASES])
def test_narrow_to_node(obj: dict[str, Any], node: str, want: dict[str, list[str]] | None) -> None:
    new = narrow_to_node(obj, node, node_of)
    if want is None:
        assert new is None
        return
    assert new is not None
    assert new["spec"]["NodeRequests"]["Reserved"] == [node]
    assert {r["CapacityRequest"]["Name"]: r["Reservations"] for r in new["spec"]["ReservationRequests"]} == want
    assert validate_reservation(new) == []


def test_narrow_to_node_goes_by_the_acs_node_not_by_position() -> None:
    obj = apply_decision(_asking(), RESERVED)  # Reserved ["b", "a"]
    obj["spec"]["ReservationRequests"][0]["Reservations"] = ["a1", "b1"]  # another writer's order
    new = narrow_to_node(obj, "a", node_of)
    assert new is not None
    assert [r["Reservations"] for r in new["spec"]["ReservationRequests"]] == [["a1"], ["a2"]]


@pytest.mark.parametrize("acs", [["b1"], ["a1", "a9"]], ids=["no-ac-on-the-node", "two-acs-on-the-node"])
def test_narrow_to_node_refuses_to_guess(acs: list[str]) -> None:
    obj = apply_decision(_asking(), RESERVED)
    obj["spec"]["ReservationRequests"][0]["Reservations"] = acs
    assert narrow_to_node(obj, "a", node_of) is None


def test_apply_decision_copies_read_only_input_deeply() -> None:
    obj = _asking()
    frozen = MappingProxyType({**obj, "spec": MappingProxyType(obj["spec"])})
    new = apply_decision(frozen, RESERVED)
    assert isinstance(new["spec"], dict)
    new["spec"]["NodeRequests"]["Requested"].append("z")
    assert obj["spec"]["NodeRequests"]["Requested"] == ["a", "b"]


def test_apply_decision_refuses_another_acrs_decision() -> None:
    with pytest.raises(ValueError, match="decision is for 'pod', not for ACR 'other'"):
        apply_decision(acr("other", [req("v", "HDD", 1)], ["a"]), RESERVED)


def test_plan_table_rows() -> None:
    acs = [ac("h1", "a", "HDD", GiB, location="disk-1"), ac("h2", "b", "HDD", 2 * GiB, location="disk-2")]
    acrs = [
        acr("p1", [req("data", "HDD", GiB)], ["a", "b"], created="2024-01-01T00:00:00Z"),
        acr("p2", [req("data", "HDD", 5 * GiB)], ["a"], created="2024-01-01T00:00:01Z"),
    ]
    decisions = plan_all(acrs, acs, NOW)
    assert PLAN_TABLE_HEADER == ("ACR", "STATUS", "NODE", "REQUEST", "AC/LOCATION", "SIZE", "REASON")
    assert plan_table(decisions, acs, acrs) == [
        ("p1", "RESERVED", "a", "data", "h1/disk-1", "1 GiB", ""),
        ("p1", "RESERVED", "b", "data", "h2/disk-2", "1 GiB", ""),
        ("p2", "REJECTED", "-", "-", "-", "-", decisions[1].reason),
    ]


def test_plan_table_without_lookups_shows_what_the_decision_knows() -> None:
    assert plan_table([RESERVED, WAIT]) == [
        ("pod", "RESERVED", "b", "v", "b1", "-", ""),
        ("pod", "RESERVED", "b", "w", "b2", "-", ""),
        ("pod", "RESERVED", "a", "v", "a1", "-", ""),
        ("pod", "RESERVED", "a", "w", "a2", "-", ""),
        ("pod", "WAIT", "-", "-", "-", "-", WAIT.reason),
    ]
