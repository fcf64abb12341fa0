"""``CapacityPlanner`` kept between passes decides exactly what a fresh ``plan_all`` decides.

The controller keeps one planner and re-syncs it with every ACR snapshot (written
decisions, released nodes, deleted ACRs); a drift between its ledger and the cluster
would promise bytes twice, so every step is checked against a planner built from scratch
and against the independent soundness checker.
"""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.policy.capacity import CapacityPlanner, apply_decision, narrow_to_node, plan_all
from kustodian.policy.capacity.holds import Holds
from kustodian.policy.capacity.synthetic import synthetic_cluster

from .capacity_builders import NOW, assert_sound


def _write(acr: dict[str, Any], decision: Any, rv: int) -> dict[str, Any]:
    new = apply_decision(acr, decision, NOW)
    new["metadata"]["resourceVersion"] = str(rv)
    return new


@pytest.mark.parametrize("candidates", [2, 8], ids=["few-candidates", "many-candidates"])
def test_incremental_planning_matches_a_fresh_plan_at_every_step(candidates: int) -> None:
    acs, acrs = synthetic_cluster(12, 4, 60, 2, seed=5, nodes_per_acr=candidates)
    node_of = {a["metadata"]["name"]: a["spec"]["NodeId"] for a in acs}.__getitem__
    planner = CapacityPlanner(acs)
    written: list[dict[str, Any]] = []
    for i, acr in enumerate(sorted(acrs, key=lambda a: (a["metadata"]["creationTimestamp"], a["metadata"]["name"]))):
        snapshot = [*written, acr]
        (fresh,) = plan_all(snapshot, acs, NOW)
        (kept,) = planner.plan_requested(snapshot, NOW)
        assert kept == fresh, acr["metadata"]["name"]
        new = _write(acr, kept, 2 * i)
        if kept.status == "RESERVED" and i % 2 == 0:  # every other pod binds to its first node
            new = narrow_to_node(new, kept.reserved_nodes[0], node_of) or new
            new["metadata"]["resourceVersion"] = str(2 * i + 1)
        if i % 7 == 6 and written:  # now and then an ACR goes away (its volumes were created)
            written.pop(0)
        written.append(new)
        assert_sound(acs, written)


# -- AC and LVG changes applied in place (``CapacityPlanner.update``) -------------------------

def _held_acs(written: list[dict[str, Any]], lvg: bool) -> list[str]:
    return [ac_name for acr in written if acr["spec"]["Status"] == "RESERVED"
            for item in acr["spec"]["ReservationRequests"]
            if item["CapacityRequest"]["StorageClass"].endswith("LVG") == lvg
            for ac_name in item.get("Reservations", [])]


def _resize(state: dict[str, Any]) -> None:
    ac = state["acs"][_held_acs(state["written"], lvg=False)[0]]
    ac["spec"]["Size"] //= 3  # a held drive shrinks: its reservation no longer fits there


def _delete(state: dict[str, Any]) -> None:
    ac_name = _held_acs(state["written"], lvg=False)[1]
    state["deleted"][ac_name] = state["acs"].pop(ac_name)


def _re_add(state: dict[str, Any]) -> None:
    ac_name, ac = state["deleted"].popitem()  # named by a reservation while it was gone
    state["acs"][ac_name] = ac


def _taint(state: dict[str, Any]) -> None:
    ac = state["acs"][_held_acs(state["written"], lvg=False)[2]]
    ac["metadata"]["labels"]["drive.csi-baremetal.dell.com/taint"] = "NoSchedule"


def _group_of_held_lvg(state: dict[str, Any]) -> str:
    held = [n for n in _held_acs(state["written"], lvg=True) if state["acs"][n]["spec"]["storageClass"].endswith("LVG")]
    return str(state["acs"][held[0]]["spec"]["Location"])


def _lvg_fails(state: dict[str, Any]) -> None:
    state["lvgs"]["failed"] = {"metadata": {"name": _group_of_held_lvg(state)}, "spec": {"Status": "FAILED"}}


def _lvg_recovers(state: dict[str, Any]) -> None:
    state["lvgs"]["failed"]["spec"]["Status"] = "CREATED"


def _move(state: dict[str, Any]) -> None:
    held = _held_acs(state["written"], lvg=False)[3]
    other = next(a for a in state["acs"].values() if a["spec"]["NodeId"] != state["acs"][held]["spec"]["NodeId"])
    state["acs"][held]["spec"]["NodeId"] = other["spec"]["NodeId"]


def _new(state: dict[str, Any]) -> None:
    node = next(iter(state["acs"].values()))["spec"]["NodeId"]
    state["acs"]["brand-new"] = {"metadata": {"name": "brand-new", "labels": {}},
                                 "spec": {"Location": "x", "NodeId": node, "storageClass": "HDD", "Size": 16 << 40}}


CHANGES = [
    ("a-held-drive-shrinks", _resize),
    ("a-held-drive-is-deleted", _delete),
    ("the-deleted-drive-comes-back", _re_add),
    ("a-held-drive-is-tainted", _taint),
    ("a-held-volume-group-fails", _lvg_fails),
    ("the-volume-group-recovers", _lvg_recovers),
    ("a-held-drive-moves-node", _move),
    ("a-new-drive", _new),
]


@pytest.mark.parametrize("candidates", [2, 8], ids=["few-candidates", "many-candidates"])
def test_ac_and_lvg_changes_in_place_plan_like_a_fresh_build(candidates: int) -> None:
    """Each change, applied in place, then a batch of new ACRs: the kept planner (never
    rebuilt) decides exactly as one built from scratch from the changed objects."""
    import copy

    acs_list, acrs = synthetic_cluster(12, 6, 24, 2, seed=5, nodes_per_acr=candidates)
    _, incoming = synthetic_cluster(12, 6, 8 * len(CHANGES), 2, seed=6, nodes_per_acr=candidates)
    planner = CapacityPlanner(acs_list)
    written = [_write(acr, d, i) for i, (acr, d) in
               enumerate(zip(sorted(acrs, key=lambda a: (a["metadata"]["creationTimestamp"], a["metadata"]["name"])),
                             planner.plan_requested(acrs, NOW), strict=True))]
    planner.plan_requested(written, NOW)
    state: dict[str, Any] = {"acs": {a["metadata"]["name"]: a for a in acs_list}, "written": written,
                             "deleted": {}, "lvgs": {}}
    cap = planner._cap
    statuses: set[str] = set()
    for step, (label, change) in enumerate(CHANGES):
        before = copy.deepcopy(state["acs"])
        lvgs_before = copy.deepcopy(state["lvgs"])
        change(state)
        changed = {n: state["acs"].get(n) for n in before.keys() | state["acs"].keys()
                   if before.get(n) != state["acs"].get(n)}
        lvgs = list(state["lvgs"].values()) if state["lvgs"] != lvgs_before else None
        assert changed or lvgs is not None, label
        planner.update(changed, lvgs)
        batch = incoming[8 * step: 8 * step + 8]
        for acr in batch:
            acr["metadata"]["name"] = f"{label}-{acr['metadata']['name']}"
        snapshot = [*written, *batch]
        fresh = plan_all(snapshot, list(state["acs"].values()), NOW, lvgs=list(state["lvgs"].values()))
        assert planner.plan_requested(snapshot, NOW) == fresh, label
        statuses.update(d.status for d in fresh)
        assert planner._cap is cap, label  # in place: never rebuilt
        for acr in written:  # every reservation re-written: charged again against the ACs as they are now
            acr["metadata"]["resourceVersion"] += f"-{step}"
        planner.plan_requested(written, NOW)  # and the batch goes away again (never written)
    assert statuses >= {"RESERVED", "REJECTED"}  # the batches really competed for drives


# -- sequential LVG mode: the holders index is built only when a waiting ACR asks --------------

def test_a_wait_sees_every_hold_and_release_of_a_kept_planner() -> None:
    """The planner logs holds and releases and replays them, in order, only when an ACR
    inside its wait window asks who holds its nodes (or once the log outgrows the holds).
    After a thousand passes nobody asked about, a new ACR waits exactly as it does with a
    planner built afresh from the same snapshot, and the log stayed bounded."""
    acs, acrs = synthetic_cluster(40, 8, 1500, 2, seed=5, nodes_per_acr=6)
    node_of = {a["metadata"]["name"]: a["spec"]["NodeId"] for a in acs}.__getitem__
    planner = CapacityPlanner(acs)
    cap = planner._cap
    assert isinstance(cap, Holds)  # (both tables keep their holds in ``Holds``)
    written: list[dict[str, Any]] = []
    longest, replays = 0, 0
    for i, acr in enumerate(sorted(acrs, key=lambda a: (a["metadata"]["creationTimestamp"], a["metadata"]["name"]))):
        (kept,) = planner.plan_requested([*written, acr], NOW)  # every ACR is hours old: none asks
        new = _write(acr, kept, 2 * i)
        if kept.status == "RESERVED" and i % 2 == 0:
            new = narrow_to_node(new, kept.reserved_nodes[0], node_of) or new
            new["metadata"]["resourceVersion"] = str(2 * i + 1)
        if i % 2 == 1 and written:  # volumes created: the oldest ACR goes away
            written.pop(0)
        written.append(new)
        logged = len(cap._holder_log)
        assert logged <= 2 * len(cap.held) + 1024
        replays += logged < longest
        longest = logged
    assert replays > 0  # the bound was reached and the log replayed without a query

    probe = {
        **written[-1],
        "metadata": {"name": "ns-00-probe", "creationTimestamp": "2024-01-01T11:59:00Z"},
        "spec": {
            "Namespace": "ns-00",
            "Status": "REQUESTED",
            "NodeRequests": {"Requested": sorted({node_of(a["metadata"]["name"]) for a in acs})},
            "ReservationRequests": [{"CapacityRequest": {"Name": "pvc-probe", "StorageClass": "HDDLVG",
                                                         "Size": 1 << 30}}],
        },
    }
    (kept,) = planner.plan_requested([*written, probe], NOW)
    (fresh,) = plan_all([*written, probe], acs, NOW)
    assert kept.status == "WAIT", kept
    assert kept == fresh
