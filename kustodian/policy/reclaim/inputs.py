"""The one frozen input of a reclaim propagation decision, and the decision over it.

cert-manager's shape, as node cleanup has it: the controller gathers one input per PVC (from
the watch caches, or with the PVC read from the API server again after a 409), this pure
function decides the annotation change, the controller patches.  Everything the decision
reads is in the input: the PVC, the Namespace and StorageClass it inherits from, its PV (for
the CSI driver), the CSIAddonsNodes (which drivers advertise the feature) and the
configuration in force.
"""

from __future__ import annotations

from dataclasses import dataclass

from kustodian.policy.objects import RawObject
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.keyrotation import reconcile_keyrotation
from kustodian.policy.reclaim.propagation import AnnotationChange, merge_changes, reconcile_annotations
from kustodian.policy.reclaim.upstream import KEYROTATION, driver_capable, pvc_driver

__all__ = ["ReclaimPropagationInput", "decide_reclaim_propagation"]


@dataclass(frozen=True)
class ReclaimPropagationInput:
    """Everything one propagation decision about one PVC reads, gathered once.

    ``config`` is Kustodian's configuration in force with csi-addons' precedence;
    ``keyrotation``: decide ``keyrotation.csiaddons.openshift.io`` as well (opt-in).
    """

    claim: RawObject
    namespace: RawObject | None
    storage_class: RawObject | None
    volume: RawObject | None
    csi_addons_nodes: tuple[RawObject, ...]
    config: ReclaimConfig
    keyrotation: bool = False


def decide_reclaim_propagation(observed: ReclaimPropagationInput) -> AnnotationChange | None:
    """The minimal annotation change for the PVC (``None``: it is as it should be)."""
    driver = pvc_driver(observed.volume, observed.storage_class)
    change = reconcile_annotations(observed.claim, observed.namespace, observed.storage_class,
                                   observed.config, capable=driver_capable(driver, observed.csi_addons_nodes))
    if not observed.keyrotation:
        return change
    rotation = reconcile_keyrotation(observed.claim, observed.namespace, observed.storage_class,
                                     precedence=observed.config.precedence,
                                     capable=driver_capable(driver, observed.csi_addons_nodes, KEYROTATION))
    return merge_changes(change, rotation)
