"""What the schedule validator reports: objects that carry reclaim policy csi-addons cannot run.

Level-based, like the deletion guard's findings: a StorageClass, Namespace or the central
ConfigMap whose reclaim-space annotations (or ``config.json``) do not validate is a finding for
as long as it stays so, whichever way it got there (stored in warn or audit mode, written while
the webhook was down, or before Kustodian).  csi-addons itself never says: it logs and falls back
to ``@weekly`` (a schedule) or leaves reclaiming on (``enable``).  Fixed or deleted, the finding
goes.  ``fail``, severity ``medium``: nothing is lost, but the policy the admin wrote is not the
one that runs.

PVCs are not covered: the webhook keeps no cache of PVCs (their number is the cluster's size),
and a finding must be kept current; their malformed schedules are counted
(``kustodian_admission_policy_outcomes_total``) and written as Events at admission.
"""

from __future__ import annotations

from kustodian.policy.modes import Mode
from kustodian.policy.objects import RawObject
from kustodian.policy.policy_reports import Finding, Subject
from kustodian.policy.reclaim.annotations import ENABLE, SCHEDULE, annotations_of
from kustodian.policy.reclaim.config import DEFAULT_CONFIG_MAP
from kustodian.policy.reclaim.validation import KIND_CONFIGMAP, validate_object

__all__ = ["CATEGORY", "POLICY", "carries_policy", "policy_finding"]

POLICY = "reclaim-validation"  # the feature label of kustodian_admission_policy_outcomes_total
CATEGORY = "Reclaim space"


def carries_policy(obj: RawObject) -> bool:
    """Whether ``obj`` has a reclaim-space annotation at all (the cheap test before validating)."""
    annots = annotations_of(obj)
    return SCHEDULE in annots or ENABLE in annots


def policy_finding(kind_key: str, obj: RawObject, *, mode: Mode, api_version: str = "",
                   config_map: tuple[str, str] = DEFAULT_CONFIG_MAP) -> Finding | None:
    """The finding about ``obj`` (of ``kind_key``) when its reclaim policy does not validate."""
    if kind_key != KIND_CONFIGMAP and not carries_policy(obj):
        return None
    errors = validate_object(kind_key, obj, config_map=config_map)
    if not errors:
        return None
    subject = Subject.of(obj, api_version)
    where = f"{subject.namespace}/{subject.name}" if subject.namespace else subject.name
    return Finding(subject, POLICY, kind_key, "fail", "medium", CATEGORY,
                   f'{kind_key.partition(".")[0]} "{where}": {"; ".join(errors)}',
                   properties={"mode": mode.value, "problems": str(len(errors))})
