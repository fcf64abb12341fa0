"""Cache indexes the node-cleanup loops look things up by.

A Node delete event must find the PVs pinned to that node, a PVC event the PV that
claims it, and a PV's hostname the Node that carries it, among tens of thousands of
objects: these are dict lookups in the watch cache, declared here next to the policy
that relies on them (see :mod:`policy.store`).
"""

from __future__ import annotations

from kustodian.policy.node_cleanup.affinity import referenced_hostnames
from kustodian.policy.node_cleanup.recovery import pod_claim_names, statefulset_owner
from kustodian.policy.objects import RawObject, str_field
from kustodian.policy.store import Indexers

PV_BY_NODE = "node-cleanup/pv-by-node"
PV_BY_CLAIM = "node-cleanup/pv-by-claim"
POD_BY_CLAIM = "node-cleanup/statefulset-pod-by-claim"


def pv_node_keys(pv: RawObject) -> list[str]:
    """Every node name or hostname ``pv``'s affinity pins it to (``kubernetes.io/hostname In``)."""
    return referenced_hostnames(pv)


def pv_claim_keys(pv: RawObject) -> list[str]:
    """``namespace/name`` of the claim in ``spec.claimRef``, if any."""
    ns, nm = str_field(pv, "spec", "claimRef", "namespace"), str_field(pv, "spec", "claimRef", "name")
    return [f"{ns}/{nm}"] if ns and nm else []


def statefulset_pod_claim_keys(pod: RawObject) -> list[str]:
    """``namespace/claim`` of every PVC a StatefulSet's pod names (other pods: none, to stay small)."""
    if not statefulset_owner(pod):
        return []
    ns = str_field(pod, "metadata", "namespace")
    return [f"{ns}/{claim}" for claim in pod_claim_names(pod)]


INDEXERS: Indexers = {
    "PersistentVolume": {PV_BY_NODE: pv_node_keys, PV_BY_CLAIM: pv_claim_keys},
    "Pod": {POD_BY_CLAIM: statefulset_pod_claim_keys},
}
