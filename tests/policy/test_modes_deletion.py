"""policy.deletion.modes: a refusal's mode from the rules whose dependents block (table-driven)."""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.policy.deletion import DeleteDecision, RuleError, load_rules
from kustodian.policy.deletion.decision import ObjectRef
from kustodian.policy.deletion.modes import refusal_mode
from kustodian.policy.modes import Mode

SC = "StorageClass.storage.k8s.io"


def rule(dependent: str, mode: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"provider": SC, "dependent": dependent,
                           "match": {"type": "field-ref", "field": "spec.storageClassName", "scope": "cluster"}}
    if mode:
        out["mode"] = mode
    return out


def blocked_by(*kinds: str) -> DeleteDecision:
    return DeleteDecision(False, "in use", {k + "s": (ObjectRef(k, "ns", "x"),) for k in kinds})


@pytest.mark.parametrize(("pvc_mode", "pv_mode", "blocking", "default", "want"), [
    (None, None, ["PersistentVolumeClaim"], Mode.WARN, Mode.WARN),            # no rule mode: the guard's
    ("audit", None, ["PersistentVolumeClaim"], Mode.ENFORCE, Mode.AUDIT),     # the rule's own
    ("audit", "enforce", ["PersistentVolumeClaim"], Mode.WARN, Mode.AUDIT),   # only blocking rules count
    ("audit", "enforce", ["PersistentVolumeClaim", "PersistentVolume"], Mode.AUDIT, Mode.ENFORCE),  # strictest
    ("warn", None, ["PersistentVolumeClaim", "PersistentVolume"], Mode.AUDIT, Mode.WARN),
])
def test_refusal_mode(pvc_mode: str | None, pv_mode: str | None, blocking: list[str], default: Mode,
                      want: Mode) -> None:
    rules = load_rules([rule("PersistentVolumeClaim", pvc_mode), rule("PersistentVolume", pv_mode)])
    assert refusal_mode(blocked_by(*blocking), rules, [SC], default) is want


def test_a_rule_mode_is_checked() -> None:
    with pytest.raises(RuleError, match=r"rules\[0\].*mode"):
        load_rules([rule("PersistentVolumeClaim", "dryrun")])
