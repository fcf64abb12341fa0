"""``kustodian reclaim plan``: what every PVC will run, who decided it, and when it runs next.

The answer to "why does this volume trim at 03:17 on Sundays?" without reading four
objects and csi-addons' source.  Rows come from the same functions the webhook and
the controller use (``effective_schedule``, ``stagger``, ``desired_annotations``), so
the plan cannot disagree with what they do.

``schedule`` is the schedule once Kustodian has caught up (the staggered, per-PVC one
for propagated schedules); ``pending`` says the PVC does not carry it yet.  PVCs
being deleted are left out.  ``now`` is an argument: ``next_run`` is computed from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from kustodian.policy.objects import RawObject, is_deleting, name, namespace
from kustodian.policy.reclaim.annotations import PVC_SOURCE
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.precedence import (
    Disabled,
    Effective,
    EffectiveSchedule,
    InvalidSchedule,
    effective_schedule,
    storage_class_name,
)
from kustodian.policy.reclaim.propagation import desired_annotations, stagger_window_for
from kustodian.policy.reclaim.schedule import parse_schedule
from kustodian.policy.reclaim.stagger import stagger, stagger_key

__all__ = ["PlanRow", "PlanStatus", "plan"]

PlanStatus = Literal["scheduled", "disabled", "invalid", "unscheduled"]


@dataclass(frozen=True)
class PlanRow:
    namespace: str
    pvc: str
    schedule: str  # "" unless scheduled or invalid
    source: str  # "pvc", a marker value (storageclass/x, ...), or "" when nothing applies
    next_run: datetime | None  # UTC; None unless scheduled
    status: PlanStatus
    detail: str = ""
    pending: bool = False  # the propagation controller has yet to update this PVC


def plan(
    pvcs: Iterable[RawObject],
    namespaces: Iterable[RawObject],
    storageclasses: Iterable[RawObject],
    config: ReclaimConfig | None,
    now: datetime,
) -> list[PlanRow]:
    """One row per PVC (not being deleted), sorted by namespace then name."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    cfg = config if config is not None else ReclaimConfig()
    ns_by_name = {name(ns): ns for ns in namespaces}
    sc_by_name = {name(sc): sc for sc in storageclasses}
    window = stagger_window_for(cfg)
    rows: list[PlanRow] = []
    for pvc in pvcs:
        if is_deleting(pvc):
            continue
        effective = effective_schedule(
            pvc, ns_by_name.get(namespace(pvc)), sc_by_name.get(storage_class_name(pvc)), cfg
        )
        pending = desired_annotations(pvc, effective, stagger_window=window) is not None
        rows.append(_row(pvc, effective, window, now, pending))
    rows.sort(key=lambda r: (r.namespace, r.pvc))
    return rows


def _row(
    pvc: RawObject, effective: Effective | None, window: timedelta | None, now: datetime, pending: bool
) -> PlanRow:
    ns, nm = namespace(pvc), name(pvc)
    if isinstance(effective, EffectiveSchedule):
        schedule = effective.schedule
        if effective.source != PVC_SOURCE and window is not None:
            schedule = stagger(schedule, stagger_key(pvc), window)
        next_run = parse_schedule(schedule).next_run(now)
        return PlanRow(ns, nm, schedule, effective.source, next_run, "scheduled", pending=pending)
    if isinstance(effective, Disabled):
        return PlanRow(
            ns, nm, "", effective.source, None, "disabled", f"disabled by {effective.source}", pending
        )
    if isinstance(effective, InvalidSchedule):
        return PlanRow(
            ns, nm, effective.schedule, effective.source, None, "invalid", effective.reason, pending
        )
    return PlanRow(ns, nm, "", "", None, "unscheduled", "no source has a schedule", pending)
