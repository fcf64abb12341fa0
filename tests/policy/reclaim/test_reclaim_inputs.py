"""The one propagation decision over one frozen input is the decisions it is made of."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kustodian.policy.reclaim.annotations import SCHEDULE
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.inputs import ReclaimPropagationInput, decide_reclaim_propagation
from kustodian.policy.reclaim.keyrotation import KEYROTATION_KEYS, reconcile_keyrotation
from kustodian.policy.reclaim.propagation import merge_changes, reconcile_annotations

from .reclaim_builders import namespace, pvc, storageclass

DRIVER = "rook-ceph.rbd.csi.ceph.com"
PV = {"spec": {"csi": {"driver": DRIVER, "volumeHandle": "v"}}}


def csi_addons_node(caps: list[str]) -> dict[str, Any]:
    return {"spec": {"driver": {"name": DRIVER, "nodeID": "n1", "endpoint": "x"}},
            "status": {"state": "Connected", "capabilities": caps}}


RECLAIM = csi_addons_node(["reclaim_space.ONLINE"])
BOTH = csi_addons_node(["reclaim_space.ONLINE", "encryption_key_rotation.ONLINE"])
SC = storageclass(annotations={SCHEDULE: "@daily", KEYROTATION_KEYS[SCHEDULE]: "@weekly"})
NS = namespace(annotations={SCHEDULE: "@hourly"})

CASES: list[tuple[str, dict[str, Any] | None, tuple[dict[str, Any], ...], bool, bool, bool]] = [
    # name, PV, CSIAddonsNodes, keyrotation; expected capability for reclaim space, for key rotation
    ("capable-driver", PV, (RECLAIM,), False, True, False),
    ("no-csi-addons", PV, (), False, False, False),
    ("unbound-uses-the-provisioner", None, (RECLAIM,), False, True, False),
    ("keyrotation-too", PV, (BOTH,), True, True, True),
    ("keyrotation-not-advertised", PV, (RECLAIM,), True, True, False),
]


@pytest.mark.parametrize(("volume", "nodes", "keyrotation", "capable", "rotation_capable"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_decision_over_the_input(volume: dict[str, Any] | None, nodes: tuple[dict[str, Any], ...],
                                     keyrotation: bool, capable: bool, rotation_capable: bool) -> None:
    claim, config = pvc(), ReclaimConfig()
    observed = ReclaimPropagationInput(claim, NS, SC, volume, nodes, config, keyrotation)
    expected = reconcile_annotations(claim, NS, SC, config, capable=capable)
    if keyrotation:
        expected = merge_changes(expected, reconcile_keyrotation(claim, NS, SC, precedence=config.precedence,
                                                                 capable=rotation_capable))
    assert decide_reclaim_propagation(observed) == expected


def test_the_input_is_frozen() -> None:
    observed = ReclaimPropagationInput(pvc(), None, None, None, (), ReclaimConfig())
    with pytest.raises(dataclasses.FrozenInstanceError):
        observed.keyrotation = True  # type: ignore[misc]
