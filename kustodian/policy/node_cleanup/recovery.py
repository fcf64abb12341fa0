"""Workloads recover after node loss: the StatefulSet pod left waiting for a PVC node cleanup removed.

Deleting a lost node's PVC is meant to let its StatefulSet start afresh elsewhere, but the
StatefulSet's pod is often left behind: created while the old PVC still existed (or bound to
the gone node), it keeps waiting for a claim that is gone, and the StatefulSet controller
creates pod and PVC anew only once that pod is deleted (kubernetes-sigs/
sig-storage-local-static-provisioner#427, kubernetes/kubernetes#113139).

:func:`decide_pod_recovery` says whether one pod is such a pod, over one frozen
:class:`PodRecoveryInput`: only pods a StatefulSet controls, only claims Kustodian itself
deleted (:class:`CleanedClaim`, recorded by the cleanup when it deletes one) and not since
recreated (a claim of the same name with another UID is the StatefulSet's fresh one), not
when the claim's StorageClass opts out (``kustodian.io/recover-statefulset-pods: "false"``),
and only a pod that cannot run: Pending and not scheduled, or bound to a Node that is gone.
A pod scheduled on a live Node is never deleted, whatever its phase.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from kustodian.policy.objects import RawObject, annotations_of, field, is_deleting, list_field, str_field

ANNOTATION_RECOVER_PODS = "kustodian.io/recover-statefulset-pods"
EVENT_REASON_POD_RECOVERY = "RecoveredFromNodeLoss"


@dataclass(frozen=True)
class CleanedClaim:
    """A PVC node cleanup deleted: which one (by UID), of which class, for which node, when."""

    namespace: str
    name: str
    uid: str
    storage_class: str
    node: str
    deleted_at: datetime


@dataclass(frozen=True)
class PodRecoveryInput:
    """One pod and what its decision reads.

    ``cleaned``: the cleaned claims among those the pod names; ``claims``: each of those
    claims as it is now (``None``: absent); ``storage_classes``: their classes (``None``:
    absent); ``node_exists``: whether the Node the pod is bound to exists (``None``: the pod
    is not bound to a Node).
    """

    pod: RawObject
    cleaned: tuple[CleanedClaim, ...]
    claims: Mapping[str, RawObject | None]
    storage_classes: Mapping[str, RawObject | None]
    node_exists: bool | None


@dataclass(frozen=True)
class KeepPod:
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class RecoverPod:
    """Delete the pod (UID precondition): the StatefulSet controller creates pod and PVC afresh."""

    namespace: str
    name: str
    uid: str
    claim: CleanedClaim
    why: str
    waited: timedelta

    @property
    def message(self) -> str:
        return (f"Deleted so that its StatefulSet recreates it with a new PVC: it is {self.why}, and its PVC "
                f"{self.claim.name} was deleted by node cleanup {_seconds(self.waited)} ago "
                f"(node {self.claim.node or '?'} is gone)")


PodRecoveryDecision = KeepPod | RecoverPod


def _seconds(delta: timedelta) -> str:
    return f"{max(0.0, delta.total_seconds()):.0f}s"


def statefulset_owner(pod: RawObject | None) -> str:
    """The name of the StatefulSet controlling ``pod`` (``controller: true``), or ``""``."""
    for ref in list_field(pod, "metadata", "ownerReferences"):
        if (isinstance(ref, Mapping) and ref.get("kind") == "StatefulSet" and ref.get("controller") is True
                and str(ref.get("apiVersion", "")).startswith("apps/")):
            return str(ref.get("name") or "")
    return ""


def pod_claim_names(pod: RawObject | None) -> list[str]:
    """The PVCs ``pod`` names through its volumes, in order."""
    out: list[str] = []
    for volume in list_field(pod, "spec", "volumes"):
        claim = field(volume, "persistentVolumeClaim", "claimName") if isinstance(volume, Mapping) else None
        if isinstance(claim, str) and claim and claim not in out:
            out.append(claim)
    return out


def recovery_opted_out(storage_class: RawObject | None) -> bool:
    return str(annotations_of(storage_class).get(ANNOTATION_RECOVER_PODS, "")).strip().lower() == "false"


def decide_pod_recovery(inp: PodRecoveryInput, now: datetime) -> PodRecoveryDecision:
    pod = inp.pod
    if is_deleting(pod):
        return KeepPod("deleting")
    if not statefulset_owner(pod):
        return KeepPod("not-statefulset")
    candidate: CleanedClaim | None = None
    kept = KeepPod("claim-not-cleaned")
    for cleaned in inp.cleaned:
        current = inp.claims.get(cleaned.name)
        if current is not None and str_field(current, "metadata", "uid") != cleaned.uid:
            kept = KeepPod("claim-recreated", f"PVC {cleaned.name} exists again (new UID)")
            continue
        if recovery_opted_out(inp.storage_classes.get(cleaned.storage_class)):
            kept = KeepPod("opted-out",
                           f"StorageClass {cleaned.storage_class}: {ANNOTATION_RECOVER_PODS}=false")
            continue
        candidate = cleaned
        break
    if candidate is None:
        return kept
    node = str_field(pod, "spec", "nodeName")
    if node:
        if inp.node_exists is not False:  # alive, or unknown: never touched
            return KeepPod("scheduled-on-live-node", node)
        why = f"bound to node {node}, which is gone"
    else:
        phase = str_field(pod, "status", "phase")
        if phase not in ("", "Pending"):
            return KeepPod("not-pending", phase)
        why = "Pending and cannot be scheduled"
    return RecoverPod(str_field(pod, "metadata", "namespace"), str_field(pod, "metadata", "name"),
                      str_field(pod, "metadata", "uid"), candidate, why, now - candidate.deleted_at)


def recovery_confirms(fresh: PodRecoveryDecision, planned: RecoverPod) -> bool:
    """The fresh decision deletes the same pod (UID) for the same cleaned claim (UID)."""
    return (isinstance(fresh, RecoverPod) and fresh.uid == planned.uid
            and fresh.claim.uid == planned.claim.uid)
