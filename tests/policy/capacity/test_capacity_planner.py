"""The planner's rules, one table row per behaviour (planning a single ACR with ``plan``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kustodian.policy.capacity import PlanOptions, ReservationDecision, plan

from .capacity_builders import NOW, GiB, MiB, ac, acr, held, req


@dataclass
class Case:
    id: str
    acs: list[dict[str, Any]]
    target: dict[str, Any]
    status: str
    nodes: tuple[str, ...] = ()
    reservations: dict[str, tuple[str, ...]] = field(default_factory=dict)
    others: list[dict[str, Any]] = field(default_factory=list)
    reason_has: tuple[str, ...] = ()


# The seed's example: pvc1 HDD 10, pvc2 HDDLVG 20, pvc3 HDDLVG 10, pvc4 HDD 100.
SEED_REQUESTS = [
    req("pvc1", "HDD", 10 * GiB),
    req("pvc2", "HDDLVG", 20 * GiB),
    req("pvc3", "HDDLVG", 10 * GiB),
    req("pvc4", "HDD", 100 * GiB),
]

CASES = [
    Case(
        "seed-example-lvg-first-then-size-on-node-with-a-group-and-two-hdd-drives",
        [ac("vg", "n1", "HDDLVG", 40 * GiB), ac("hdd-10", "n1", "HDD", 10 * GiB), ac("hdd-100", "n1", "HDD", 100 * GiB)],
        acr("pod", SEED_REQUESTS, ["n1"]),
        "RESERVED",
        ("n1",),
        {"pvc1": ("hdd-10",), "pvc2": ("vg",), "pvc3": ("vg",), "pvc4": ("hdd-100",)},
    ),
    Case(
        "seed-example-two-hdd-drives-lvg-volumes-share-one-converted-drive",
        [ac("hdd-30", "n1", "HDD", 30 * GiB), ac("hdd-100", "n1", "HDD", 100 * GiB)],
        acr("pod", [req("pvc2", "HDDLVG", 20 * GiB), req("pvc3", "HDDLVG", 5 * GiB), req("pvc4", "HDD", 100 * GiB)], ["n1"]),
        "RESERVED",
        ("n1",),
        {"pvc2": ("hdd-30",), "pvc3": ("hdd-30",), "pvc4": ("hdd-100",)},
    ),
    Case(
        "seed-example-two-hdd-drives-is-short-of-a-third-drive-and-says-pvc4",
        [ac("hdd-40", "n1", "HDD", 40 * GiB), ac("hdd-100", "n1", "HDD", 100 * GiB)],
        acr("pod", SEED_REQUESTS, ["n1"]),
        "REJECTED",
        reason_has=("n1: pvc4 (HDD 100 GiB): no free HDD drive of 100 GiB or more (every HDD drive reserved)",),
    ),
    Case(
        "requests-are-placed-lvg-first-so-lvg-does-not-lose-its-drive-to-a-plain-volume",
        # Input order HDD first: placing it first would take the only drive the LVG needs.
        [ac("hdd-a", "n1", "HDD", 10 * GiB), ac("hdd-b", "n1", "HDD", 50 * GiB)],
        acr("pod", [req("plain", "HDD", 5 * GiB), req("lvg", "HDDLVG", 20 * GiB)], ["n1"]),
        "RESERVED",
        ("n1",),
        {"plain": ("hdd-a",), "lvg": ("hdd-b",)},
    ),
    Case(
        "smaller-request-placed-first-gets-the-smaller-drive",
        [ac("hdd-small", "n1", "HDD", 10 * GiB), ac("hdd-big", "n1", "HDD", 100 * GiB)],
        acr("pod", [req("big", "HDD", 50 * GiB), req("small", "HDD", 5 * GiB)], ["n1"]),
        "RESERVED",
        ("n1",),
        {"big": ("hdd-big",), "small": ("hdd-small",)},
    ),
    Case(
        "acs-are-tried-by-size-then-by-name",
        [ac("hdd-b", "n1", "HDD", 10 * GiB), ac("hdd-a", "n1", "HDD", 10 * GiB), ac("hdd-0", "n1", "HDD", 20 * GiB)],
        acr("pod", [req("v", "HDD", GiB)], ["n1"]),
        "RESERVED",
        ("n1",),
        {"v": ("hdd-a",)},
    ),
    Case(
        "any-takes-hdd-before-a-smaller-ssd-or-nvme",
        [ac("nvme", "n1", "NVME", 10 * GiB), ac("ssd", "n1", "SSD", 10 * GiB), ac("hdd", "n1", "HDD", 100 * GiB)],
        acr("pod", [req("v", "ANY", GiB)], ["n1"]),
        "RESERVED",
        ("n1",),
        {"v": ("hdd",)},
    ),
    Case(
        "any-falls-back-to-ssd-then-nvme",
        [ac("nvme", "n1", "NVME", 10 * GiB), ac("ssd", "n1", "SSD", 10 * GiB), ac("hdd", "n1", "HDD", GiB)],
        acr("pod", [req("a", "ANY", 2 * GiB), req("b", "ANY", 3 * GiB)], ["n1"]),
        "RESERVED",
        ("n1",),
        {"a": ("ssd",), "b": ("nvme",)},
    ),
    Case(
        "any-never-takes-lvg-capacity",
        [ac("vg", "n1", "HDDLVG", 100 * GiB)],
        acr("pod", [req("v", "ANY", GiB)], ["n1"]),
        "REJECTED",
        reason_has=("n1: v (ANY 1 GiB): no HDD/SSD/NVME capacity on the node",),
    ),
    Case(
        "lvg-takes-an-existing-group-before-a-plain-drive",
        [ac("hdd", "n1", "HDD", 10 * GiB), ac("vg", "n1", "HDDLVG", 100 * GiB)],
        acr("pod", [req("v", "HDDLVG", GiB)], ["n1"]),
        "RESERVED",
        ("n1",),
        {"v": ("vg",)},
    ),
    Case(
        "lvg-converts-a-plain-drive-when-the-group-is-full",
        [ac("hdd", "n1", "HDD", 10 * GiB), ac("vg", "n1", "HDDLVG", 8 * MiB)],
        acr("pod", [req("v", "HDDLVG", 12 * MiB)], ["n1"]),
        "RESERVED",
        ("n1",),
        {"v": ("hdd",)},
    ),
    Case(
        "lvg-converts-only-drives-of-its-own-media",
        [ac("hdd", "n1", "HDD", 100 * GiB), ac("nvme-vg", "n1", "NVMELVG", 100 * GiB)],
        acr("pod", [req("v", "SSDLVG", GiB)], ["n1"]),
        "REJECTED",
        reason_has=("v (SSDLVG 1 GiB): no SSDLVG/SSD capacity on the node",),
    ),
    Case(
        "syslvg-uses-the-system-group-and-never-converts-a-drive",
        [ac("hdd", "n1", "HDD", 100 * GiB), ac("sys", "n1", "SYSLVG", 8 * MiB)],
        acr("pod", [req("a", "SYSLVG", 4 * MiB), req("b", "SYSLVG", 4 * MiB), req("c", "SYSLVG", 1)], ["n1"]),
        "REJECTED",
        # Smallest first: c (1 B, one extent), a, then b finds the group full.
        reason_has=("n1: b (SYSLVG 4 MiB): no SYSLVG room for 4 MiB (largest room on the node 0 B)",),
    ),
    Case(
        "lvg-sizes-round-up-to-4mib-extents",
        # Every volume takes a whole extent: 1 B + 3 MiB fill the 8 MiB group (smallest first).
        [ac("vg", "n1", "HDDLVG", 8 * MiB)],
        acr("pod", [req("a", "HDDLVG", 3 * MiB), req("b", "HDDLVG", 3 * MiB), req("c", "HDDLVG", 1)], ["n1"]),
        "REJECTED",
        reason_has=("n1: b (HDDLVG 3 MiB): no HDDLVG/HDD room for 4 MiB (largest room on the node 0 B)",),
    ),
    Case(
        "lvg-group-fills-exactly-to-its-size",
        [ac("vg", "n1", "HDDLVG", 8 * MiB)],
        acr("pod", [req("a", "HDDLVG", 3 * MiB), req("b", "HDDLVG", 4 * MiB)], ["n1"]),
        "RESERVED",
        ("n1",),
        {"a": ("vg",), "b": ("vg",)},
    ),
    Case(
        "converted-drive-keeps-1mib-of-lvm-metadata",
        # 9 MiB drive: 8 MiB after metadata, so two 4 MiB volumes fit...
        [ac("hdd", "n1", "HDD", 9 * MiB)],
        acr("pod", [req("a", "HDDLVG", 4 * MiB), req("b", "HDDLVG", 4 * MiB)], ["n1"]),
        "RESERVED",
        ("n1",),
        {"a": ("hdd",), "b": ("hdd",)},
    ),
    Case(
        "converted-drive-one-byte-short-of-the-metadata-loses-an-extent",
        # ...but one byte less leaves 4 MiB after metadata and rounding down.
        [ac("hdd", "n1", "HDD", 9 * MiB - 1)],
        acr("pod", [req("a", "HDDLVG", 4 * MiB), req("b", "HDDLVG", 4 * MiB)], ["n1"]),
        "REJECTED",
        reason_has=("b (HDDLVG 4 MiB): no HDDLVG/HDD room for 4 MiB (largest room on the node 0 B)",),
    ),
    Case(
        "plain-volume-needs-a-drive-at-least-its-size",
        [ac("hdd", "n1", "HDD", 10 * GiB)],
        acr("pod", [req("v", "HDD", 10 * GiB + 1)], ["n1"]),
        "REJECTED",
        reason_has=("v (HDD 10737418241 B): no free HDD drive of 10737418241 B or more (largest free on the node 10 GiB)",),
    ),
    Case(
        "plain-volume-fits-a-drive-of-exactly-its-size",
        [ac("hdd", "n1", "HDD", 10 * GiB)],
        acr("pod", [req("v", "HDD", 10 * GiB)], ["n1"]),
        "RESERVED",
        ("n1",),
        {"v": ("hdd",)},
    ),
    Case(
        "plain-volume-takes-the-whole-drive-one-volume-per-drive",
        [ac("hdd", "n1", "HDD", 100 * GiB)],
        acr("pod", [req("a", "HDD", GiB), req("b", "HDD", GiB)], ["n1"]),
        "REJECTED",
        reason_has=("b (HDD 1 GiB): no free HDD drive of 1 GiB or more (every HDD drive reserved)",),
    ),
    Case(
        "plain-volume-does-not-take-a-drive-this-acr-made-a-group",
        [ac("hdd", "n1", "HDD", 100 * GiB)],
        acr("pod", [req("lvg", "HDDLVG", GiB), req("plain", "HDD", GiB)], ["n1"]),
        "REJECTED",
        reason_has=("plain (HDD 1 GiB)",),
    ),
    Case(
        "storage-group-request-takes-only-labelled-acs",
        [ac("free", "n1", "HDD", 10 * GiB), ac("fast", "n1", "HDD", 100 * GiB, group="fast")],
        acr("pod", [req("v", "HDD", GiB, group="fast")], ["n1"]),
        "RESERVED",
        ("n1",),
        {"v": ("fast",)},
    ),
    Case(
        "storage-group-request-without-labelled-acs-is-rejected",
        [ac("free", "n1", "HDD", 10 * GiB), ac("slow", "n1", "HDD", 100 * GiB, group="slow")],
        acr("pod", [req("v", "HDD", GiB, group="fast")], ["n1"]),
        "REJECTED",
        reason_has=("v (HDD 1 GiB in storage group 'fast'): no HDD capacity on the node",),
    ),
    Case(
        "request-without-group-leaves-grouped-drives-to-their-group",
        [ac("fast", "n1", "HDD", 100 * GiB, group="fast")],
        acr("pod", [req("v", "HDD", GiB)], ["n1"]),
        "REJECTED",
        reason_has=("v (HDD 1 GiB): no HDD capacity on the node",),
    ),
    Case(
        "reserved-on-every-qualifying-node-in-requested-order",
        [
            ac("a1", "a", "HDD", 10 * GiB),
            ac("b1", "b", "HDD", GiB),
            ac("c1", "c", "HDD", 10 * GiB),
            ac("c2", "c", "HDDLVG", 10 * GiB),
        ],
        acr("pod", [req("v", "HDD", 5 * GiB)], ["c", "b", "a"]),
        "RESERVED",
        ("c", "a"),
        {"v": ("c1", "a1")},
    ),
    Case(
        "node-qualifies-only-if-every-volume-fits",
        [ac("a1", "a", "HDD", 10 * GiB), ac("b1", "b", "HDD", 10 * GiB), ac("b2", "b", "SSD", 10 * GiB)],
        acr("pod", [req("data", "HDD", GiB), req("wal", "SSD", GiB)], ["a", "b"]),
        "RESERVED",
        ("b",),
        {"data": ("b1",), "wal": ("b2",)},
    ),
    Case(
        "duplicate-requested-nodes-count-once",
        [ac("a1", "a", "HDD", 10 * GiB)],
        acr("pod", [req("v", "HDD", GiB)], ["a", "a"]),
        "RESERVED",
        ("a",),
        {"v": ("a1",)},
    ),
    Case(
        "rejection-names-each-node-its-first-failing-request-and-why",
        [ac("a1", "a", "HDD", GiB), ac("b1", "b", "HDD", 10 * GiB), ac("c1", "c", "HDD", GiB)],
        acr("pod", [req("data", "HDD", 2 * GiB), req("wal", "SSD", 4 * GiB)], ["a", "b", "c", "d"]),
        "REJECTED",
        reason_has=(
            "no requested node can hold every volume: ",
            "a, c: data (HDD 2 GiB): no free HDD drive of 2 GiB or more (largest free on these nodes 1 GiB)",
            "; b: wal (SSD 4 GiB): no SSD capacity on the node;",
            "d: data (HDD 2 GiB): no HDD capacity on the node",
        ),
    ),
    Case(
        "rejection-after-earlier-volumes-of-the-same-acr-took-the-space",
        # Each volume fits alone; together they do not: the reason names the second one.
        [ac("vg", "n1", "HDDLVG", 8 * MiB), ac("ssd", "n1", "SSD", GiB)],
        acr("pod", [req("a", "HDDLVG", 4 * MiB), req("b", "HDDLVG", 4 * MiB), req("c", "HDDLVG", 4 * MiB),
                    req("d", "SSD", GiB)], ["n1"]),
        "REJECTED",
        reason_has=("n1: c (HDDLVG 4 MiB): no HDDLVG/HDD room for 4 MiB (largest room on the node 0 B)",),
    ),
    Case(
        "rejection-names-the-earlier-request-even-when-a-later-one-could-never-fit",
        [ac("vg", "n1", "HDDLVG", 8 * MiB), ac("ssd", "n1", "SSD", GiB)],
        acr("pod", [req("a", "HDDLVG", 4 * MiB), req("b", "HDDLVG", 4 * MiB), req("c", "HDDLVG", 4 * MiB),
                    req("d", "SSD", 2 * GiB)], ["n1"]),
        "REJECTED",
        reason_has=("n1: c (HDDLVG 4 MiB): no HDDLVG/HDD room for 4 MiB (largest room on the node 0 B)",),
    ),
    Case(
        "rejection-at-a-late-request-that-cannot-fit-even-alone",
        [ac("vg", "n1", "HDDLVG", 8 * MiB), ac("h", "n1", "HDD", GiB)],
        acr("pod", [req("a", "HDDLVG", 4 * MiB), req("b", "HDDLVG", 4 * MiB), req("c", "HDD", 2 * GiB)], ["n1"]),
        "REJECTED",
        reason_has=("n1: c (HDD 2 GiB): no free HDD drive of 2 GiB or more (largest free on the node 1 GiB)",),
    ),
    Case(
        "no-nodes-requested-is-rejected",
        [ac("a1", "a", "HDD", 10 * GiB)],
        acr("pod", [req("v", "HDD", GiB)], []),
        "REJECTED",
        reason_has=("no nodes requested",),
    ),
    Case(
        "invalid-acr-is-rejected-with-field-paths",
        [ac("a1", "a", "HDD", 10 * GiB)],
        acr("pod", [req("v", "HDD", GiB), req("w", "TAPE", -5)], ["a"]),
        "REJECTED",
        reason_has=(
            "invalid reservation: ",
            "spec.ReservationRequests[1].CapacityRequest.StorageClass: must be one of",
            "spec.ReservationRequests[1].CapacityRequest.Size: must be a non-negative integer, got -5",
        ),
    ),
    Case(
        "invalid-acs-are-never-planned-on",
        [ac("bad-size", "a", "HDD", -1), ac("bad-class", "a", "TAPE", GiB), ac("", "a", "HDD", GiB)],
        acr("pod", [req("v", "HDD", 1)], ["a"]),
        "REJECTED",
        reason_has=("no HDD capacity on the node",),
    ),
    # -- reservations see each other -----------------------------------------------
    Case(
        "plain-drive-reserved-by-another-acr-is-unavailable",
        [ac("a1", "a", "HDD", 10 * GiB), ac("a2", "a", "HDD", 20 * GiB)],
        acr("pod", [req("v", "HDD", GiB)], ["a"]),
        "RESERVED",
        ("a",),
        {"v": ("a2",)},
        others=[held("other", [("x", "HDD", GiB, ["a1"])], ["a"])],
    ),
    Case(
        "reservation-on-every-node-of-another-acr-counts-on-every-node",
        [ac("a1", "a", "HDD", 10 * GiB), ac("b1", "b", "HDD", 10 * GiB)],
        acr("pod", [req("v", "HDD", GiB)], ["a", "b"]),
        "REJECTED",
        others=[held("other", [("x", "HDD", GiB, ["a1", "b1"])], ["a", "b"])],
        reason_has=("a, b: v (HDD 1 GiB): no free HDD drive of 1 GiB or more (every HDD drive reserved)",),
    ),
    Case(
        "lvg-bytes-reserved-by-another-acr-are-subtracted",
        [ac("vg", "a", "HDDLVG", 12 * MiB), ac("h", "a", "HDD", GiB)],
        acr("pod", [req("v", "HDDLVG", 5 * MiB)], ["a"]),
        "RESERVED",
        ("a",),
        {"v": ("h",)},
        others=[held("other", [("x", "HDDLVG", 5 * MiB, ["vg"])], ["a"])],
    ),
    Case(
        "drive-another-acr-made-a-group-is-shared-before-converting-a-smaller-fresh-drive",
        [ac("small", "a", "HDD", 50 * GiB), ac("big", "a", "HDD", 100 * GiB)],
        acr("pod", [req("v", "HDDLVG", 10 * GiB)], ["a"]),
        "RESERVED",
        ("a",),
        {"v": ("big",)},
        others=[held("other", [("x", "HDDLVG", 10 * GiB, ["big"])], ["a"])],
    ),
    Case(
        "drive-another-acr-made-a-group-is-not-free-for-a-plain-volume",
        [ac("h", "a", "HDD", 100 * GiB)],
        acr("pod", [req("v", "HDD", GiB)], ["a"]),
        "REJECTED",
        others=[held("other", [("x", "HDDLVG", GiB, ["h"])], ["a"])],
    ),
    Case(
        "group-held-whole-by-a-plain-reservation-is-unavailable-to-lvg",
        [ac("vg", "a", "HDDLVG", GiB)],
        acr("pod", [req("v", "HDDLVG", 4 * MiB)], ["a"]),
        "REJECTED",
        others=[held("other", [("x", "HDD", GiB, ["vg"])], ["a"])],
    ),
    Case(
        "reservation-of-unknown-size-holds-the-whole-ac",
        [ac("vg", "a", "HDDLVG", GiB)],
        acr("pod", [req("v", "HDDLVG", 4 * MiB)], ["a"]),
        "REJECTED",
        others=[held("other", [("x", "HDDLVG", -1, ["vg"])], ["a"])],
    ),
    Case(
        "requested-and-rejected-acrs-hold-nothing",
        [ac("a1", "a", "HDD", GiB)],
        acr("pod", [req("v", "HDD", GiB)], ["a"]),
        "RESERVED",
        ("a",),
        {"v": ("a1",)},
        others=[
            acr("asking", [req("x", "HDD", GiB, reservations=["a1"])], ["a"]),
            acr("refused", [req("x", "HDD", GiB, reservations=["a1"])], ["a"], status="REJECTED"),
        ],
    ),
    Case(
        "replanning-ignores-the-acrs-own-earlier-reservation",
        [ac("a1", "a", "HDD", GiB)],
        acr("pod", [req("v", "HDD", GiB)], ["a"]),
        "RESERVED",
        ("a",),
        {"v": ("a1",)},
        others=[held("pod", [("v", "HDD", GiB, ["a1"])], ["a"])],
    ),
    Case(
        "reservations-naming-unknown-acs-are-ignored",
        [ac("a1", "a", "HDD", GiB)],
        acr("pod", [req("v", "HDD", GiB)], ["a"]),
        "RESERVED",
        ("a",),
        {"v": ("a1",)},
        others=[held("other", [("x", "HDD", GiB, ["gone"])], ["a"])],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_plan(case: Case) -> None:
    # Placement rules alone: sequential LVG mode (which would make these WAIT beside an
    # LVG holder) has its own table in test_capacity_batch.
    decision = plan(case.target, case.acs, case.others, NOW, PlanOptions(sequential_lvg=False))
    assert decision.acr_name == "pod"
    assert decision.status == case.status, decision.reason
    assert decision.reserved_nodes == case.nodes
    assert dict(decision.reservations) == case.reservations
    assert decision.retry_after is None
    for text in case.reason_has:
        assert text in decision.reason
    if case.status == "RESERVED":
        assert decision.reason == ""


def test_reservations_keep_the_acrs_request_order() -> None:
    target = acr("pod", [req("z", "HDD", 2 * GiB), req("a", "HDD", GiB)], ["n"])
    d = plan(target, [ac("h1", "n", "HDD", GiB), ac("h2", "n", "HDD", 2 * GiB)], [], NOW)
    assert list(d.reservations) == ["z", "a"]


def test_request_order_in_the_acr_does_not_change_the_plan() -> None:
    acs = [ac("vg", "n1", "HDDLVG", 40 * GiB), ac("hdd-10", "n1", "HDD", 10 * GiB), ac("hdd-100", "n1", "HDD", 100 * GiB)]
    forward = plan(acr("pod", SEED_REQUESTS, ["n1"]), acs, [], NOW)
    backward = plan(acr("pod", SEED_REQUESTS[::-1], ["n1"]), acs, [], NOW)
    assert forward == backward


def test_decision_is_immutable() -> None:
    d = ReservationDecision("pod", "RESERVED", ("n",), {"v": ("a",)})
    with pytest.raises(TypeError):
        d.reservations["v"] = ("b",)  # type: ignore[index]


def test_options_default_to_sequential_as_upstream() -> None:
    assert PlanOptions().sequential_lvg is True


def _lvg(name: str, status: str, health: str = "GOOD") -> dict[str, Any]:
    """A LogicalVolumeGroup as csi-baremetal's KubeClient.ConstructLVGCR writes it."""
    return {"apiVersion": "csi-baremetal.dell.com/v1", "kind": "LogicalVolumeGroup", "metadata": {"name": name},
            "spec": {"Name": name, "Node": "n1", "Locations": ["drive-1"], "Size": GiB, "Status": status,
                     "Health": health}}


LVG_STATE_CASES = [
    ("created-good-lvg-is-used", _lvg("vg-1", "CREATED"), "RESERVED"),
    ("creating-lvg-is-used", _lvg("vg-1", "CREATING"), "RESERVED"),
    ("failed-lvg-is-not-used", _lvg("vg-1", "FAILED"), "REJECTED"),
    ("lvg-being-removed-is-not-used", _lvg("vg-1", "REMOVING"), "REJECTED"),
    ("bad-health-lvg-is-not-used", _lvg("vg-1", "CREATED", "BAD"), "REJECTED"),
    ("another-lvg-failing-changes-nothing", _lvg("vg-2", "FAILED"), "RESERVED"),
]


@pytest.mark.parametrize(("lvg", "status"), [c[1:] for c in LVG_STATE_CASES], ids=[c[0] for c in LVG_STATE_CASES])
def test_the_state_of_the_logical_volume_group_decides_whether_its_ac_is_used(lvg: dict[str, Any], status: str) -> None:
    # The LVG AC's Location is the LVG's name (RecreateACToLVGSC).
    acs = [ac("lvg-ac", "n1", "HDDLVG", GiB, location="vg-1")]
    decision = plan(acr("pod", [req("v", "HDDLVG", 8 * MiB)], ["n1"]), acs, [], NOW, lvgs=[lvg])
    assert decision.status == status, decision.reason


@pytest.mark.parametrize(("value", "status"), [("NoSchedule", "REJECTED"), ("test", "RESERVED")],
                         ids=["no-schedule-taint-hides-the-drive", "other-taint-values-do-not"])
def test_a_drive_tainted_no_schedule_is_never_planned(value: str, status: str) -> None:
    obj = ac("hdd", "n1", "HDD", GiB)
    obj["metadata"]["labels"]["drive.csi-baremetal.dell.com/taint"] = value
    assert plan(acr("pod", [req("v", "HDD", MiB)], ["n1"]), [obj], [], NOW).status == status
