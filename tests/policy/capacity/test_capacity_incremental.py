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
