"""The reclaim validator refuses a person's bad schedule and nothing else (csi-addons writes these too)."""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.webhook.features.reclaim import ReclaimPolicyWebhook
from kustodian.webhook.review import AdmissionRequest

SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
ENABLE = "reclaimspace.csiaddons.openshift.io/enable"
CSI_ADDONS = "system:serviceaccount:csi-addons-system:csi-addons-controller-manager"


def pvc(**annotations: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "app", "annotations": annotations}}


def request(op: str, new: dict[str, Any], old: dict[str, Any] | None, user: str = "alice") -> AdmissionRequest:
    return AdmissionRequest.model_validate({
        "uid": "u1", "kind": {"group": "", "version": "v1", "kind": "PersistentVolumeClaim"},
        "resource": {"group": "", "version": "v1", "resource": "persistentvolumeclaims"},
        "name": "data", "namespace": "app", "operation": op, "userInfo": {"username": user},
        "object": new, "oldObject": old})


CASES = [
    # id, operation, new, old, user, allowed, message/warning fragment
    ("person-sets-bad-schedule", "UPDATE", pvc(**{SCHEDULE: "daily"}), pvc(), "alice", False, 'did you mean "@daily"'),
    ("person-creates-with-bad-schedule", "CREATE", pvc(**{SCHEDULE: "0 0 * * 7"}), None, "alice", False, "Sunday is 0"),
    ("csi-addons-writes-anything", "UPDATE", pvc(**{SCHEDULE: "daily"}), pvc(**{SCHEDULE: "x"}), CSI_ADDONS, True, ""),
    ("unchanged-bad-value-other-update", "UPDATE", pvc(**{SCHEDULE: "daily", "x": "1"}), pvc(**{SCHEDULE: "daily"}),
     "alice", True, ""),
    ("enable-changed-bad-schedule-untouched", "UPDATE", pvc(**{SCHEDULE: "daily", ENABLE: "false"}),
     pvc(**{SCHEDULE: "daily"}), "alice", True, ""),
    ("empty-is-weekly-upstream", "UPDATE", pvc(**{SCHEDULE: ""}), pvc(), "alice", True, ""),
    ("robfig-accepts-odd-value-warning", "UPDATE", pvc(**{SCHEDULE: "0 0 30 2 *"}), pvc(), "alice", True, "never fires"),
    ("python-only-separator-refused", "UPDATE", pvc(**{SCHEDULE: "0\x1c3 * * *"}), pvc(), "alice", False,
     "not a valid schedule"),
]


@pytest.mark.parametrize(("op", "new", "old", "user", "ok", "fragment"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_validation(op: str, new: dict[str, Any], old: dict[str, Any] | None, user: str, ok: bool,
                    fragment: str) -> None:
    hook = ReclaimPolicyWebhook("kustodian", "kustodian-reclaim-config")
    answer = hook.on_change(request(op, new, old, user))
    assert answer.allowed is ok
    text = " ".join([answer.message or "", *answer.warnings])
    assert fragment in text
