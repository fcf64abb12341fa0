"""What the schedule validator reports: objects whose reclaim policy csi-addons cannot run, for as
long as they carry it (level-based, like the deletion guard's findings)."""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.policy.modes import Mode
from kustodian.policy.reclaim.annotations import ENABLE, SCHEDULE
from kustodian.policy.reclaim.config import DEFAULT_CONFIG_MAP
from kustodian.policy.reclaim.findings import policy_finding
from kustodian.policy.reclaim.validation import KIND_CONFIGMAP, KIND_NAMESPACE, KIND_STORAGECLASS

from .reclaim_builders import configmap, namespace, storageclass

CASES: list[tuple[str, str, dict[str, Any], str | None]] = [
    ("storageclass-weekly", KIND_STORAGECLASS, storageclass(annotations={SCHEDULE: "weekly"}), '"weekly"'),
    ("storageclass-valid", KIND_STORAGECLASS, storageclass(annotations={SCHEDULE: "@weekly"}), None),
    ("storageclass-none", KIND_STORAGECLASS, storageclass(), None),
    ("namespace-enable-no", KIND_NAMESPACE, namespace(annotations={ENABLE: "no"}), '"no" is not valid'),
    ("configmap-not-json", KIND_CONFIGMAP, configmap("{"), "not valid JSON"),
    ("configmap-valid", KIND_CONFIGMAP, configmap({}), None),
]


@pytest.mark.parametrize(("kind", "obj", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_policy_csi_addons_cannot_run_is_a_finding(kind: str, obj: dict[str, Any], said: str | None) -> None:
    got = policy_finding(kind, obj, mode=Mode.WARN, config_map=DEFAULT_CONFIG_MAP)
    if said is None:
        assert got is None
        return
    assert got is not None
    assert (got.policy, got.rule, got.result, got.severity) == ("reclaim-validation", kind, "fail", "medium")
    assert said in got.message and got.properties["mode"] == "warn"


def test_another_configmap_is_not_the_policy() -> None:
    other = configmap("{")
    other["metadata"]["name"] = "someone-elses"
    assert policy_finding(KIND_CONFIGMAP, other, mode=Mode.WARN, config_map=DEFAULT_CONFIG_MAP) is None
