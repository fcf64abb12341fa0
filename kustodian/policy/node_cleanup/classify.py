"""Is this local PV tied to a node that is gone?

The single question both node-cleanup steps (the claim step and the volume step, as
upstream's two loops) ask first.  Every "no" carries a reason so that a debug log explains why a
PV that looks orphaned was left alone; only a definite answer ("none of the nodes
this PV is pinned to exists", or "its node came back as a different machine") makes
a PV stale.

Recreated nodes: a Node deleted and re-registered under the same name is a new
machine whose local disks are empty, yet upstream sees "the node came back" and
keeps the PV forever.  While a node exists we record its UID on its local PVs
(``kustodian.io/node-uid``); a different UID later means the data is gone.  This is
only done for PVs pinned to exactly one node, the only case where one UID describes
where the data is.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from kustodian.policy.node_cleanup.affinity import affinity_node_names
from kustodian.policy.node_cleanup.nodes import NodeDirectory, node_exists, node_uid
from kustodian.policy.node_cleanup.reasons import NodeCleanupReason
from kustodian.policy.objects import RawObject, field, map_field, str_field

ANNOTATION_NODE_UID = "kustodian.io/node-uid"


@dataclass(frozen=True)
class PVStatus:
    """Verdict on one PV.

    ``record_node_uid`` is the UID of the PV's (single, existing) node when recreated
    node detection is on and it is not yet the one recorded on the PV: the caller
    should store it under ``kustodian.io/node-uid``.
    """

    stale: bool
    reason: NodeCleanupReason
    node_names: tuple[str, ...] = ()
    detail: str = ""
    record_node_uid: str | None = None


def classify_pv(
    pv: RawObject,
    nodes: NodeDirectory,
    opted_in_classes: Collection[str],
    *,
    detect_recreated: bool = False,
) -> PVStatus:
    """Decide whether ``pv`` is a local PV of an opted-in class whose node no longer exists."""
    if not isinstance(field(pv, "spec", "local"), Mapping):
        return PVStatus(False, NodeCleanupReason.NOT_LOCAL, detail="spec.local: absent")
    storage_class = str_field(pv, "spec", "storageClassName")
    if not storage_class or storage_class not in opted_in_classes:
        return PVStatus(False, NodeCleanupReason.NOT_OPTED_IN,
                        detail=f"storageClassName {storage_class!r} not opted in")
    pinned = affinity_node_names(pv)
    if pinned.skip_reason is not None:
        return PVStatus(False, pinned.skip_reason, detail=pinned.detail)
    node_names = tuple(sorted(pinned.node_names))
    if nodes.lookup_failed:
        return PVStatus(False, NodeCleanupReason.NODE_LOOKUP_FAILED, node_names,
                        "node lookup failed: assuming present")
    existing = [n for n in node_names if node_exists(nodes, n)]
    if not existing:
        return PVStatus(True, NodeCleanupReason.NODE_MISSING, node_names,
                        f"no node named {', '.join(node_names)}")
    if not detect_recreated or len(node_names) != 1:
        return PVStatus(False, NodeCleanupReason.NODE_EXISTS, node_names, f"node {existing[0]} exists")

    current = node_uid(nodes, node_names[0])
    recorded = map_field(pv, "metadata", "annotations").get(ANNOTATION_NODE_UID)
    if current and isinstance(recorded, str) and recorded and recorded != current:
        return PVStatus(
            True,
            NodeCleanupReason.NODE_RECREATED,
            node_names,
            f"node {node_names[0]} was recreated: uid {recorded} -> {current}",
        )
    return PVStatus(
        False,
        NodeCleanupReason.NODE_EXISTS,
        node_names,
        f"node {node_names[0]} exists",
        record_node_uid=current if current and recorded != current else None,
    )
