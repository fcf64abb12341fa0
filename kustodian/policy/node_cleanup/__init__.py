"""Clean up local PVs and PVCs whose node is gone (sig-storage-local-static-provisioner's
node cleanup controller, made safer).

When a node holding local PVs is deleted, its Pods cannot be rescheduled: their PVCs
stay bound to PVs pinned to a node that no longer exists.  These pure functions
decide which PVs are stale (:func:`classify_pv`), when a claim may be deleted
(:func:`pvc_cleanup_decision`) and when the PV itself (:func:`pv_delete_decision`); the
controller asks both at once over one frozen :class:`NodeCleanupInput`
(:func:`decide_node_cleanup`).  Compared with upstream: nodes are matched by name *and*
hostname label (#434), anything unreadable in the affinity means "not stale", a
lookup failure means "exists", the timer never counts time nobody watched (a
restart or a gap in the Node watch restarts the delay, since the node may have come
back and gone again meanwhile), and an optional check notices a node recreated under
the same name (new UID: its local disks are empty).  The Warning Event is upstream's,
byte for byte.

Opt-in is per StorageClass; an empty opt-in list makes nothing stale.
"""

from kustodian.policy.node_cleanup.affinity import HOSTNAME_LABEL, AffinityNodes, affinity_node_names
from kustodian.policy.node_cleanup.classify import ANNOTATION_NODE_UID, PVStatus, classify_pv
from kustodian.policy.node_cleanup.decisions import (
    ANNOTATION_NODE_MISSING_CHECKED,
    ANNOTATION_NODE_MISSING_SINCE,
    CHECK_REFRESH,
    CONTINUITY,
    EVENT_REASON_NODE_DELETED,
    ClaimAction,
    ClaimCleanupDecision,
    DeleteClaim,
    DeleteVolume,
    KeepClaim,
    KeepVolume,
    VolumeAction,
    WarnNodeGone,
    missing_since,
    node_deleted_message,
    pv_delete_decision,
    pvc_cleanup_decision,
)
from kustodian.policy.node_cleanup.indexers import INDEXERS, POD_BY_CLAIM, PV_BY_CLAIM, PV_BY_NODE
from kustodian.policy.node_cleanup.inputs import (
    NodeCleanupDecision,
    NodeCleanupInput,
    NodeCleanupRules,
    confirms,
    decide_node_cleanup,
)
from kustodian.policy.node_cleanup.nodes import NodeDirectory, NodeSnapshot, node_exists, node_uid
from kustodian.policy.node_cleanup.plan import PlannedVolume, plan_node_cleanup
from kustodian.policy.node_cleanup.reasons import NodeCleanupReason
from kustodian.policy.node_cleanup.recovery import (
    ANNOTATION_RECOVER_PODS,
    EVENT_REASON_POD_RECOVERY,
    CleanedClaim,
    KeepPod,
    PodRecoveryDecision,
    PodRecoveryInput,
    RecoverPod,
    decide_pod_recovery,
    pod_claim_names,
    recovery_confirms,
    statefulset_owner,
)
from kustodian.policy.node_cleanup.timefmt import format_rfc3339, go_duration, parse_rfc3339

__all__ = [
    "ANNOTATION_NODE_MISSING_CHECKED",
    "ANNOTATION_NODE_MISSING_SINCE",
    "ANNOTATION_NODE_UID",
    "ANNOTATION_RECOVER_PODS",
    "CHECK_REFRESH",
    "CONTINUITY",
    "EVENT_REASON_NODE_DELETED",
    "EVENT_REASON_POD_RECOVERY",
    "HOSTNAME_LABEL",
    "INDEXERS",
    "POD_BY_CLAIM",
    "PV_BY_CLAIM",
    "PV_BY_NODE",
    "AffinityNodes",
    "ClaimAction",
    "ClaimCleanupDecision",
    "CleanedClaim",
    "DeleteClaim",
    "DeleteVolume",
    "KeepClaim",
    "KeepPod",
    "KeepVolume",
    "NodeCleanupDecision",
    "NodeCleanupInput",
    "NodeCleanupReason",
    "NodeCleanupRules",
    "NodeDirectory",
    "NodeSnapshot",
    "PVStatus",
    "PlannedVolume",
    "PodRecoveryDecision",
    "PodRecoveryInput",
    "RecoverPod",
    "VolumeAction",
    "WarnNodeGone",
    "affinity_node_names",
    "classify_pv",
    "confirms",
    "decide_node_cleanup",
    "decide_pod_recovery",
    "format_rfc3339",
    "go_duration",
    "missing_since",
    "node_deleted_message",
    "node_exists",
    "node_uid",
    "parse_rfc3339",
    "plan_node_cleanup",
    "pod_claim_names",
    "pv_delete_decision",
    "pvc_cleanup_decision",
    "recovery_confirms",
    "statefulset_owner",
]
