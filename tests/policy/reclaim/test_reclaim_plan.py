"""``kustodian reclaim plan`` rows: one per PVC, the schedule, who decided it, the next run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
