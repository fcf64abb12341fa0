"""``kustodian reclaim plan``: what every PVC will run, who decided it, and when it runs next.

The answer to "why does this volume trim at 03:17 on Sundays?" without reading four
objects and csi-addons' source.  Rows come from the same functions the webhook and
the controller use (``effective_schedule``, ``stagger``, ``reconcile_annotations``), so
the plan cannot disagree with what they do, and then from ``upstream``, the model of
csi-addons' own controller, so it says what csi-addons will do with the result: the
PVC's annotations once both controllers are done (``annotations``), the schedule of its
ReclaimSpaceCronJob (``cronjob``; ``None`` for none: unbound, not CSI, disabled, no
schedule), and the next run with csi-addons' own per-cron-job staggering when the cron
job exists (its UID decides the offset; a cron job yet to be created is shown without,
and ``detail`` says so).  A cron job schedule robfig refuses (csi-addons' ``storageclass``
precedence copies the StorageClass value as it is) is shown as written, ``invalid``, with no
next run: csi-addons keeps such a cron job and it never fires.

``schedule`` is Kustodian's schedule once it has caught up (the staggered, per-PVC one
for propagated schedules); ``pending`` says the PVC does not carry it yet.  PVCs
being deleted are left out.  ``now`` is an argument: ``next_run`` is computed from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

from kustodian.policy.objects import RawObject, is_deleting, name, namespace, str_field
from kustodian.policy.reclaim.annotations import (
    APPLIED,
    CRONJOB,
    PVC_SOURCE,
    SCHEDULE,
    SOURCE,
    annotations_of,
)
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.mutation import apply_change
from kustodian.policy.reclaim.precedence import (
    Disabled,
    Effective,
    EffectiveSchedule,
    InvalidSchedule,
    effective_schedule,
    storage_class_name,
    writeback_values,
)
from kustodian.policy.reclaim.propagation import (
    AnnotationChange,
    desired_annotations,
    reconcile_annotations,
    stagger_window_for,
)
from kustodian.policy.reclaim.schedule import parse_schedule, schedule_error
from kustodian.policy.reclaim.stagger import stagger, stagger_key
from kustodian.policy.reclaim.upstream import (
    CsiAddonsConfig,
    UpstreamOutcome,
    driver_capable,
    pvc_driver,
    staggered_next,
    upstream_outcome,
)

__all__ = ["PREDICTED_KEYS", "PlanRow", "PlanStatus", "converge", "plan"]

PlanStatus = Literal["scheduled", "disabled", "invalid", "unscheduled"]


PREDICTED_KEYS = (SCHEDULE, SOURCE, APPLIED)


@dataclass(frozen=True)
class PlanRow:
    namespace: str
    pvc: str
    schedule: str  # "" unless scheduled or invalid
    source: str  # "pvc", a marker value (storageclass/x, ...), or "" when nothing applies
    next_run: datetime | None  # UTC; None unless scheduled (csi-addons' staggered run when known)
    status: PlanStatus
    detail: str = ""
    pending: bool = False  # the propagation controller has yet to update this PVC
    # What csi-addons and Kustodian leave once both are done (compared by the tests, not by ==):
    annotations: Mapping[str, str | None] = field(default_factory=dict, compare=False)  # PREDICTED_KEYS
    cronjob: str | None = field(default=None, compare=False)  # the ReclaimSpaceCronJob's schedule
    cronjob_name_suffix: str = field(default="", compare=False)  # "reclaimspace" in storageclass mode


def plan(
    pvcs: Iterable[RawObject],
    namespaces: Iterable[RawObject],
    storageclasses: Iterable[RawObject],
    config: ReclaimConfig | None,
    now: datetime,
    *,
    csi_addons: CsiAddonsConfig | None = None,
    pvs: Iterable[RawObject] = (),
    csi_addons_nodes: Iterable[RawObject] = (),
    cronjobs: Iterable[RawObject] | None = None,
) -> list[PlanRow]:
    """One row per PVC (not being deleted), sorted by namespace then name.

    ``csi_addons``: csi-addons' configuration (its precedence wins over ``config``'s);
    ``pvs``/``csi_addons_nodes``/``cronjobs``: PersistentVolumes, CSIAddonsNodes and
    ReclaimSpaceCronJobs, for the driver check and upstream's staggering (with ``cronjobs``
    given, a cron job csi-addons has no reason to revisit yet is reported as it is).
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    cfg = config if config is not None else ReclaimConfig()
    if csi_addons is not None:
        cfg = replace(cfg, precedence=csi_addons.precedence)
    upstream_cfg = csi_addons if csi_addons is not None else CsiAddonsConfig(precedence=cfg.precedence)
    ns_by_name = {name(ns): ns for ns in namespaces}
    sc_by_name = {name(sc): sc for sc in storageclasses}
    pv_by_name = {name(pv): pv for pv in pvs}
    nodes = list(csi_addons_nodes)
    uid_by_pvc: dict[tuple[str, str], str] = {}
    job_by_pvc: dict[tuple[str, str], str] = {}
    for job in cronjobs or ():
        target = str_field(job, "spec", "jobTemplate", "spec", "target", "persistentVolumeClaim")
        if target:
            uid_by_pvc[(namespace(job), target)] = str_field(job, "metadata", "uid")
            job_by_pvc[(namespace(job), target)] = str_field(job, "spec", "schedule")
    window = stagger_window_for(cfg)
    rows: list[PlanRow] = []
    for pvc in pvcs:
        if is_deleting(pvc):
            continue
        ns_obj = ns_by_name.get(namespace(pvc))
        sc_obj = sc_by_name.get(storage_class_name(pvc))
        pv = pv_by_name.get(str_field(pvc, "spec", "volumeName"))
        capable = driver_capable(pvc_driver(pv, sc_obj), nodes)
        effective = effective_schedule(pvc, ns_obj, sc_obj, cfg, capable=capable)
        writeback = writeback_values(pvc, ns_obj, sc_obj, cfg, capable=capable)
        pending = desired_annotations(pvc, effective, stagger_window=window, writeback=writeback) is not None
        final, outcome = converge(pvc, pv, ns_obj, sc_obj, cfg=cfg, upstream_cfg=upstream_cfg,
                                  capable=capable)
        key = (namespace(pvc), name(pvc))
        first = reconcile_annotations(pvc, ns_obj, sc_obj, cfg, capable=capable)
        if cronjobs is not None and (first is None or SCHEDULE not in first.annotations):
            # csi-addons does not watch Namespaces: a Namespace change alone reaches a PVC only at its
            # next reconcile (a change to the PVC or its StorageClass, a restart, the periodic resync)
            # ... unless a PVC event is still on its way to csi-addons: its cron job then disagrees with
            # the PVC's own schedule (Kustodian, say, has just removed it), and it reconciles anyway.
            current = job_by_pvc.get(key)
            seen = annotations_of(pvc).get(SCHEDULE) == current
            without_ns = upstream_outcome(pvc, pv, None, sc_obj, config=upstream_cfg, capable=capable)
            if seen and current != outcome.cronjob_schedule and current == without_ns.cronjob_schedule:
                outcome = replace(outcome, cronjob_schedule=current,
                                  reason=f"{outcome.reason}; csi-addons applies it at its next reconcile "
                                         "of this PVC (it does not watch Namespaces)")
        row = _row(pvc, effective, window, now, pending)
        predicted = {k: annotations_of(final).get(k) for k in PREDICTED_KEYS}
        next_run, detail = row.next_run, row.detail
        refused = schedule_error(outcome.cronjob_schedule) if outcome.cronjob_schedule is not None else None
        if refused is not None:
            # csi-addons runs a StorageClass value as written (storageclass precedence): its cron job
            # exists with that schedule and never fires.  One such class must not stop the plan.
            never = f"csi-addons runs it as written and its ReclaimSpaceCronJob never fires: {refused}"
            row = replace(row, schedule=str(outcome.cronjob_schedule), source=outcome.reason, next_run=None,
                          status="invalid", detail=never)
            rows.append(replace(row, annotations=predicted, cronjob=outcome.cronjob_schedule,
                                cronjob_name_suffix=outcome.cronjob_name_suffix))
            continue
        if outcome.cronjob_schedule is not None:
            next_run = _upstream_next(outcome.cronjob_schedule, uid_by_pvc.get((namespace(pvc), name(pvc))),
                                      upstream_cfg.stagger_hours, now)
            if (namespace(pvc), name(pvc)) not in uid_by_pvc and upstream_cfg.stagger_hours:
                detail = (detail + "; " if detail else "") + "csi-addons staggers it once the cron job exists"
        if row.status == "unscheduled" and outcome.cronjob_schedule is not None:
            # csi-addons schedules it on its own (storageclass precedence): say so, with its source
            row = replace(row, schedule=outcome.cronjob_schedule, source=outcome.reason, status="scheduled",
                          detail="scheduled by csi-addons itself")
            detail = row.detail + ("; " + detail if detail else "")
        rows.append(replace(row, next_run=next_run, detail=detail, annotations=predicted,
                            cronjob=outcome.cronjob_schedule,
                            cronjob_name_suffix=outcome.cronjob_name_suffix))
    rows.sort(key=lambda r: (r.namespace, r.pvc))
    return rows


def converge(
    pvc: RawObject,
    pv: RawObject | None,
    ns_obj: RawObject | None,
    sc_obj: RawObject | None,
    *,
    cfg: ReclaimConfig,
    upstream_cfg: CsiAddonsConfig,
    capable: bool,
) -> tuple[RawObject, UpstreamOutcome]:
    """Play Kustodian and csi-addons against each other on ``pvc`` until neither changes it."""
    current: RawObject = pvc
    outcome = upstream_outcome(current, pv, ns_obj, sc_obj, config=upstream_cfg, capable=capable)
    for _ in range(4):
        change = reconcile_annotations(current, ns_obj, sc_obj, cfg, capable=capable)
        if change is not None:
            current = apply_change(current, change)
        outcome = upstream_outcome(current, pv, ns_obj, sc_obj, config=upstream_cfg, capable=capable)
        written: dict[str, str | None] = {}
        if outcome.pvc_schedule is not None:
            annots = annotations_of(current)
            if annots.get(SCHEDULE) != outcome.pvc_schedule:
                written[SCHEDULE] = outcome.pvc_schedule
            if CRONJOB not in annots:
                written[CRONJOB] = "<pvc>-<unix time>"
        if written:
            current = apply_change(current, AnnotationChange(written, "csi-addons"))
        elif change is None:
            break
    return current, outcome


def _upstream_next(schedule: str, uid: str | None, stagger_hours: int, now: datetime) -> datetime | None:
    parsed = parse_schedule(schedule)
    first = parsed.next_run(now)
    if first is None or not uid:
        return first
    second = parsed.next_run(first)
    return first if second is None else staggered_next(uid, first, second, stagger_hours)


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
