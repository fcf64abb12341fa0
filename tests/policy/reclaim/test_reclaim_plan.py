"""``kustodian reclaim plan`` rows: one per PVC, the schedule, who decided it, the next run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kustodian.policy.reclaim.annotations import ENABLE, SCHEDULE
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.plan import PlanRow, plan

from .reclaim_builders import CM_SOURCE, kustodian_pvc, namespace, pvc, storageclass

NOW = datetime(2024, 7, 11, 7, 25, 25, tzinfo=UTC)
SC = "storageclass/rook-ceph-block"


def test_plan_rows() -> None:
    pvcs = [
        pvc("z-user", annotations={SCHEDULE: "0 4 * * *"}),
        pvc("a-from-sc"),
        kustodian_pvc("@daily", SC, name="b-in-sync"),
        pvc("c-disabled", annotations={ENABLE: "false"}),
        pvc("d-invalid", annotations={SCHEDULE: "every day"}),
        pvc("e-no-class", storage_class=None),
        pvc("f-from-cm", namespace="other", storage_class="cephfs"),
        pvc("g-deleting", deleting=True),
        pvc("h-ns-off", namespace="quiet"),
    ]
    namespaces = [namespace("test"), namespace("other"), namespace("quiet", annotations={ENABLE: "false"})]
    storageclasses = [storageclass(annotations={SCHEDULE: "@daily"}), storageclass("cephfs")]
    config = ReclaimConfig(source=CM_SOURCE, storageclass_schedules={"cephfs": "@every 6h"})

    rows = plan(pvcs, namespaces, storageclasses, config, NOW)

    midnight = datetime(2024, 7, 12, tzinfo=UTC)
    assert rows == [
        PlanRow("other", "f-from-cm", "@every 6h", CM_SOURCE, NOW + timedelta(hours=6), "scheduled", pending=True),
        PlanRow("quiet", "h-ns-off", "", "namespace/quiet", None, "disabled", "disabled by namespace/quiet"),
        PlanRow("test", "a-from-sc", "@daily", SC, midnight, "scheduled", pending=True),
        PlanRow("test", "b-in-sync", "@daily", SC, midnight, "scheduled"),
        PlanRow("test", "c-disabled", "", "pvc", None, "disabled", "disabled by pvc"),
        PlanRow(
            "test",
            "d-invalid",
            "every day",
            "pvc",
            None,
            "invalid",
            'it has 2 fields but a cron expression needs 5 (minute hour day-of-month month day-of-week); '
            'did you mean "@daily"?',
        ),
        PlanRow("test", "e-no-class", "", "", None, "unscheduled", "no source has a schedule"),
        PlanRow("test", "z-user", "0 4 * * *", "pvc", datetime(2024, 7, 12, 4, 0, tzinfo=UTC), "scheduled"),
    ]


def test_plan_shows_staggered_schedule() -> None:
    config = ReclaimConfig(stagger_window=timedelta(hours=6))
    [row] = plan([pvc()], [namespace()], [storageclass(annotations={SCHEDULE: "@daily"})], config, NOW)
    assert (row.schedule, row.next_run, row.pending) == ("17 4 * * *", datetime(2024, 7, 12, 4, 17, tzinfo=UTC), True)


def test_plan_without_configmap() -> None:
    [row] = plan([pvc()], [], [], None, NOW)
    assert row.status == "unscheduled"


def test_plan_needs_aware_now() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        plan([], [], [], None, datetime(2024, 7, 11))


# -- what csi-addons will do --------------------------------------------------------------------

from kustodian.policy.reclaim.annotations import APPLIED, CRONJOB, SOURCE  # noqa: E402
from kustodian.policy.reclaim.upstream import CsiAddonsConfig, staggered_next  # noqa: E402

DRIVER = "rbd.csi.example.com"


def bound_pvc(name: str, **kwargs: Any) -> dict[str, Any]:
    claim = pvc(name, **kwargs)
    claim["spec"]["volumeName"] = f"pv-{name}"
    claim["status"] = {"phase": "Bound"}
    return claim


def pv(name: str) -> dict[str, object]:
    return {"metadata": {"name": f"pv-{name}"}, "spec": {"csi": {"driver": DRIVER, "volumeHandle": name}}}


def cronjob(target: str, schedule: str, uid: str) -> dict[str, object]:
    return {"metadata": {"name": f"{target}-1", "namespace": "test", "uid": uid},
            "spec": {"schedule": schedule, "jobTemplate": {"spec": {"target": {"persistentVolumeClaim": target}}}}}


def test_plan_predicts_annotations_cron_job_and_upstream_stagger() -> None:
    pvcs = [bound_pvc("a"), bound_pvc("b", annotations={SCHEDULE: "@daily", CRONJOB: "b-1"}), pvc("unbound")]
    rows = plan(pvcs, [namespace()], [storageclass(annotations={SCHEDULE: "@daily"})], None, NOW,
                csi_addons=CsiAddonsConfig(stagger_hours=2), pvs=[pv("a"), pv("b")],
                cronjobs=[cronjob("b", "@daily", "0b6e3e5c-uid")])
    by_name = {r.pvc: r for r in rows}
    midnight = datetime(2024, 7, 12, tzinfo=UTC)
    # a: Kustodian writes the StorageClass schedule, csi-addons creates its cron job (no UID yet: unstaggered)
    assert dict(by_name["a"].annotations) == {SCHEDULE: "@daily", SOURCE: SC, APPLIED: "@daily"}
    assert (by_name["a"].cronjob, by_name["a"].next_run) == ("@daily", midnight)
    assert "staggers it once the cron job exists" in by_name["a"].detail
    # b: csi-addons' own copy is taken over; its cron job's UID staggers the run within 2 h
    assert dict(by_name["b"].annotations) == {SCHEDULE: "@daily", SOURCE: SC, APPLIED: "@daily"}
    assert by_name["b"].next_run == staggered_next("0b6e3e5c-uid", midnight, midnight + timedelta(days=1), 2)
    assert midnight <= by_name["b"].next_run < midnight + timedelta(hours=2)
    # not bound: csi-addons waits, no cron job
    assert by_name["unbound"].cronjob is None


def test_plan_namespace_disable_is_not_seen_by_csi_addons_for_a_users_pvc() -> None:
    user = bound_pvc("u", annotations={SCHEDULE: "0 5 * * *", CRONJOB: "u-1"})
    quiet = namespace(annotations={ENABLE: "false"})
    [row] = plan([user], [quiet], [storageclass()], None, NOW, pvs=[pv("u")],
                 cronjobs=[cronjob("u", "0 5 * * *", "uid-u")])
    assert row.cronjob == "0 5 * * *"  # csi-addons does not watch Namespaces: kept until its next reconcile
    [row] = plan([user], [quiet], [storageclass()], None, NOW, pvs=[pv("u")], cronjobs=[])
    assert row.cronjob is None  # already gone: nothing to keep


def test_plan_storageclass_precedence_follows_csi_addons_alone() -> None:
    [row] = plan([bound_pvc("a", annotations={SCHEDULE: "@hourly"})], [namespace()],
                 [storageclass(annotations={SCHEDULE: "@weekly"})], None, NOW,
                 csi_addons=CsiAddonsConfig(precedence="storageclass", stagger_hours=0), pvs=[pv("a")], cronjobs=[])
    assert (row.cronjob, row.cronjob_name_suffix, dict(row.annotations)) == (
        "@weekly", "reclaimspace", {SCHEDULE: "@hourly", SOURCE: None, APPLIED: None})


def test_plan_shows_an_invalid_storageclass_schedule_as_csi_addons_runs_it() -> None:
    # issue 33: storageclass precedence runs the StorageClass value raw; one such class used to abort the plan
    rows = plan([bound_pvc("a"), bound_pvc("b", storage_class="cephfs")], [namespace()],
                [storageclass(annotations={SCHEDULE: "daily"}), storageclass("cephfs", annotations={SCHEDULE: "@daily"})],
                None, NOW, csi_addons=CsiAddonsConfig(precedence="storageclass"), pvs=[pv("a"), pv("b")],
                cronjobs=[cronjob("a", "daily", "uid-a")])
    by_name = {r.pvc: r for r in rows}
    bad = by_name["a"]
    assert (bad.schedule, bad.source, bad.status, bad.next_run, bad.cronjob) == (
        "daily", SC, "invalid", None, "daily")
    assert bad.detail.startswith("csi-addons runs it as written and its ReclaimSpaceCronJob never fires: ")
    assert 'did you mean "@daily"?' in bad.detail
    assert dict(bad.annotations) == {SCHEDULE: None, SOURCE: None, APPLIED: None}  # nothing written on the PVC
    good = by_name["b"]
    assert (good.status, good.cronjob, good.next_run) == ("scheduled", "@daily", datetime(2024, 7, 12, tzinfo=UTC))


def test_plan_predicts_the_fixed_storageclass_replacing_csi_addons_fallback() -> None:
    # issue 34: csi-addons' @weekly for an invalid class, recorded by Kustodian, follows the class once fixed
    from kustodian.policy.reclaim.annotations import FALLBACK, PREVIOUS

    claim = bound_pvc("a", annotations={SCHEDULE: "@weekly", CRONJOB: "a-1", FALLBACK: "@weekly"})
    [row] = plan([claim], [namespace()], [storageclass(annotations={SCHEDULE: "@daily"})], None, NOW,
                 pvs=[pv("a")], cronjobs=[cronjob("a", "@weekly", "uid-a")])
    assert (row.schedule, row.source, row.status, row.pending, row.cronjob) == ("@daily", SC, "scheduled", True,
                                                                                "@daily")
    assert dict(row.annotations) == {SCHEDULE: "@daily", SOURCE: SC, APPLIED: "@daily"}
    assert PREVIOUS not in row.annotations
