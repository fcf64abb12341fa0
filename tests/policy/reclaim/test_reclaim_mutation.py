"""Admission patches for a PVC being created: exact ops, escaping, idempotence."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kustodian.policy.reclaim.annotations import APPLIED, ENABLE, SCHEDULE, SOURCE
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.mutation import apply_change, mutate_on_create, patch_ops
from kustodian.policy.reclaim.propagation import AnnotationChange

from .reclaim_builders import CM_SOURCE, apply_patch, kustodian_pvc, namespace, pvc, storageclass

SC = "storageclass/rook-ceph-block"
ESC_SCHEDULE = "/metadata/annotations/reclaimspace.csiaddons.openshift.io~1schedule"
ESC_SOURCE = "/metadata/annotations/reclaimspace.kustodian.io~1source"
ESC_APPLIED = "/metadata/annotations/reclaimspace.kustodian.io~1applied"
DAILY_SC = storageclass(annotations={SCHEDULE: "@daily"})
CONFIG = ReclaimConfig(source=CM_SOURCE, storageclass_schedules={"rook-ceph-block": "@monthly"})

CASES: list[tuple[str, dict[str, Any], dict[str, Any] | None, ReclaimConfig | None, list[dict[str, Any]]]] = [
    (
        "no-annotations-adds-the-map",
        pvc(),
        DAILY_SC,
        None,
        [{"op": "add", "path": "/metadata/annotations", "value": {SCHEDULE: "@daily", SOURCE: SC, APPLIED: "@daily"}}],
    ),
    (
        "existing-annotations-add-escaped-members",
        pvc(annotations={"volume.kubernetes.io/storage-provisioner": "rook-ceph.rbd.csi.ceph.com"}),
        DAILY_SC,
        None,
        [
            {"op": "add", "path": ESC_SCHEDULE, "value": "@daily"},
            {"op": "add", "path": ESC_SOURCE, "value": SC},
            {"op": "add", "path": ESC_APPLIED, "value": "@daily"},
        ],
    ),
    (
        "empty-annotations-map",
        pvc(annotations={}),
        None,
        CONFIG,
        [
            {"op": "add", "path": ESC_SCHEDULE, "value": "@monthly"},
            {"op": "add", "path": ESC_SOURCE, "value": CM_SOURCE},
            {"op": "add", "path": ESC_APPLIED, "value": "@monthly"},
        ],
    ),
    ("user-schedule-never-touched", pvc(annotations={SCHEDULE: "0 4 * * *"}), DAILY_SC, CONFIG, []),
    ("user-invalid-schedule-never-touched", pvc(annotations={SCHEDULE: "daily"}), DAILY_SC, CONFIG, []),
    ("no-source-no-ops", pvc(), storageclass(), None, []),
    ("pvc-disabled-no-ops", pvc(annotations={ENABLE: "false"}), DAILY_SC, None, []),
    ("deleting-no-ops", pvc(deleting=True), DAILY_SC, None, []),
    (
        "copied-manifest-with-stale-kustodian-schedule-is-updated",
        kustodian_pvc("@weekly", "storageclass/old-sc"),
        DAILY_SC,
        None,
        [
            {"op": "replace", "path": ESC_SCHEDULE, "value": "@daily"},
            {"op": "replace", "path": ESC_SOURCE, "value": SC},
            {"op": "replace", "path": ESC_APPLIED, "value": "@daily"},
            {"op": "add", "path": "/metadata/annotations/reclaimspace.kustodian.io~1previous", "value": "@weekly"},
        ],
    ),
    (
        "copied-manifest-user-edited-hands-over",
        pvc(annotations={SCHEDULE: "0 5 * * *", SOURCE: SC, APPLIED: "@daily"}),
        DAILY_SC,
        None,
        [{"op": "remove", "path": ESC_SOURCE}, {"op": "remove", "path": ESC_APPLIED}],
    ),
]


@pytest.mark.parametrize(
    ("claim", "sc", "config", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_mutate_on_create(
    claim: dict[str, Any], sc: dict[str, Any] | None, config: ReclaimConfig | None, expected: list[dict[str, Any]]
) -> None:
    ops = mutate_on_create(claim, namespace(), sc, config)
    assert ops == expected
    patched = apply_patch(claim, ops)
    # Re-invocation (reinvocationPolicy: IfNeeded) on the patched object: nothing more to do.
    assert mutate_on_create(patched, namespace(), sc, config) == []
    # Nothing outside metadata.annotations moves.
    assert {k: v for k, v in patched.items() if k != "metadata"} == {k: v for k, v in claim.items() if k != "metadata"}


def test_namespace_schedule_on_create() -> None:
    ops = mutate_on_create(pvc(), namespace(annotations={SCHEDULE: "@hourly"}), DAILY_SC, None)
    assert apply_patch(pvc(), ops)["metadata"]["annotations"] == {
        SCHEDULE: "@hourly",
        SOURCE: "namespace/test",
        APPLIED: "@hourly",
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [("rbd-pvc", "17 4 * * *"), ("", "@daily")],
    ids=["named-pvc-is-staggered", "generate-name-pvc-left-to-the-controller"],
)
def test_stagger_on_create(name: str, expected: str) -> None:
    config = ReclaimConfig(source=CM_SOURCE, stagger_window=timedelta(hours=6))
    claim = pvc(name=name)
    patched = apply_patch(claim, mutate_on_create(claim, namespace(), DAILY_SC, config))
    annots = patched["metadata"]["annotations"]
    assert annots[SCHEDULE] == annots[APPLIED] == expected


def test_patch_ops_without_change() -> None:
    assert patch_ops(pvc(), None) == []


def test_apply_change_creates_metadata_and_does_not_alias() -> None:
    bare: dict[str, Any] = {"kind": "PersistentVolumeClaim"}
    change = AnnotationChange({SCHEDULE: "@daily", SOURCE: SC, APPLIED: None}, "test")
    new = apply_change(bare, change)
    assert new == {"kind": "PersistentVolumeClaim", "metadata": {"annotations": {SCHEDULE: "@daily", SOURCE: SC}}}
    assert bare == {"kind": "PersistentVolumeClaim"}
    assert patch_ops(bare, change) == [
        {"op": "add", "path": "/metadata", "value": {"annotations": {SCHEDULE: "@daily", SOURCE: SC}}}
    ]
