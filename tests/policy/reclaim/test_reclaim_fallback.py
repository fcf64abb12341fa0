"""csi-addons' ``@weekly`` fallback for an invalid source is csi-addons', not a person's (issue 34).

csi-addons writes ``@weekly`` on a PVC whose StorageClass (or Namespace) schedule robfig refuses,
and reads the PVC's own value first from then on.  Kustodian records that fallback while the
source is invalid and replaces it with the source's schedule once the admin fixes it.
"""

from __future__ import annotations

from typing import Any

from kustodian.policy.reclaim.annotations import (
    APPLIED,
    CRONJOB,
    FALLBACK,
    PREVIOUS,
    SCHEDULE,
    SOURCE,
    ScheduleOwner,
    schedule_owner,
)
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.mutation import apply_change
from kustodian.policy.reclaim.propagation import reconcile_annotations

from .reclaim_builders import namespace, pvc, storageclass

SC = "storageclass/rook-ceph-block"
NO_CONFIG = ReclaimConfig()


def sc(schedule: str) -> dict[str, Any]:
    return storageclass(annotations={SCHEDULE: schedule})


def converge(claim: dict[str, Any], ns: dict[str, Any], storage: dict[str, Any]) -> dict[str, Any]:
    change = reconcile_annotations(claim, ns, storage, NO_CONFIG)
    assert change is not None and change.reason
    updated = apply_change(claim, change)
    assert reconcile_annotations(updated, namespace(), storage, NO_CONFIG) is None  # level-based
    return updated


def csi_addons_fallback() -> dict[str, Any]:
    """A PVC created while its StorageClass said "daily": csi-addons wrote its @weekly."""
    return pvc(annotations={SCHEDULE: "@weekly", CRONJOB: "data-1700000000"})


def test_the_fallback_is_recorded_while_the_source_is_invalid() -> None:
    change = reconcile_annotations(csi_addons_fallback(), namespace(), sc("daily"), NO_CONFIG)
    assert change is not None
    assert dict(change.annotations) == {FALLBACK: "@weekly"}
    assert "daily" in change.reason and SC in change.reason
    converge(csi_addons_fallback(), namespace(), sc("daily"))


def test_the_fixed_storageclass_schedule_replaces_the_fallback() -> None:
    recorded = converge(csi_addons_fallback(), namespace(), sc("daily"))
    assert schedule_owner(recorded, ()) is ScheduleOwner.CSI_ADDONS  # not the user's, whatever the sources
    change = reconcile_annotations(recorded, namespace(), sc("@daily"), NO_CONFIG)
    assert change is not None
    assert dict(change.annotations) == {SCHEDULE: "@daily", SOURCE: SC, APPLIED: "@daily",
                                        PREVIOUS: "@weekly", FALLBACK: None}
    fixed = converge(recorded, namespace(), sc("@daily"))
    # csi-addons writing its old @weekly back from a stale cache is re-asserted, not handed over
    late = apply_change(fixed, change.__class__({SCHEDULE: "@weekly"}, "csi-addons"))
    again = reconcile_annotations(late, namespace(), sc("@daily"), NO_CONFIG)
    assert again is not None and dict(again.annotations) == {SCHEDULE: "@daily"}


def test_a_namespace_fallback_is_recorded_too() -> None:
    change = reconcile_annotations(csi_addons_fallback(), namespace(annotations={SCHEDULE: "weekly"}), sc("@daily"),
                                   NO_CONFIG)
    assert change is not None and dict(change.annotations) == {FALLBACK: "@weekly"}


def test_a_person_editing_the_fallback_owns_it_and_the_record_goes() -> None:
    recorded = converge(csi_addons_fallback(), namespace(), sc("daily"))
    edited = apply_change(recorded, change_of({SCHEDULE: "0 5 * * *"}))
    change = reconcile_annotations(edited, namespace(), sc("@daily"), NO_CONFIG)
    assert change is not None and dict(change.annotations) == {FALLBACK: None}
    assert reconcile_annotations(apply_change(edited, change), namespace(), sc("@daily"), NO_CONFIG) is None


def test_a_person_removing_the_fallback_drops_the_record() -> None:
    recorded = converge(csi_addons_fallback(), namespace(), sc("daily"))
    removed = apply_change(recorded, change_of({SCHEDULE: None}))
    change = reconcile_annotations(removed, namespace(), sc("daily"), NO_CONFIG)
    assert change is not None and dict(change.annotations) == {FALLBACK: None}


def test_an_unrecorded_fallback_after_the_fix_stays_a_persons() -> None:
    # Kustodian never saw it while the source was invalid: the safe mistake (annotations' docstring)
    assert reconcile_annotations(csi_addons_fallback(), namespace(), sc("@daily"), NO_CONFIG) is None


def test_a_user_weekly_without_csi_addons_cronjob_is_never_recorded() -> None:
    assert reconcile_annotations(pvc(annotations={SCHEDULE: "@weekly"}), namespace(), sc("daily"), NO_CONFIG) is None


def change_of(annotations: dict[str, str | None]) -> Any:
    from kustodian.policy.reclaim.propagation import AnnotationChange

    return AnnotationChange(annotations, "a person")


def test_the_fallback_goes_when_its_source_loses_its_schedule() -> None:
    # nobody asks for @weekly any more; csi-addons then finds no schedule and deletes its cron job
    recorded = converge(csi_addons_fallback(), namespace(), sc("daily"))
    change = reconcile_annotations(recorded, namespace(), storageclass(), NO_CONFIG)
    assert change is not None
    assert dict(change.annotations) == {SCHEDULE: None, PREVIOUS: "@weekly", FALLBACK: None}
    removed = converge(recorded, namespace(), storageclass())
    # csi-addons writing it back from a stale cache is removed again, not taken for a person's
    late = apply_change(removed, change_of({SCHEDULE: "@weekly"}))
    again = reconcile_annotations(late, namespace(), storageclass(), NO_CONFIG)
    assert again is not None and dict(again.annotations) == {SCHEDULE: None}


def test_a_disabled_source_leaves_the_fallback_to_csi_addons() -> None:
    # csi-addons deletes its cron job on enable "false" and runs @weekly again when it is lifted
    recorded = converge(csi_addons_fallback(), namespace(), sc("daily"))
    disabled = storageclass(annotations={SCHEDULE: "daily", "reclaimspace.csiaddons.openshift.io/enable": "false"})
    assert reconcile_annotations(recorded, namespace(), disabled, NO_CONFIG) is None
