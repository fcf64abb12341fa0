"""Which schedule applies: every level, both modes, enable=false at each level, the kill switch."""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.policy.reclaim.annotations import APPLIED, ENABLE, SCHEDULE, SOURCE
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.precedence import (
    Disabled,
    Effective,
    EffectiveSchedule,
    InvalidSchedule,
    effective_schedule,
    storage_class_name,
)

from .reclaim_builders import CM_SOURCE, kustodian_pvc, namespace, pvc, storageclass

NS = "namespace/test"
SC = "storageclass/rook-ceph-block"
OFF = {ENABLE: "false"}

CONFIG = ReclaimConfig(source=CM_SOURCE, storageclass_schedules={"rook-ceph-block": "@monthly"})
KILLED = ReclaimConfig(source=CM_SOURCE, storageclass_schedules={"rook-ceph-block": "@monthly"}, enabled=False)
SC_MODE = ReclaimConfig(
    source=CM_SOURCE, storageclass_schedules={"rook-ceph-block": "@monthly"}, precedence="storageclass"
)


def _a(schedule: str | None = None, **extra: str) -> dict[str, str]:
    out = dict(extra)
    if schedule is not None:
        out[SCHEDULE] = schedule
    return out


SCENARIOS: list[tuple[str, dict[str, Any], dict[str, str] | None, dict[str, str] | None, ReclaimConfig, Effective | None]] = [
    # id, pvc, namespace annotations, storageclass annotations, config, expected
    ("nothing-anywhere", pvc(), {}, {}, ReclaimConfig(), None),
    ("configmap-only", pvc(), {}, {}, CONFIG, EffectiveSchedule("@monthly", CM_SOURCE)),
    ("storageclass-beats-configmap", pvc(), {}, _a("@weekly"), CONFIG, EffectiveSchedule("@weekly", SC)),
    ("namespace-beats-storageclass", pvc(), _a("@daily"), _a("@weekly"), CONFIG, EffectiveSchedule("@daily", NS)),
    ("user-pvc-beats-namespace", pvc(annotations=_a("0 4 * * *")), _a("@daily"), _a("@weekly"), CONFIG, EffectiveSchedule("0 4 * * *", "pvc")),
    ("kustodian-pvc-is-recomputed", kustodian_pvc("@daily", NS), {}, _a("@weekly"), CONFIG, EffectiveSchedule("@weekly", SC)),
    ("user-edited-kustodian-pvc-is-user", pvc(annotations={SCHEDULE: "0 5 * * *", SOURCE: SC, APPLIED: "@weekly"}), {}, _a("@weekly"), CONFIG, EffectiveSchedule("0 5 * * *", "pvc")),
    ("marker-without-applied-is-user", pvc(annotations={SCHEDULE: "@daily", SOURCE: SC}), {}, _a("@weekly"), CONFIG, EffectiveSchedule("@daily", "pvc")),
    ("pvc-disabled", pvc(annotations=OFF), _a("@daily"), _a("@weekly"), CONFIG, Disabled("pvc")),
    ("pvc-disabled-beats-own-schedule", pvc(annotations=_a("@daily", **OFF)), {}, {}, CONFIG, Disabled("pvc")),
    ("namespace-disabled", pvc(), OFF, _a("@weekly"), CONFIG, Disabled(NS)),
    ("namespace-disabled-beats-user-pvc-schedule", pvc(annotations=_a("@daily")), OFF, {}, CONFIG, Disabled(NS)),
    ("storageclass-disabled-beats-user-pvc-schedule", pvc(annotations=_a("@daily")), {}, OFF, CONFIG, Disabled(SC)),
    ("namespace-disabled-kustodian-pvc", kustodian_pvc("@weekly", SC), OFF, _a("@weekly"), CONFIG, Disabled(NS)),
    ("storageclass-disabled", pvc(), {}, OFF, CONFIG, Disabled(SC)),
    ("storageclass-disabled-beats-namespace-schedule", pvc(), _a("@daily"), OFF, CONFIG, Disabled(SC)),
    ("kill-switch", pvc(), _a("@daily"), _a("@weekly"), KILLED, Disabled(CM_SOURCE)),
    ("kill-switch-user-pvc-still-runs", pvc(annotations=_a("@hourly")), {}, {}, KILLED, EffectiveSchedule("@hourly", "pvc")),
    ("kill-switch-below-pvc-disable", pvc(annotations=OFF), {}, {}, KILLED, Disabled("pvc")),
    ("enable-capital-False-is-not-false", pvc(), {ENABLE: "False"}, _a("@weekly"), CONFIG, EffectiveSchedule("@weekly", SC)),
    ("enable-true-falls-through", pvc(), {ENABLE: "true"}, _a("@weekly"), CONFIG, EffectiveSchedule("@weekly", SC)),
    ("invalid-storageclass-schedule-stops-there", pvc(), {}, _a("every day"), CONFIG, InvalidSchedule("every day", SC, 'it has 2 fields but a cron expression needs 5 (minute hour day-of-month month day-of-week); did you mean "@daily"?')),
    ("invalid-user-schedule", pvc(annotations=_a("0 0 * * 7")), {}, {}, CONFIG, InvalidSchedule("0 0 * * 7", "pvc", 'day-of-week field "7": 7 is above the maximum 6 (Sunday is 0: robfig/cron does not accept 7)')),
    ("no-storageclass-namespace-only", pvc(storage_class=""), _a("@daily"), None, CONFIG, EffectiveSchedule("@daily", NS)),
    ("no-storageclass-no-configmap-entry", pvc(storage_class=None), {}, None, CONFIG, None),
    ("storageclass-not-in-cache-configmap-by-name", pvc(), {}, None, CONFIG, EffectiveSchedule("@monthly", CM_SOURCE)),
    ("namespace-not-in-cache", pvc(), None, _a("@weekly"), CONFIG, EffectiveSchedule("@weekly", SC)),
    # storageclass mode: csi-addons reads the StorageClass and never the PVC's annotations, so Kustodian
    # propagates nothing there (reclaim plan models csi-addons' StorageClass-only controller instead)
    ("sc-mode-propagates-nothing", pvc(annotations=_a("@hourly")), _a("@daily"), _a("@weekly"), SC_MODE, None),
    ("sc-mode-storageclass-disabled", pvc(), {}, _a("@weekly", **OFF), SC_MODE, None),
    ("sc-mode-ignores-configmap", pvc(), {}, {}, SC_MODE, None),
]


@pytest.mark.parametrize(
    ("claim", "ns_annots", "sc_annots", "config", "expected"),
    [s[1:] for s in SCENARIOS],
    ids=[s[0] for s in SCENARIOS],
)
def test_precedence(
    claim: dict[str, Any],
    ns_annots: dict[str, str] | None,
    sc_annots: dict[str, str] | None,
    config: ReclaimConfig,
    expected: Effective | None,
) -> None:
    ns = namespace(annotations=ns_annots) if ns_annots is not None else None
    sc = storageclass(annotations=sc_annots) if sc_annots is not None and storage_class_name(claim) else None
    assert effective_schedule(claim, ns, sc, config) == expected


def test_mode_argument_overrides_config() -> None:
    ns, sc = namespace(annotations=_a("@daily")), storageclass(annotations=_a("@weekly"))
    assert effective_schedule(pvc(), ns, sc, CONFIG, mode="storageclass") is None
    assert effective_schedule(pvc(), ns, sc, SC_MODE, mode="pvc") == EffectiveSchedule("@daily", NS)


def test_config_defaults_to_no_configmap() -> None:
    assert effective_schedule(pvc(), None, None) is None


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        (pvc(storage_class="fast"), "fast"),
        (pvc(storage_class=None), ""),
        (pvc(storage_class="", annotations={"volume.beta.kubernetes.io/storage-class": "legacy"}), "legacy"),
        (pvc(storage_class="fast", annotations={"volume.beta.kubernetes.io/storage-class": "legacy"}), "legacy"),
    ],
    ids=["spec", "none", "beta-annotation", "beta-annotation-wins-like-kubernetes"],
)
def test_storage_class_name(claim: dict[str, Any], expected: str) -> None:
    assert storage_class_name(claim) == expected


@pytest.mark.parametrize(
    ("ns", "sc"),
    [(namespace("other"), None), (None, storageclass("other-sc"))],
    ids=["wrong-namespace", "wrong-storageclass"],
)
def test_mismatched_objects_are_a_caller_bug(ns: dict[str, Any] | None, sc: dict[str, Any] | None) -> None:
    with pytest.raises(ValueError, match="is not the PVC's"):
        effective_schedule(pvc(), ns, sc, CONFIG)


CAPABILITY = [
    # id, namespace annotations, storageclass annotations, capable, expected
    ("capable-driver-namespace-schedule", _a("@daily"), _a("@weekly"), True, EffectiveSchedule("@daily", NS)),
    ("driver-without-reclaimspace-skips-namespace", _a("@daily"), _a("@weekly"), False, EffectiveSchedule("@weekly", SC)),
    ("driver-without-reclaimspace-namespace-only", _a("@daily"), {}, False, EffectiveSchedule("@monthly", CM_SOURCE)),
    ("namespace-disable-applies-whatever-the-driver", OFF, _a("@weekly"), False, Disabled(NS)),
]


@pytest.mark.parametrize(("ns_annots", "sc_annots", "capable", "expected"), [c[1:] for c in CAPABILITY],
                         ids=[c[0] for c in CAPABILITY])
def test_namespace_schedule_needs_a_driver_advertising_reclaimspace(
    ns_annots: dict[str, str], sc_annots: dict[str, str], capable: bool, expected: Effective
) -> None:
    got = effective_schedule(pvc(), namespace(annotations=ns_annots), storageclass(annotations=sc_annots), CONFIG,
                             capable=capable)
    assert got == expected
