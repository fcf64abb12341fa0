from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kustodian.policy.node_cleanup import (
    ANNOTATION_NODE_MISSING_CHECKED,
    ANNOTATION_NODE_MISSING_SINCE,
    ANNOTATION_NODE_UID,
    CHECK_REFRESH,
    CONTINUITY,
    ClaimCleanupDecision,
    DeleteClaim,
    DeleteVolume,
    KeepClaim,
    KeepVolume,
    NodeCleanupReason,
    NodeSnapshot,
    WarnNodeGone,
    format_rfc3339,
    go_duration,
    missing_since,
    parse_rfc3339,
    pv_delete_decision,
    pvc_cleanup_decision,
)

SC = "local-nvme"
HOST = "kubernetes.io/hostname"
NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
DELAY = timedelta(minutes=1)
GONE = NodeSnapshot.from_nodes([])
PRESENT = NodeSnapshot.from_nodes([{"metadata": {"name": "n1", "uid": "node-uid-1", "labels": {HOST: "n1"}}}])
RECREATED = NodeSnapshot.from_nodes(
    [{"metadata": {"name": "n1", "uid": "node-uid-2", "labels": {HOST: "n1"}}}]
)


def pv(
    *,
    phase: str = "Bound",
    reclaim: str | None = "Delete",
    claim_uid: str | None = "pvc-uid",
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "local": {"path": "/mnt/disks/ssd0"},
        "storageClassName": SC,
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOST, "operator": "In", "values": ["n1"]}]}
                ]
            }
        },
    }
    if reclaim is not None:
        spec["persistentVolumeReclaimPolicy"] = reclaim
    if claim_uid is not None:
        spec["claimRef"] = {"namespace": "db", "name": "data-0", "uid": claim_uid}
    meta: dict[str, Any] = {"name": "pv-1", "uid": "pv-uid", "annotations": dict(annotations or {})}
    if deleting:
        meta["deletionTimestamp"] = "2024-05-01T11:00:00Z"
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def pvc(*, uid: str = "pvc-uid", volume: str = "pv-1", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "data-0", "namespace": "db", "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2024-05-01T11:59:00Z"
    return {"metadata": meta, "spec": {"volumeName": volume}}


def decide(
    the_pv: dict[str, Any],
    the_pvc: dict[str, Any] | None,
    nodes: NodeSnapshot = GONE,
    *,
    now: datetime = NOW,
    delay: timedelta = DELAY,
    detect_recreated: bool = False,
) -> ClaimCleanupDecision:
    return pvc_cleanup_decision(
        the_pv,
        the_pvc,
        nodes,
        opted_in_classes={SC},
        delay=delay,
        now=now,
        first_missing_at=missing_since(the_pv),
        detect_recreated=detect_recreated,
    )


def since(delta: timedelta) -> dict[str, str]:
    return {ANNOTATION_NODE_MISSING_SINCE: format_rfc3339(NOW - delta)}


def test_first_sighting_records_stamp_and_warns_with_exact_message() -> None:
    decision = decide(pv(), pvc())
    assert decision.pv_annotations == {ANNOTATION_NODE_MISSING_SINCE: "2024-05-01T12:00:00Z"}
    assert decision.action == WarnNodeGone(
        namespace="db",
        name="data-0",
        uid="pvc-uid",
        message="PVC is tied to a deleted Node. PVC will be cleaned up in 1m0s if the Node doesn't come back",
        requeue_at=NOW + DELAY,
    )
    assert decision.requeue_at == NOW + DELAY


def test_delay_not_elapsed_requeues_at_exact_deadline() -> None:
    decision = decide(pv(annotations=since(timedelta(seconds=50))), pvc())
    assert decision.pv_annotations == {}
    assert isinstance(decision.action, WarnNodeGone)
    assert decision.action.requeue_at == NOW + timedelta(seconds=10)
    # issue 34: upstream's text, byte for byte: the configured delay, not the time left
    assert decision.action.message == ("PVC is tied to a deleted Node. PVC will be cleaned up in 1m0s "
                                       "if the Node doesn't come back")


def test_delay_elapsed_deletes_pvc_with_uid_precondition() -> None:
    decision = decide(pv(annotations=since(DELAY)), pvc())
    assert decision == ClaimCleanupDecision(DeleteClaim("db", "data-0", "pvc-uid"), {})
    assert decision.requeue_at is None


def test_zero_delay_deletes_on_first_sighting_and_still_records_stamp() -> None:
    decision = decide(pv(), pvc(), delay=timedelta(0))
    assert isinstance(decision.action, DeleteClaim)
    assert ANNOTATION_NODE_MISSING_SINCE in decision.pv_annotations
    # issue 34: upstream warns whenever it starts a timer, a zero one too, before deleting
    assert decision.action.warning == ("PVC is tied to a deleted Node. PVC will be cleaned up in 0s "
                                       "if the Node doesn't come back")
    again = decide(pv(annotations={k: v for k, v in decision.pv_annotations.items() if v is not None}), pvc(), delay=timedelta(0))
    assert again.action == DeleteClaim("db", "data-0", "pvc-uid")  # warned once, when the timer started


def test_restart_keeps_the_original_deadline() -> None:
    # The plain timer (no watch period given): a stamp written 45s ago is neither restarted
    # nor skipped.  The controller also says since when it watched (issue 34): a stamp from
    # before that restarts (test_a_stamp_from_before_the_watch_began_restarts_...).
    the_pv = pv(annotations=since(timedelta(seconds=45)))
    restarted = decide(the_pv, pvc())
    assert isinstance(restarted.action, WarnNodeGone)
    assert restarted.action.requeue_at == NOW + timedelta(seconds=15)
    assert restarted.pv_annotations == {}
    # The same holds when the caller forgets to pass the parsed stamp.
    forgot = pvc_cleanup_decision(
        the_pv, pvc(), GONE, opted_in_classes={SC}, delay=DELAY, now=NOW, first_missing_at=None
    )
    assert forgot == restarted
    later = decide(the_pv, pvc(), now=NOW + timedelta(seconds=15))
    assert isinstance(later.action, DeleteClaim)


def test_garbage_stamp_restarts_the_timer_rather_than_deleting() -> None:
    decision = decide(pv(annotations={ANNOTATION_NODE_MISSING_SINCE: "yesterday"}), pvc())
    assert isinstance(decision.action, WarnNodeGone)
    assert decision.pv_annotations == {ANNOTATION_NODE_MISSING_SINCE: format_rfc3339(NOW)}


@pytest.mark.parametrize(
    ("nodes", "annotations", "patch"),
    [
        (PRESENT, since(timedelta(seconds=30)), {ANNOTATION_NODE_MISSING_SINCE: None}),
        (PRESENT, {}, {}),
        (NodeSnapshot(lookup_failed=True), since(timedelta(seconds=30)), {}),
    ],
    ids=["node-back-inside-delay-clears-stamp", "node-present-no-stamp-no-patch", "lookup-error-keeps-stamp"],
)
def test_node_present_or_unknown_skips(
    nodes: NodeSnapshot, annotations: dict[str, str], patch: dict[str, str | None]
) -> None:
    decision = decide(pv(annotations=annotations), pvc(), nodes)
    assert isinstance(decision.action, KeepClaim)
    assert decision.pv_annotations == patch


CLAIM_CASES: list[tuple[str, dict[str, Any], dict[str, Any] | None, NodeCleanupReason]] = [
    ("no-claim-ref", pv(claim_uid=None), None, NodeCleanupReason.NO_CLAIM),
    ("claim-not-found", pv(), None, NodeCleanupReason.CLAIM_NOT_FOUND),
    ("claim-recreated-with-new-uid", pv(), pvc(uid="other-uid"), NodeCleanupReason.CLAIM_NOT_BOUND),
    ("claim-bound-to-another-pv", pv(), pvc(volume="pv-2"), NodeCleanupReason.CLAIM_NOT_BOUND),
    ("claim-already-deleting", pv(), pvc(deleting=True), NodeCleanupReason.CLAIM_DELETING),
    ("claim-ref-without-uid", pv(claim_uid=""), pvc(), NodeCleanupReason.MISSING_UID),
]


@pytest.mark.parametrize(
    ("the_pv", "the_pvc", "reason"), [c[1:] for c in CLAIM_CASES], ids=[c[0] for c in CLAIM_CASES]
)
def test_claim_rechecked_before_delete(
    the_pv: dict[str, Any], the_pvc: dict[str, Any] | None, reason: NodeCleanupReason
) -> None:
    the_pv["metadata"]["annotations"].update(since(timedelta(hours=1)))
    decision = decide(the_pv, the_pvc)
    assert isinstance(decision.action, KeepClaim)
    assert decision.action.reason == reason
    assert decision.pv_annotations == {}


def test_timer_starts_even_without_a_claim() -> None:
    decision = decide(pv(claim_uid=None), None)
    assert isinstance(decision.action, KeepClaim)
    assert ANNOTATION_NODE_MISSING_SINCE in decision.pv_annotations


def test_recreated_node_goes_through_the_delay() -> None:
    the_pv = pv(annotations={ANNOTATION_NODE_UID: "node-uid-1"})
    first = decide(the_pv, pvc(), RECREATED, detect_recreated=True)
    assert isinstance(first.action, WarnNodeGone)
    assert first.pv_annotations == {ANNOTATION_NODE_MISSING_SINCE: format_rfc3339(NOW)}
    the_pv["metadata"]["annotations"].update(first.pv_annotations)
    later = decide(the_pv, pvc(), RECREATED, now=NOW + DELAY, detect_recreated=True)
    assert later.action == DeleteClaim("db", "data-0", "pvc-uid")


def test_node_uid_recorded_while_node_exists() -> None:
    decision = decide(pv(), pvc(), PRESENT, detect_recreated=True)
    assert decision.pv_annotations == {ANNOTATION_NODE_UID: "node-uid-1"}
    again = decide(pv(annotations={ANNOTATION_NODE_UID: "node-uid-1"}), pvc(), PRESENT, detect_recreated=True)
    assert again.pv_annotations == {}


DELETER_CASES: list[tuple[str, dict[str, Any], NodeSnapshot, DeleteVolume | NodeCleanupReason]] = [
    (
        "available-stale",
        pv(phase="Available", claim_uid=None),
        GONE,
        DeleteVolume("pv-1", "pv-uid", NodeCleanupReason.NODE_MISSING),
    ),
    ("released-delete-policy", pv(phase="Released"), GONE, DeleteVolume("pv-1", "pv-uid", NodeCleanupReason.NODE_MISSING)),
    ("released-retain-policy", pv(phase="Released", reclaim="Retain"), GONE, NodeCleanupReason.RECLAIM_NOT_DELETE),
    ("released-no-policy", pv(phase="Released", reclaim=None), GONE, NodeCleanupReason.RECLAIM_NOT_DELETE),
    ("bound", pv(phase="Bound"), GONE, NodeCleanupReason.PHASE_NOT_DELETABLE),
    ("pending", pv(phase="Pending"), GONE, NodeCleanupReason.PHASE_NOT_DELETABLE),
    ("failed", pv(phase="Failed"), GONE, NodeCleanupReason.PHASE_NOT_DELETABLE),
    ("no-phase", pv(phase=""), GONE, NodeCleanupReason.PHASE_NOT_DELETABLE),
    ("available-node-present", pv(phase="Available"), PRESENT, NodeCleanupReason.NODE_EXISTS),
    ("available-lookup-failed", pv(phase="Available"), NodeSnapshot(lookup_failed=True), NodeCleanupReason.NODE_LOOKUP_FAILED),
    ("already-deleting", pv(phase="Released", deleting=True), GONE, NodeCleanupReason.PV_DELETING),
]


@pytest.mark.parametrize(
    ("the_pv", "nodes", "expected"), [c[1:] for c in DELETER_CASES], ids=[c[0] for c in DELETER_CASES]
)
def test_pv_delete_decision(the_pv: dict[str, Any], nodes: NodeSnapshot, expected: DeleteVolume | NodeCleanupReason) -> None:
    got = pv_delete_decision(the_pv, nodes, {SC})
    if isinstance(expected, DeleteVolume):
        assert got == expected
    else:
        assert isinstance(got, KeepVolume)
        assert got.reason == expected


def test_pv_deleter_respects_empty_opt_in() -> None:
    got = pv_delete_decision(pv(phase="Available"), GONE, [])
    assert isinstance(got, KeepVolume)
    assert got.reason == NodeCleanupReason.NOT_OPTED_IN


def test_pv_deleter_recreated_node() -> None:
    the_pv = pv(phase="Available", annotations={ANNOTATION_NODE_UID: "node-uid-1"})
    assert pv_delete_decision(the_pv, RECREATED, {SC}, detect_recreated=True) == DeleteVolume(
        "pv-1", "pv-uid", NodeCleanupReason.NODE_RECREATED
    )


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(seconds=10), "10s"),
        (timedelta(minutes=1), "1m0s"),
        (timedelta(seconds=90), "1m30s"),
        (timedelta(hours=1), "1h0m0s"),
        (timedelta(days=1, seconds=3), "24h0m3s"),
        (timedelta(seconds=1, milliseconds=500), "1.5s"),
        (timedelta(milliseconds=250), "250ms"),
        (timedelta(microseconds=1500), "1.5ms"),
        (timedelta(microseconds=7), "7µs"),
        (timedelta(seconds=-61), "-1m1s"),
    ],
    ids=str,
)
def test_go_duration(delta: timedelta, text: str) -> None:
    assert go_duration(delta) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T12:00:00Z", NOW),
        ("2024-05-01T14:00:00+02:00", NOW),
        ("2024-05-01T12:00:00", None),
        ("", None),
        (None, None),
        ("not a time", None),
    ],
    ids=["utc-z", "offset", "naive", "empty", "none", "garbage"],
)
def test_parse_rfc3339(text: object, expected: datetime | None) -> None:
    assert parse_rfc3339(text) == expected


def test_the_missing_since_stamp_is_rounded_up_so_the_delay_is_never_shortened() -> None:
    from datetime import UTC, datetime, timedelta

    from kustodian.policy.node_cleanup import NodeSnapshot, pvc_cleanup_decision

    pv = {"metadata": {"name": "pv-1", "uid": "u1"},
          "spec": {"storageClassName": "local", "local": {"path": "/mnt"},
                   "claimRef": {"namespace": "ns", "name": "c", "uid": "c1"},
                   "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                       {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gone"]}]}]}}}}
    now = datetime(2026, 11, 22, 12, 0, 0, 250_000, tzinfo=UTC)
    decision = pvc_cleanup_decision(pv, None, NodeSnapshot(), opted_in_classes={"local"},
                                    delay=timedelta(seconds=60), now=now, first_missing_at=None)
    assert decision.pv_annotations["kustodian.io/node-missing-since"] == "2026-11-22T12:00:01Z"


# -- continuity (issue 19): a stamp proves the node stayed gone only while somebody watched --------

def at(when: datetime) -> str:
    return format_rfc3339(when)


CONTINUITY_CASES: list[tuple[str, dict[str, str], str]] = [
    # name, annotations on the PV, expected: "kept" (original deadline) or "restarted" (timer from now)
    ("checked-recently-keeps-the-deadline",
     {ANNOTATION_NODE_MISSING_SINCE: at(NOW - timedelta(seconds=45)),
      ANNOTATION_NODE_MISSING_CHECKED: at(NOW - timedelta(seconds=45))}, "kept"),
    ("old-stamp-unwatched-since-restarts",  # node back and lost again while no controller ran
     {ANNOTATION_NODE_MISSING_SINCE: at(NOW - timedelta(minutes=10)),
      ANNOTATION_NODE_MISSING_CHECKED: at(NOW - timedelta(minutes=10))}, "restarted"),
    ("stamp-without-any-check-restarts",  # written by an older version, or by hand: in doubt
     {ANNOTATION_NODE_MISSING_SINCE: at(NOW - timedelta(hours=1))}, "restarted"),
    ("unparsable-check-restarts",
     {ANNOTATION_NODE_MISSING_SINCE: at(NOW - timedelta(hours=1)), ANNOTATION_NODE_MISSING_CHECKED: "yesterday"},
     "restarted"),
    ("watched-all-along-deletes-at-the-old-deadline",
     {ANNOTATION_NODE_MISSING_SINCE: at(NOW - timedelta(minutes=5)),
      ANNOTATION_NODE_MISSING_CHECKED: at(NOW - timedelta(seconds=20))}, "kept"),
]


@pytest.mark.parametrize(("annotations", "expected"), [c[1:] for c in CONTINUITY_CASES],
                         ids=[c[0] for c in CONTINUITY_CASES])
def test_a_stale_stamp_never_shortens_the_grace(annotations: dict[str, str], expected: str) -> None:
    decision = pvc_cleanup_decision(pv(annotations=annotations), pvc(), GONE, opted_in_classes=[SC], delay=DELAY,
                                    now=NOW, first_missing_at=None, continuity=CONTINUITY)
    since = parse_rfc3339(annotations[ANNOTATION_NODE_MISSING_SINCE])
    assert since is not None
    if expected == "restarted":
        assert decision.pv_annotations[ANNOTATION_NODE_MISSING_SINCE] == at(NOW)
        assert decision.pv_annotations[ANNOTATION_NODE_MISSING_CHECKED] == at(NOW)
        assert isinstance(decision.action, WarnNodeGone) and "cleaned up in 1m0s" in decision.action.message
    elif since + DELAY > NOW:
        assert ANNOTATION_NODE_MISSING_SINCE not in decision.pv_annotations
        assert isinstance(decision.action, WarnNodeGone)
        assert decision.action.requeue_at <= since + DELAY
    else:
        assert decision.action == DeleteClaim("db", "data-0", "pvc-uid")


def test_while_waiting_the_check_is_refreshed_and_the_pass_wakes_up_to_refresh_it() -> None:
    the_pv = pv(annotations={ANNOTATION_NODE_MISSING_SINCE: at(NOW), ANNOTATION_NODE_MISSING_CHECKED: at(NOW)})
    long_delay = timedelta(minutes=10)
    first = pvc_cleanup_decision(the_pv, pvc(), GONE, opted_in_classes=[SC], delay=long_delay, now=NOW,
                                 first_missing_at=None, continuity=CONTINUITY)
    assert first.pv_annotations == {}  # checked just now: nothing to write
    assert isinstance(first.action, WarnNodeGone) and first.action.requeue_at == NOW + CHECK_REFRESH
    later = NOW + CHECK_REFRESH
    second = pvc_cleanup_decision(the_pv, pvc(), GONE, opted_in_classes=[SC], delay=long_delay, now=later,
                                  first_missing_at=None, continuity=CONTINUITY)
    assert second.pv_annotations == {ANNOTATION_NODE_MISSING_CHECKED: at(later)}
    assert isinstance(second.action, WarnNodeGone) and second.action.requeue_at == later + CHECK_REFRESH


def test_a_node_back_clears_the_stamp_and_the_check() -> None:
    the_pv = pv(annotations={ANNOTATION_NODE_MISSING_SINCE: at(NOW), ANNOTATION_NODE_MISSING_CHECKED: at(NOW)})
    decision = pvc_cleanup_decision(the_pv, pvc(), PRESENT, opted_in_classes=[SC], delay=DELAY, now=NOW,
                                    first_missing_at=None, continuity=CONTINUITY)
    assert decision.pv_annotations == {ANNOTATION_NODE_MISSING_SINCE: None, ANNOTATION_NODE_MISSING_CHECKED: None}


# -- issue 34: a stamp older than this process's gap-free watch of the Nodes is no proof ---------

def decide_stamped(stamp: dict[str, str], watched_since: datetime | None = None) -> ClaimCleanupDecision:
    """The controller's rules (CONTINUITY on) for a PV carrying ``stamp``, its Node gone; without
    ``watched_since``, as a plan from listed objects decides."""
    return pvc_cleanup_decision(pv(annotations=stamp), pvc(), GONE, opted_in_classes=[SC], delay=DELAY,
                                now=NOW, first_missing_at=None, continuity=CONTINUITY,
                                watched_since=watched_since)


def test_a_stamp_from_before_the_watch_began_restarts_the_delay_however_recent() -> None:
    """Lost, back and lost again while the controller was down for 30 s: the stamp and its check
    are only 30 s old (well inside CONTINUITY), yet they predate this process's watch."""
    started = NOW - timedelta(seconds=1)
    stamp = {ANNOTATION_NODE_MISSING_SINCE: at(NOW - timedelta(minutes=5)),
             ANNOTATION_NODE_MISSING_CHECKED: at(NOW - timedelta(seconds=30))}
    decision = decide_stamped(stamp, started)
    assert decision.pv_annotations == {ANNOTATION_NODE_MISSING_SINCE: at(NOW), ANNOTATION_NODE_MISSING_CHECKED: at(NOW)}
    assert isinstance(decision.action, WarnNodeGone) and decision.action.requeue_at == NOW + DELAY
    # without the watch rule the same stamp would have deleted at once (the bug of issue 34)
    unwatched = decide_stamped(stamp)
    assert isinstance(unwatched.action, DeleteClaim)


def test_a_stamp_this_process_wrote_keeps_its_deadline() -> None:
    started = NOW - timedelta(minutes=2)
    stamp = {ANNOTATION_NODE_MISSING_SINCE: at(NOW - DELAY), ANNOTATION_NODE_MISSING_CHECKED: at(NOW)}
    decision = decide_stamped(stamp, started)
    assert decision == ClaimCleanupDecision(DeleteClaim("db", "data-0", "pvc-uid"), {})


def test_a_queue_slower_than_the_continuity_window_never_restarts_a_watched_stamp() -> None:
    """A zone of 30,000 PVs lost at once: the queue reaches a PV again only after its check went
    older than CONTINUITY.  The process watched the Nodes without a gap since before the stamp, so
    the stamp stands and the PVC is deleted; a check that restarted the timer here restarted it on
    every pass, and no PVC of the zone was ever deleted (the zone-loss bench, 71 of 30,000)."""
    started = NOW - timedelta(minutes=30)
    stamp = {ANNOTATION_NODE_MISSING_SINCE: at(NOW - timedelta(minutes=15)),
             ANNOTATION_NODE_MISSING_CHECKED: at(NOW - timedelta(minutes=15))}
    decision = decide_stamped(stamp, started)
    assert decision == ClaimCleanupDecision(DeleteClaim("db", "data-0", "pvc-uid"), {})  # no check written
    # nobody vouching (a plan from listed objects), the same stamp is in doubt, as before
    unwatched = decide_stamped(stamp)
    assert unwatched.pv_annotations[ANNOTATION_NODE_MISSING_SINCE] == at(NOW)
    assert isinstance(unwatched.action, WarnNodeGone)


def test_a_stamp_without_a_check_is_in_doubt_even_under_a_watch() -> None:
    # an older version's stamp, or one written by hand after the watch began: nothing vouches for it
    started = NOW - timedelta(minutes=30)
    stamp = {ANNOTATION_NODE_MISSING_SINCE: at(NOW - timedelta(minutes=15))}
    decision = decide_stamped(stamp, started)
    assert decision.pv_annotations == {ANNOTATION_NODE_MISSING_SINCE: at(NOW), ANNOTATION_NODE_MISSING_CHECKED: at(NOW)}
    assert isinstance(decision.action, WarnNodeGone) and decision.action.requeue_at == NOW + DELAY


def test_the_deleting_pass_writes_no_check() -> None:
    # the check was refreshed 40 s ago (a refresh is due) but the PVC goes now: no write for nothing
    stamp = {ANNOTATION_NODE_MISSING_SINCE: at(NOW - DELAY), ANNOTATION_NODE_MISSING_CHECKED: at(NOW - timedelta(seconds=40))}
    decision = decide_stamped(stamp, NOW - timedelta(minutes=5))
    assert decision == ClaimCleanupDecision(DeleteClaim("db", "data-0", "pvc-uid"), {})


@pytest.mark.parametrize("delay", [timedelta(seconds=4), timedelta(minutes=1), timedelta(seconds=90),
                                   timedelta(hours=2), timedelta(milliseconds=1500)], ids=str)
@pytest.mark.parametrize("left", [timedelta(0), timedelta(milliseconds=250), timedelta(seconds=1)], ids=str)
def test_the_warning_names_the_configured_delay_whatever_is_left(delay: timedelta, left: timedelta) -> None:
    """Upstream formats ``pvcDeletionDelay.String()``: "1m0s" for 1m, never "1m1s"; "4s", never "5s"."""
    now = NOW + left  # a fraction of a second past the stamp's second, or a whole one
    decision = decide(pv(), pvc(), now=now, delay=delay)
    assert isinstance(decision.action, WarnNodeGone)
    assert decision.action.message == (f"PVC is tied to a deleted Node. PVC will be cleaned up in "
                                       f"{go_duration(delay)} if the Node doesn't come back")
