"""``node-cleanup plan`` rows are the controller's decision read, not a second decision: for each
case the row says what ``decide_node_cleanup`` does over the same input, with the deadline the
controller would keep (the stamp it uses, or the one it writes now, plus the delay)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kustodian.policy.node_cleanup import (
    ANNOTATION_NODE_MISSING_CHECKED,
    DeleteClaim,
    NodeCleanupInput,
    NodeCleanupReason,
    NodeCleanupRules,
    WarnNodeGone,
    decide_node_cleanup,
    format_rfc3339,
)
from kustodian.policy.node_cleanup.plan import ClaimPlan, VolumePlan, plan_node_cleanup, plan_volume
from tests.policy.node_cleanup.test_node_cleanup_decisions import (
    DELAY,
    GONE,
    NOW,
    PRESENT,
    SC,
    pv,
    pvc,
    since,
)

RULES = NodeCleanupRules(frozenset({SC}), DELAY)


def watched(delta: timedelta) -> dict[str, str]:
    """A stamp ``delta`` old that a running controller checked just now."""
    return {**since(delta), ANNOTATION_NODE_MISSING_CHECKED: format_rfc3339(NOW)}


def named(the_pv: dict[str, Any], name: str) -> dict[str, Any]:
    return {**the_pv, "metadata": {**the_pv["metadata"], "name": name}}


def _in(the_pv: dict[str, Any], the_pvc: dict[str, Any] | None = None, nodes: Any = GONE) -> NodeCleanupInput:
    return NodeCleanupInput(the_pv, the_pvc, nodes, RULES)


def test_a_first_sighting_waits_a_whole_delay_from_now() -> None:
    row = plan_volume(_in(pv(), pvc()), NOW)
    assert (row.claim, row.eligible_at, row.timer_starts_now) == (ClaimPlan.WAIT, NOW + DELAY, True)
    assert (row.claim_namespace, row.claim_name, row.nodes) == ("db", "data-0", ("n1",))
    assert row.volume_action is VolumePlan.AFTER_CLAIM and row.reason is NodeCleanupReason.NODE_MISSING
    assert isinstance(decide_node_cleanup(_in(pv(), pvc()), NOW).claim.action, WarnNodeGone)


def test_a_watched_stamp_gives_its_own_deadline() -> None:
    the_pv = pv(annotations=watched(timedelta(seconds=20)))
    row = plan_volume(_in(the_pv, pvc()), NOW)
    assert (row.claim, row.eligible_at, row.timer_starts_now) == (
        ClaimPlan.WAIT, NOW - timedelta(seconds=20) + DELAY, False)


def test_a_stamp_nobody_checks_restarts_the_delay_as_the_controller_would() -> None:
    the_pv = pv(annotations=since(timedelta(minutes=30)))  # no check: no controller is counting
    row = plan_volume(_in(the_pv, pvc()), NOW)
    assert (row.claim, row.eligible_at, row.timer_starts_now) == (ClaimPlan.WAIT, NOW + DELAY, True)


def test_past_the_deadline_the_claim_is_deleted_now() -> None:
    the_pv = pv(annotations=watched(DELAY + timedelta(seconds=1)))
    assert isinstance(decide_node_cleanup(_in(the_pv, pvc()), NOW).claim.action, DeleteClaim)
    row = plan_volume(_in(the_pv, pvc()), NOW)
    assert row.claim is ClaimPlan.DELETE and row.eligible_at is not None and row.eligible_at < NOW
    assert row.reason is NodeCleanupReason.DELAY_ELAPSED


def test_a_retained_pv_loses_its_claim_but_stays() -> None:
    row = plan_volume(_in(pv(reclaim="Retain"), pvc()), NOW)
    assert row.claim is ClaimPlan.WAIT and row.volume_action is VolumePlan.KEEP
    assert "phase Bound" in row.detail


def test_an_unused_stale_pv_goes_now() -> None:
    row = plan_volume(_in(pv(phase="Available", claim_uid=None)), NOW)
    assert (row.claim, row.volume_action, row.eligible_at) == (ClaimPlan.KEEP, VolumePlan.DELETE, NOW)


@pytest.mark.parametrize(("the_pv", "nodes", "reason"), [
    (pv(), PRESENT, NodeCleanupReason.NODE_EXISTS),
    ({**pv(), "spec": {**pv()["spec"], "storageClassName": "other"}}, GONE, NodeCleanupReason.NOT_OPTED_IN),
])
def test_kept_volumes_say_why(the_pv: dict[str, Any], nodes: Any, reason: NodeCleanupReason) -> None:
    row = plan_volume(_in(the_pv, pvc(), nodes), NOW)
    assert (row.claim, row.volume_action, row.eligible_at, row.reason) == (
        ClaimPlan.KEEP, VolumePlan.KEEP, None, reason)
    assert not row.cleaned and row.detail


def test_the_plan_lists_local_volumes_only_cleaned_first_soonest_first() -> None:
    nfs = {"metadata": {"name": "pv-nfs", "uid": "u"}, "spec": {"storageClassName": SC, "nfs": {}}}
    kept, later = named(pv(), "pv-0"), named(pv(), "pv-2")
    sooner = named(pv(annotations=watched(timedelta(seconds=30))), "pv-3")
    rows = plan_node_cleanup([_in(nfs), _in(kept, None, PRESENT), _in(later, pvc(volume="pv-2")),
                              _in(sooner, pvc(volume="pv-3"))], NOW)
    assert [r.volume for r in rows] == ["pv-3", "pv-2", "pv-0"]
