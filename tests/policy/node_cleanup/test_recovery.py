"""StatefulSet pod recovery after node loss (issue 37): the pure decision over one pod's input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kustodian.policy.node_cleanup import (
    ANNOTATION_RECOVER_PODS,
    CleanedClaim,
    KeepPod,
    PodRecoveryInput,
    RecoverPod,
    decide_pod_recovery,
    pod_claim_names,
    recovery_confirms,
    statefulset_owner,
)
from kustodian.policy.node_cleanup.indexers import statefulset_pod_claim_keys

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
CLEANED = CleanedClaim("app", "data-web-0", "pvc-uid", "local", "node-a", NOW - timedelta(seconds=42))
STS_REF = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "s", "controller": True}


def pod(*, owners: list[dict[str, Any]] | None = None, node: str = "", phase: str = "Pending",
        deleting: bool = False, claims: tuple[str, ...] = ("data-web-0",)) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web-0", "namespace": "app", "uid": "pod-uid",
                            "ownerReferences": [STS_REF] if owners is None else owners}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T11:59:00Z"
    spec: dict[str, Any] = {"volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
                            + [{"name": "cfg", "configMap": {"name": "x"}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def given(p: dict[str, Any], *, cleaned: tuple[CleanedClaim, ...] = (CLEANED,), claim: dict[str, Any] | None = None,
          sc: dict[str, Any] | None = None, node_exists: bool | None = None) -> PodRecoveryInput:
    return PodRecoveryInput(p, cleaned, {c.name: claim for c in cleaned}, {"local": sc}, node_exists)


def test_a_pending_statefulset_pod_naming_the_cleaned_claim_is_recovered() -> None:
    decision = decide_pod_recovery(given(pod()), NOW)
    assert isinstance(decision, RecoverPod)
    assert (decision.namespace, decision.name, decision.uid) == ("app", "web-0", "pod-uid")
    assert decision.claim == CLEANED and decision.waited == timedelta(seconds=42)
    assert decision.message == ("Deleted so that its StatefulSet recreates it with a new PVC: it is Pending and "
                                "cannot be scheduled, and its PVC data-web-0 was deleted by node cleanup 42s ago "
                                "(node node-a is gone)")


def test_a_pod_bound_to_the_gone_node_is_recovered_whatever_its_phase() -> None:
    decision = decide_pod_recovery(given(pod(node="node-a", phase="Running"), node_exists=False), NOW)
    assert isinstance(decision, RecoverPod)
    assert decision.why == "bound to node node-a, which is gone"


@pytest.mark.parametrize(("inp", "reason"), [
    (given(pod(node="node-b", phase="Running"), node_exists=True), "scheduled-on-live-node"),
    (given(pod(node="node-b", phase="Pending"), node_exists=True), "scheduled-on-live-node"),
    (given(pod(node="node-b"), node_exists=None), "scheduled-on-live-node"),  # unknown: never touched
    (given(pod(owners=[])), "not-statefulset"),
    (given(pod(owners=[{**STS_REF, "kind": "ReplicaSet"}])), "not-statefulset"),
    (given(pod(owners=[{**STS_REF, "controller": False}])), "not-statefulset"),
    (given(pod(), cleaned=()), "claim-not-cleaned"),
    (given(pod(), claim={"metadata": {"name": "data-web-0", "uid": "fresh"}}), "claim-recreated"),
    (given(pod(), sc={"metadata": {"name": "local", "annotations": {ANNOTATION_RECOVER_PODS: "false"}}}),
     "opted-out"),
    (given(pod(deleting=True)), "deleting"),
    (given(pod(phase="Succeeded")), "not-pending"),
])
def test_everything_else_is_kept(inp: PodRecoveryInput, reason: str) -> None:
    decision = decide_pod_recovery(inp, NOW)
    assert isinstance(decision, KeepPod)
    assert decision.reason == reason


def test_the_old_claim_still_terminating_under_its_uid_does_not_hold_recovery_back() -> None:
    terminating = {"metadata": {"name": "data-web-0", "uid": "pvc-uid", "deletionTimestamp": "x"}}
    assert isinstance(decide_pod_recovery(given(pod(), claim=terminating), NOW), RecoverPod)


def test_a_storage_class_that_says_true_or_nothing_keeps_recovery_on() -> None:
    for sc in (None, {"metadata": {"annotations": {ANNOTATION_RECOVER_PODS: "true"}}}):
        assert isinstance(decide_pod_recovery(given(pod(), sc=sc), NOW), RecoverPod)


def test_confirmation_needs_the_same_pod_and_the_same_cleaned_claim() -> None:
    planned = decide_pod_recovery(given(pod()), NOW)
    assert isinstance(planned, RecoverPod)
    assert recovery_confirms(decide_pod_recovery(given(pod()), NOW), planned)
    replaced = pod()
    replaced["metadata"]["uid"] = "other"
    assert not recovery_confirms(decide_pod_recovery(given(replaced), NOW), planned)
    again = CleanedClaim("app", "data-web-0", "pvc-uid-2", "local", "node-a", NOW)
    assert not recovery_confirms(decide_pod_recovery(given(pod(), cleaned=(again,)), NOW), planned)
    assert not recovery_confirms(KeepPod("scheduled-on-live-node"), planned)


def test_only_statefulset_pods_are_indexed_by_the_claims_they_name() -> None:
    assert statefulset_owner(pod()) == "web"
    assert pod_claim_names(pod(claims=("a", "b", "a"))) == ["a", "b"]
    assert statefulset_pod_claim_keys(pod(claims=("a", "b"))) == ["app/a", "app/b"]
    assert statefulset_pod_claim_keys(pod(owners=[])) == []


def test_the_slim_cached_pod_decides_as_the_whole_pod() -> None:
    """The Pod cache keeps a slim copy: the StatefulSet controller reference must survive it."""
    from kustodian.kube.slim import slim_pod

    whole = pod()
    whole["metadata"]["ownerReferences"].append({"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u"})
    slim = slim_pod(whole)
    assert slim["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                                                    "controller": True}]
    for p in (whole, pod(owners=[]), pod(node="node-a", phase="Running")):
        for node_exists in (None, False, True):
            assert decide_pod_recovery(given(slim_pod(p), node_exists=node_exists), NOW) == \
                decide_pod_recovery(given(p, node_exists=node_exists), NOW)
    assert "ownerReferences" not in slim_pod(pod(owners=[{**STS_REF, "controller": False}]))["metadata"]
