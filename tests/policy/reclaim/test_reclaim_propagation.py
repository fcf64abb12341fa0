"""The propagation controller's decisions, scenario by scenario from the csi-addons design doc.

Each scenario is "the PVC as it is now" + "the sources as they are now" -> the minimal
annotation change.  A second application must always be a no-op (level-based).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kustodian.policy.reclaim.annotations import APPLIED, CRONJOB, ENABLE, PREVIOUS, SCHEDULE, SOURCE
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.mutation import apply_change
from kustodian.policy.reclaim.precedence import Disabled, EffectiveSchedule
from kustodian.policy.reclaim.propagation import (
    INDEXERS,
    AnnotationChange,
    desired_annotations,
    reconcile_annotations,
)
from kustodian.policy.store import ListView

from .reclaim_builders import CM_SOURCE, kustodian_pvc, namespace, pvc, storageclass

SC = "storageclass/rook-ceph-block"
NS = "namespace/test"
NO_CONFIG = ReclaimConfig()
CONFIG = ReclaimConfig(source=CM_SOURCE, storageclass_schedules={"rook-ceph-block": "@monthly"})


def sc(schedule: str | None = None, **extra: str) -> dict[str, Any]:
    annots = dict(extra)
    if schedule is not None:
        annots[SCHEDULE] = schedule
    return storageclass(annotations=annots)


SCENARIOS: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], ReclaimConfig, dict[str, str | None] | None]] = [
    # 1. User adds the annotations to ...
    ("1-user-adds-to-pvc-nothing-to-do", pvc(annotations={SCHEDULE: "@daily"}), namespace(), sc(), NO_CONFIG, None),
    ("1-user-adds-to-storageclass-pvc-gets-it", pvc(), namespace(), sc("@daily"), NO_CONFIG,
     {SCHEDULE: "@daily", SOURCE: SC, APPLIED: "@daily"}),
    ("1-user-adds-to-namespace-pvc-gets-it", pvc(), namespace(annotations={SCHEDULE: "@hourly"}), sc("@daily"), NO_CONFIG,
     {SCHEDULE: "@hourly", SOURCE: NS, APPLIED: "@hourly"}),
    ("1-admin-adds-configmap-entry", pvc(), namespace(), sc(), CONFIG,
     {SCHEDULE: "@monthly", SOURCE: CM_SOURCE, APPLIED: "@monthly"}),
    # 2. User updates the annotations on ...
    ("2-user-updates-own-pvc-schedule", pvc(annotations={SCHEDULE: "0 3 * * *"}), namespace(), sc("@daily"), NO_CONFIG, None),
    ("2-user-updates-kustodian-pvc-schedule-takes-ownership",
     pvc(annotations={SCHEDULE: "0 3 * * *", SOURCE: SC, APPLIED: "@daily"}), namespace(), sc("@daily"), NO_CONFIG,
     {SOURCE: None, APPLIED: None}),
    ("2-storageclass-updated-kustodian-pvc-follows", kustodian_pvc("@daily", SC), namespace(), sc("@weekly"), NO_CONFIG,
     {SCHEDULE: "@weekly", APPLIED: "@weekly", PREVIOUS: "@daily"}),
    ("2-storageclass-updated-user-pvc-untouched", pvc(annotations={SCHEDULE: "@daily"}), namespace(), sc("@weekly"), NO_CONFIG, None),
    ("2-storageclass-unchanged-kustodian-pvc-in-sync", kustodian_pvc("@daily", SC), namespace(), sc("@daily"), NO_CONFIG, None),
    ("2-namespace-added-over-storageclass-source-switches", kustodian_pvc("@daily", SC),
     namespace(annotations={SCHEDULE: "@daily"}), sc("@daily"), NO_CONFIG, {SOURCE: NS}),
    # 3. User removes the annotations from ...
    ("3-user-removes-own-pvc-schedule", pvc(annotations={}), namespace(), sc(), NO_CONFIG, None),
    ("3-user-removes-kustodian-schedule-it-comes-back", pvc(annotations={SOURCE: SC, APPLIED: "@daily"}), namespace(),
     sc("@daily"), NO_CONFIG, {SCHEDULE: "@daily"}),
    ("3-user-removes-kustodian-schedule-no-source-left-marks-dropped", pvc(annotations={SOURCE: SC, APPLIED: "@daily"}),
     namespace(), sc(), NO_CONFIG, {SOURCE: None, APPLIED: None, PREVIOUS: "@daily"}),
    ("3-storageclass-removed-kustodian-pvc-cleared", kustodian_pvc("@daily", SC), namespace(), sc(), NO_CONFIG,
     {SCHEDULE: None, SOURCE: None, APPLIED: None, PREVIOUS: "@daily"}),
    ("3-storageclass-removed-falls-back-to-configmap", kustodian_pvc("@daily", SC), namespace(), sc(), CONFIG,
     {SCHEDULE: "@monthly", SOURCE: CM_SOURCE, APPLIED: "@monthly", PREVIOUS: "@daily"}),
    ("3-storageclass-removed-user-pvc-untouched", pvc(annotations={SCHEDULE: "@daily"}), namespace(), sc(), NO_CONFIG, None),
    # Ownership edge cases
    ("user-deletes-marker-adopts-schedule", pvc(annotations={SCHEDULE: "@daily", APPLIED: "@daily"}), namespace(), sc("@weekly"),
     NO_CONFIG, {APPLIED: None}),
    ("pvc-disables-kustodian-schedule-removed", kustodian_pvc("@daily", SC, annotations={ENABLE: "false"}), namespace(),
     sc("@daily"), NO_CONFIG, {SCHEDULE: None, SOURCE: None, APPLIED: None, PREVIOUS: "@daily"}),
    ("namespace-disables-kustodian-schedule-removed", kustodian_pvc("@daily", SC), namespace(annotations={ENABLE: "false"}),
     sc("@daily"), NO_CONFIG, {SCHEDULE: None, SOURCE: None, APPLIED: None, PREVIOUS: "@daily"}),
    ("kill-switch-removes-kustodian-schedule", kustodian_pvc("@monthly", CM_SOURCE), namespace(), sc(),
     ReclaimConfig(source=CM_SOURCE, storageclass_schedules={"rook-ceph-block": "@monthly"}, enabled=False),
     {SCHEDULE: None, SOURCE: None, APPLIED: None, PREVIOUS: "@monthly"}),
    ("kill-switch-leaves-user-schedule", pvc(annotations={SCHEDULE: "@daily"}), namespace(), sc(),
     ReclaimConfig(source=CM_SOURCE, enabled=False), None),
    ("invalid-source-schedule-changes-nothing", kustodian_pvc("@daily", SC), namespace(), sc("every day"), NO_CONFIG, None),
    ("invalid-source-no-schedule-yet", pvc(), namespace(), sc("0 0 * * 7"), NO_CONFIG, None),
    ("deleting-pvc-skipped", kustodian_pvc("@daily", SC, deleting=True), namespace(), sc(), NO_CONFIG, None),
    ("sc-mode-writes-nothing-csi-addons-ignores-pvcs", pvc(), namespace(annotations={SCHEDULE: "@hourly"}), sc("@weekly"),
     ReclaimConfig(precedence="storageclass"), None),
    ("sc-mode-removes-what-kustodian-wrote-before", kustodian_pvc("@weekly", SC), namespace(), sc("@weekly"),
     ReclaimConfig(precedence="storageclass"), {SCHEDULE: None, SOURCE: None, APPLIED: None, PREVIOUS: "@weekly"}),
    # csi-addons writes the schedule annotation too: its write-back is not a user edit
    ("stale-writeback-of-the-previous-value-is-reasserted",
     kustodian_pvc("@weekly", SC, annotations={SCHEDULE: "@daily", PREVIOUS: "@daily"}), namespace(), sc("@weekly"),
     NO_CONFIG, {SCHEDULE: "@weekly"}),
    ("stale-writeback-after-removal-is-removed-again", pvc(annotations={SCHEDULE: "@daily", PREVIOUS: "@daily"}),
     namespace(), sc(), NO_CONFIG, {SCHEDULE: None}),
    ("writeback-of-storageclass-value-over-staggered-is-reasserted",
     kustodian_pvc("17 4 * * *", SC, annotations={SCHEDULE: "@daily", CRONJOB: "data-1"}), namespace(), sc("@daily"),
     ReclaimConfig(stagger_window=timedelta(hours=6)), {SCHEDULE: "17 4 * * *"}),
    # csi-addons ran @weekly for the namespace's unparsable value and wrote it back: not a user edit, so the
    # marks stay (a hand-over would be {SOURCE: None, APPLIED: None}); the invalid source changes nothing
    ("writeback-of-weekly-fallback-keeps-kustodian-marks",
     kustodian_pvc("@daily", SC, annotations={SCHEDULE: "@weekly"}), namespace(annotations={SCHEDULE: "bad"}),
     sc("@daily"), NO_CONFIG, None),
    ("csi-addons-copy-of-storageclass-is-taken-over", pvc(annotations={SCHEDULE: "@daily", CRONJOB: "data-1"}),
     namespace(), sc("@daily"), NO_CONFIG, {SOURCE: SC, APPLIED: "@daily"}),
    ("csi-addons-copy-then-disabled-left-alone", pvc(annotations={SCHEDULE: "@daily", CRONJOB: "data-1"}),
     namespace(), sc("@daily"), ReclaimConfig(source=CM_SOURCE, enabled=False), None),
    ("schedule-equal-to-source-without-cronjob-is-the-users", pvc(annotations={SCHEDULE: "@daily"}),
     namespace(), sc("@daily"), NO_CONFIG, None),
    ("stale-csi-addons-copy-of-an-old-storageclass-value-is-the-users",
     pvc(annotations={SCHEDULE: "@daily", CRONJOB: "data-1"}), namespace(), sc("@weekly"), NO_CONFIG, None),
    ("user-edit-to-another-value-still-hands-over",
     kustodian_pvc("@daily", SC, annotations={SCHEDULE: "0 5 * * *", CRONJOB: "data-1"}), namespace(), sc("@daily"),
     NO_CONFIG, {SOURCE: None, APPLIED: None}),
]


@pytest.mark.parametrize(
    ("claim", "ns", "storage", "config", "expected"), [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS]
)
def test_scenarios(
    claim: dict[str, Any],
    ns: dict[str, Any],
    storage: dict[str, Any],
    config: ReclaimConfig,
    expected: dict[str, str | None] | None,
) -> None:
    change = reconcile_annotations(claim, ns, storage, config)
    if expected is None:
        assert change is None
        return
    assert change is not None
    assert dict(change.annotations) == expected
    assert change.reason
    # Level-based: once applied, the same sources ask for nothing more.
    updated = apply_change(claim, change)
    assert reconcile_annotations(updated, ns, storage, config) is None


def test_merge_patch_carries_resource_version() -> None:
    change = reconcile_annotations(kustodian_pvc("@daily", SC, resource_version="77"), namespace(), sc(), NO_CONFIG)
    assert change is not None
    assert change.merge_patch() == {
        "metadata": {"annotations": {SCHEDULE: None, SOURCE: None, APPLIED: None, PREVIOUS: "@daily"},
                     "resourceVersion": "77"}
    }


def test_merge_patch_without_resource_version() -> None:
    assert AnnotationChange({SCHEDULE: "@daily"}, "r").merge_patch() == {"metadata": {"annotations": {SCHEDULE: "@daily"}}}


def test_stagger_applies_in_pvc_mode_only() -> None:
    window = timedelta(hours=6)
    claim = pvc()
    change = reconcile_annotations(claim, namespace(), sc("@daily"), ReclaimConfig(stagger_window=window))
    assert change is not None
    assert change.annotations[SCHEDULE] == change.annotations[APPLIED] == "17 4 * * *"
    # Staggered Kustodian schedules are recognised as Kustodian's on the next pass.
    updated = apply_change(claim, change)
    assert reconcile_annotations(updated, namespace(), sc("@daily"), ReclaimConfig(stagger_window=window)) is None
    # csi-addons reads the StorageClass itself in storageclass mode: nothing is written on PVCs at all.
    sc_mode = ReclaimConfig(stagger_window=window, precedence="storageclass")
    assert reconcile_annotations(claim, namespace(), sc("@daily"), sc_mode) is None


def test_unstaggered_create_is_staggered_by_the_controller() -> None:
    # The webhook wrote "@daily" while the PVC had no name yet (generateName).
    claim = kustodian_pvc("@daily", SC, name="data-abc12")
    change = reconcile_annotations(claim, namespace(), sc("@daily"), ReclaimConfig(stagger_window=timedelta(hours=2)))
    assert change is not None
    assert set(change.annotations) == {SCHEDULE, APPLIED, PREVIOUS}


@pytest.mark.parametrize(
    ("effective", "expected"),
    [
        (EffectiveSchedule("@daily", "pvc"), None),  # inconsistent with an unowned PVC: do nothing
        (Disabled("pvc"), None),
        (None, None),
    ],
    ids=["pvc-source-for-unowned-pvc", "disabled-nothing-to-remove", "nothing"],
)
def test_desired_annotations_direct(effective: Any, expected: Any) -> None:
    assert desired_annotations(pvc(), effective) == expected


def test_indexer_finds_pvcs_of_a_storageclass() -> None:
    view = ListView(
        {"PersistentVolumeClaim": [pvc("a"), pvc("b", storage_class="other"), pvc("c", storage_class=None)]},
        INDEXERS,
    )
    assert [p["metadata"]["name"] for p in view.by_index("PersistentVolumeClaim", "storageclass", "rook-ceph-block")] == [
        "a"
    ]
