"""The reclaim-space policy's params: each schedule judged once, every entry bounded."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from kustodian.policy.reclaim.annotations import ENABLE, SCHEDULE
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.mutation_params import SCHEDULE_LIMIT, SIZE_LIMIT, mutation_params

from .reclaim_builders import CM_SOURCE, namespace, storageclass

NODE: dict[str, Any] = {"spec": {"driver": {"name": "rook-ceph.rbd.csi.ceph.com"}},
                        "status": {"state": "Connected", "capabilities": ["reclaim_space.ONLINE"]}}


def _sc(name: str, annotations: dict[str, str], provisioner: str = "rook-ceph.rbd.csi.ceph.com") -> dict[str, Any]:
    sc = storageclass(annotations=annotations)
    sc["metadata"]["name"] = name
    sc["provisioner"] = provisioner
    return sc


def test_each_storageclass_and_namespace_schedule_is_judged_as_csi_addons_runs_it() -> None:
    config = ReclaimConfig(source=CM_SOURCE, storageclass_schedules={"cm-only": "@daily", "daily": "@monthly"},
                           stagger_window=timedelta(hours=2))
    classes = [_sc("daily", {SCHEDULE: "@daily"}), _sc("bad", {SCHEDULE: "sometimes"}),
               _sc("off", {ENABLE: "false"}), _sc("other", {SCHEDULE: "0 3 * * *"}, "other.csi.example.com")]
    spaces = [namespace(annotations={SCHEDULE: "0 4 * * *"}), {"metadata": {"name": "plain"}}]
    spec = mutation_params(classes, spaces, config, [NODE]).spec
    assert (spec["precedence"], spec["enabled"], spec["source"], spec["stagger"]) == ("pvc", True, CM_SOURCE, True)
    scs = spec["storageClasses"]
    assert scs["daily"] == {"exists": True, "disabled": False, "capable": True, "schedule": "@daily", "valid": True,
                            "parses": True, "staggered": True, "configured": "@monthly",
                            "configuredStaggered": False}
    assert (scs["bad"]["valid"], scs["bad"]["parses"]) == (False, False)  # csi-addons would run @weekly
    assert scs["off"] == {"exists": True, "disabled": True, "capable": True}
    assert scs["other"]["capable"] is False  # no connected CSIAddonsNode of its driver
    assert scs["cm-only"] == {"exists": False, "disabled": False, "capable": False, "configured": "@daily",
                              "configuredStaggered": True}
    assert spec["namespaces"] == {"test": {"schedule": "0 4 * * *", "valid": True, "parses": True,
                                           "staggered": False}}
    assert spec["omitted"] == 0


def test_the_object_stays_under_its_size_limit_and_counts_what_it_left_out() -> None:
    many = [{"metadata": {"name": f"team-{i:06d}", "annotations": {SCHEDULE: "0 4 * * *"}}} for i in range(20000)]
    long = {"metadata": {"name": "long", "annotations": {SCHEDULE: "0 " * SCHEDULE_LIMIT}}}
    decided = mutation_params([], [*many, long], ReclaimConfig(), [])
    kept = len(decided.spec["namespaces"])
    assert 0 < kept < 20000 and "long" not in decided.spec["namespaces"]
    assert decided.omitted == decided.spec["omitted"] == 20001 - kept
    # as the API server stores it (compact JSON)
    assert len(json.dumps(dict(decided.spec), separators=(",", ":")).encode()) < SIZE_LIMIT
