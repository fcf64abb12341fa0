"""The one decision over one frozen input: both steps, the PV classified once, and the confirmation."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from kustodian.policy.node_cleanup import (
    CONTINUITY,
    DeleteClaim,
    DeleteVolume,
    KeepVolume,
    NodeCleanupDecision,
    NodeCleanupInput,
    NodeCleanupReason,
    NodeCleanupRules,
    NodeSnapshot,
    confirms,
    decide_node_cleanup,
    pv_delete_decision,
    pvc_cleanup_decision,
)
from tests.policy.node_cleanup.test_node_cleanup_decisions import (
    DELAY,
    GONE,
    NOW,
    PRESENT,
    RECREATED,
    SC,
    pv,
    pvc,
    since,
)

RULES = NodeCleanupRules(frozenset({SC}), DELAY)
CASES: list[tuple[str, dict[str, Any], dict[str, Any] | None, NodeSnapshot, bool]] = [
    ("first-sighting", pv(), pvc(), GONE, False),
    ("delay-elapsed-bound", pv(annotations={**since(DELAY), "kustodian.io/node-missing-checked":
                                            since(timedelta(0))["kustodian.io/node-missing-since"]}),
     pvc(), GONE, False),
    ("released-claim-gone", pv(phase="Released"), None, GONE, False),
    ("available-no-claim", pv(phase="Available", claim_uid=None), None, GONE, False),
    ("node-present", pv(phase="Available"), pvc(), PRESENT, False),
    ("lookup-failed", pv(phase="Available"), pvc(), NodeSnapshot(lookup_failed=True), False),
    ("recreated", pv(phase="Released", annotations={"kustodian.io/node-uid": "node-uid-1"}), None, RECREATED,
     True),
]


@pytest.mark.parametrize(("the_pv", "the_pvc", "nodes", "detect"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_the_one_decision_is_both_steps(the_pv: dict[str, Any], the_pvc: dict[str, Any] | None,
                                        nodes: NodeSnapshot, detect: bool) -> None:
    rules = dataclasses.replace(RULES, detect_recreated=detect)
    got = decide_node_cleanup(NodeCleanupInput(the_pv, the_pvc, nodes, rules), NOW)
    assert got.claim == pvc_cleanup_decision(the_pv, the_pvc, nodes, opted_in_classes={SC}, delay=DELAY,
                                             now=NOW, first_missing_at=None, detect_recreated=detect,
                                             continuity=CONTINUITY)
    assert got.volume == pv_delete_decision(the_pv, nodes, {SC}, detect_recreated=detect)


def test_the_input_is_frozen() -> None:
    observed = NodeCleanupInput(pv(), pvc(), GONE, RULES)
    with pytest.raises(dataclasses.FrozenInstanceError):
        observed.claim = None  # type: ignore[misc]


def test_deletes_lists_the_destructive_parts() -> None:
    the_pv = pv(phase="Available", claim_uid=None)
    decision = decide_node_cleanup(NodeCleanupInput(the_pv, None, GONE, RULES), NOW)
    assert decision.deletes == (DeleteVolume("pv-1", "pv-uid", NodeCleanupReason.NODE_MISSING),)
    kept = decide_node_cleanup(NodeCleanupInput(the_pv, None, PRESENT, RULES), NOW)
    assert kept.deletes == ()


CLAIM = DeleteClaim("db", "data-0", "pvc-uid")
VOLUME = DeleteVolume("pv-1", "pv-uid", NodeCleanupReason.NODE_MISSING)
FRESH = NodeCleanupDecision(decide_node_cleanup(NodeCleanupInput(pv(), pvc(), GONE, RULES), NOW).claim, VOLUME)


@pytest.mark.parametrize(("fresh", "delete", "expected"), [
    (FRESH, VOLUME, True),
    (FRESH, dataclasses.replace(VOLUME, reason=NodeCleanupReason.NODE_RECREATED), True),
    (FRESH, dataclasses.replace(VOLUME, uid="replaced"), False),
    (dataclasses.replace(FRESH, volume=KeepVolume(NodeCleanupReason.NODE_EXISTS)), VOLUME, False),
    (FRESH, CLAIM, False),  # the fresh read still waits for the delay: the claim is not deleted
    (dataclasses.replace(FRESH, claim=dataclasses.replace(FRESH.claim, action=CLAIM)), CLAIM, True),
    (dataclasses.replace(FRESH, claim=dataclasses.replace(FRESH.claim, action=dataclasses.replace(
        CLAIM, uid="other"))), CLAIM, False),
], ids=["same-volume", "same-volume-other-reason", "volume-replaced", "node-back", "claim-still-waiting",
        "same-claim", "claim-replaced"])
def test_a_delete_is_made_only_when_the_fresh_decision_makes_it_too(
        fresh: NodeCleanupDecision, delete: DeleteClaim | DeleteVolume, expected: bool) -> None:
    assert confirms(fresh, delete) is expected


def test_the_input_says_since_when_its_process_watched_and_an_older_stamp_restarts() -> None:
    """Issue 34: the same PV, stamp and check; only ``watched_since`` differs."""
    stamped = pv(annotations={**since(DELAY), "kustodian.io/node-missing-checked":
                              since(timedelta(seconds=30))["kustodian.io/node-missing-since"]})
    seen_through = decide_node_cleanup(NodeCleanupInput(stamped, pvc(), GONE, RULES, NOW - 2 * DELAY), NOW)
    assert seen_through.claim.action == DeleteClaim("db", "data-0", "pvc-uid")
    restarted = decide_node_cleanup(NodeCleanupInput(stamped, pvc(), GONE, RULES, NOW - timedelta(seconds=5)), NOW)
    assert restarted.deletes == ()
    assert restarted.claim.requeue_at == NOW + DELAY
