"""Admission validation: each error names the key, the value and why."""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.policy.reclaim.annotations import APPLIED, ENABLE, SCHEDULE, SOURCE
from kustodian.policy.reclaim.validation import (
    KIND_CONFIGMAP,
    KIND_NAMESPACE,
    KIND_PVC,
    KIND_STORAGECLASS,
    validate_object,
)

from .reclaim_builders import configmap, namespace, pvc, storageclass

SCHEDULE_PATH = "metadata.annotations[reclaimspace.csiaddons.openshift.io/schedule]"
ENABLE_PATH = "metadata.annotations[reclaimspace.csiaddons.openshift.io/enable]"
EVERY_DAY = (
    f'{SCHEDULE_PATH}: "every day" is not a valid schedule: it has 2 fields but a cron expression needs 5 '
    '(minute hour day-of-month month day-of-week); did you mean "@daily"?'
)
ENABLE_HINT = (
    'is not valid: use "true" or "false" (csi-addons only recognises the exact string "false"; '
    "any other value leaves reclaiming on)"
)

CASES: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("storageclass-valid", KIND_STORAGECLASS, storageclass(annotations={SCHEDULE: "@daily", ENABLE: "true"}), []),
    ("storageclass-every-day", KIND_STORAGECLASS, storageclass(annotations={SCHEDULE: "every day"}), [EVERY_DAY]),
    ("storageclass-no-annotations", KIND_STORAGECLASS, storageclass(), []),
    ("namespace-enable-False", KIND_NAMESPACE, namespace(annotations={ENABLE: "False"}), [f'{ENABLE_PATH}: "False" {ENABLE_HINT}']),
    ("namespace-enable-no", KIND_NAMESPACE, namespace(annotations={ENABLE: "no"}), [f'{ENABLE_PATH}: "no" {ENABLE_HINT}']),
    ("namespace-cron-tz", KIND_NAMESPACE, namespace(annotations={SCHEDULE: "CRON_TZ=Europe/Paris 0 2 * * *"}), []),
    (
        "namespace-bad-zone",
        KIND_NAMESPACE,
        namespace(annotations={SCHEDULE: "TZ=bad/zone 0 2 * * *"}),
        [f'{SCHEDULE_PATH}: "TZ=bad/zone 0 2 * * *" is not a valid schedule: unknown time zone "bad/zone" '
         "(use an IANA name such as Europe/Paris or UTC)"],
    ),
    ("pvc-valid-kustodian", KIND_PVC, pvc(annotations={SCHEDULE: "@daily", SOURCE: "storageclass/rbd", APPLIED: "@daily"}), []),
    ("pvc-valid-configmap-marker", KIND_PVC, pvc(annotations={SOURCE: "configmap/csi-addons-system/cfg"}), []),
    (
        "pvc-everything-wrong",
        KIND_PVC,
        pvc(annotations={SCHEDULE: "0 2 * * * 30", ENABLE: "0", SOURCE: "sc/rbd"}),
        [
            f'{SCHEDULE_PATH}: "0 2 * * * 30" is not a valid schedule: it has 6 fields but a cron expression needs 5 '
            "(minute hour day-of-month month day-of-week); csi-addons uses robfig/cron's standard parser, which has "
            "no seconds field",
            f'{ENABLE_PATH}: "0" {ENABLE_HINT}',
            'metadata.annotations[reclaimspace.kustodian.io/source]: "sc/rbd" is not a valid source: expected '
            "storageclass/<name>, namespace/<name> or configmap/<namespace>/<name> (remove it to make the schedule "
            "yours)",
        ],
    ),
    ("pvc-empty-schedule-is-weekly-upstream", KIND_PVC, pvc(annotations={SCHEDULE: ""}), []),
    ("pvc-non-string-schedule", KIND_PVC, {"metadata": {"annotations": {SCHEDULE: 5}}}, [f"{SCHEDULE_PATH}: must be a string, got 5"]),
    ("storageclass-marker-ignored", KIND_STORAGECLASS, storageclass(annotations={SOURCE: "nonsense"}), []),
    (
        "configmap-at-expected-place",
        KIND_CONFIGMAP,
        configmap({"auto-reclaim-storageclass": {"rbd-sc": "daily"}}),
        ['config.json: auto-reclaim-storageclass.rbd-sc: "daily" is not a valid schedule: it has 1 field but a cron '
         'expression needs 5 (minute hour day-of-month month day-of-week); did you mean "@daily"?'],
    ),
    ("configmap-elsewhere-not-ours", KIND_CONFIGMAP, configmap("not json", name="other"), []),
    ("other-kind-no-opinion", "PersistentVolume", {"metadata": {"annotations": {SCHEDULE: "every day"}}}, []),
]


@pytest.mark.parametrize(("kind", "obj", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate_object(kind: str, obj: dict[str, Any], expected: list[str]) -> None:
    assert validate_object(kind, obj) == expected


def test_configmap_location_is_configurable() -> None:
    cm = configmap("not json", ns="kustodian", name="reclaim")
    assert validate_object(KIND_CONFIGMAP, cm) == []
    assert validate_object(KIND_CONFIGMAP, cm, config_map=("kustodian", "reclaim")) == [
        "config.json: not valid JSON: Expecting value (line 1, column 1)"
    ]
