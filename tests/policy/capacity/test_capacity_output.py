"""``apply_decision`` (the ACR the controller writes) and ``plan_table`` (the CLI rows)."""

from __future__ import annotations

import copy
from datetime import timedelta
from types import MappingProxyType
from typing import Any

import pytest

from kustodian.policy.capacity import (
    PLAN_TABLE_HEADER,
    Decision,
    apply_decision,
    plan_all,
    plan_table,
    validate_reservation,
)

from .capacity_builders import NOW, GiB, ac, acr, req

RESERVED = Decision("pod", "RESERVED", ("b", "a"), {"v": ("b1", "a1"), "w": ("b2", "a2")})
REJECTED = Decision("pod", "REJECTED", reason="no requested node can hold every volume: a: ...")
WAIT = Decision("pod", "WAIT", reason="sequential LVG mode: waiting", retry_after=timedelta(seconds=10))


def _asking(**extra: Any) -> dict[str, Any]:
    obj = acr("pod", [req("v", "HDD", GiB, reservations=["old"]), req("w", "SSD", GiB)], ["a", "b"])
    obj.update(extra)
    return obj


CASES: list[tuple[str, Decision, dict[str, Any], dict[str, Any]]] = [
    (
        "reserved-writes-nodes-and-acs-in-node-order",
        RESERVED,
        _asking(status={"reason": "Rejected", "message": "old", "other": 1}),
        {"status": "RESERVED", "reserved": ["b", "a"], "reservations": [["b1", "a1"], ["b2", "a2"]],
         "obj_status": {"other": 1}},
    ),
    (
        "reserved-without-status-adds-none",
        RESERVED,
        _asking(),
        {"status": "RESERVED", "reserved": ["b", "a"], "reservations": [["b1", "a1"], ["b2", "a2"]],
         "obj_status": None},
    ),
    (
        "rejected-clears-reservations-and-says-why",
        REJECTED,
        _asking(),
        {"status": "REJECTED", "reserved": [], "reservations": [[], []],
         "obj_status": {"reason": "Rejected", "message": REJECTED.reason}},
    ),
    (
        "wait-leaves-the-spec-alone",
        WAIT,
        _asking(),
        {"status": "REQUESTED", "reserved": [], "reservations": [["old"], []],
         "obj_status": {"reason": "WaitingForLVGReservation", "message": WAIT.reason}},
    ),
]


@pytest.mark.parametrize(("decision", "obj", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_apply_decision(decision: Decision, obj: dict[str, Any], want: dict[str, Any]) -> None:
    before = copy.deepcopy(obj)
    new = apply_decision(obj, decision)
    assert obj == before  # the input is never mutated
    assert new["spec"]["status"] == want["status"]
    assert new["spec"]["nodeRequests"]["reserved"] == want["reserved"]
    assert new["spec"]["nodeRequests"]["requested"] == ["a", "b"]
    assert [r["reservations"] for r in new["spec"]["reservationRequests"]] == want["reservations"]
    assert new.get("status") == want["obj_status"]
    assert new["metadata"] == obj["metadata"]
    assert validate_reservation(new) == []


def test_apply_decision_copies_read_only_input_deeply() -> None:
    obj = _asking()
    frozen = MappingProxyType({**obj, "spec": MappingProxyType(obj["spec"])})
    new = apply_decision(frozen, RESERVED)
    assert isinstance(new["spec"], dict)
    new["spec"]["nodeRequests"]["requested"].append("z")
    assert obj["spec"]["nodeRequests"]["requested"] == ["a", "b"]


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
