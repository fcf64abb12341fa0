"""What the propagation controller should write on a PVC, as a minimal annotation change.

The csi-addons design doc's open problem: when a StorageClass (or Namespace, or the
ConfigMap) changes, which PVCs may be updated?  "Those whose schedule the controller
added", which needs a record of who added it.  Kustodian keeps two annotations for
that (``reclaimspace.kustodian.io/source`` and ``reclaimspace.kustodian.io/applied``,
see ``annotations``) and decides ownership from the PVC alone, so this function is
level-based: the same PVC and sources always give the same answer, whatever event
woke the controller up.

The seed's scenarios, as this module implements them:

* user adds a schedule to a PVC: it is the user's (no marker); nothing to do.
* user adds/changes a schedule on a StorageClass/Namespace/ConfigMap: every PVC that
  has no schedule, or whose schedule is Kustodian's, gets the new one (schedule,
  source and applied written together); user-owned PVCs are never touched.
* user edits a Kustodian-written schedule on a PVC: ``applied`` no longer matches,
  so the user owns it now; Kustodian removes its ``source``/``applied`` marks and
  keeps the user's value.
* user removes a schedule from a StorageClass: PVCs holding Kustodian's copy get
  the next source's schedule (say, the ConfigMap's) or lose schedule and marks.
* user removes Kustodian's schedule from a PVC: the stale marks are dropped and, if a
  source still applies, the schedule is written again.  Deleting is not an opt-out
  (csi-addons' own controller would copy the StorageClass schedule back just the
  same); ``reclaimspace.csiaddons.openshift.io/enable: "false"`` on the PVC is.

PVCs being deleted are left alone.  A source whose schedule does not parse changes
nothing (see ``precedence``): we neither propagate it nor strip the last good one.  The
one thing written then is the record of csi-addons' ``@weekly`` fallback on a PVC that
got it (``annotations.FALLBACK``), so that the source's schedule replaces it once fixed.

The change carries the ``resourceVersion`` it was computed from, and
:meth:`AnnotationChange.merge_patch` includes it: if the user edits the PVC between
our read and our patch, the API server answers 409 instead of letting us overwrite
the edit, and the retry sees the user's schedule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from kustodian.policy.objects import RawObject, is_deleting, str_field
from kustodian.policy.reclaim.annotations import (
    APPLIED,
    FALLBACK,
    PREVIOUS,
    PVC_SOURCE,
    SCHEDULE,
    SOURCE,
    ScheduleOwner,
    annotations_of,
    schedule_owner,
)
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.precedence import (
    Disabled,
    Effective,
    EffectiveSchedule,
    InvalidSchedule,
    effective_schedule,
    storage_class_name,
    writeback_values,
)
from kustodian.policy.reclaim.stagger import stagger, stagger_key
from kustodian.policy.reclaim.upstream import DEFAULT_SCHEDULE
from kustodian.policy.store import Indexers

__all__ = [
    "INDEXERS",
    "AnnotationChange",
    "desired_annotations",
    "merge_changes",
    "reconcile_annotations",
    "stagger_window_for",
]

# The controller re-evaluates a StorageClass's PVCs when it changes; index them by class.
INDEXERS: Indexers = {
    "PersistentVolumeClaim": {"storageclass": lambda pvc: [sc] if (sc := storage_class_name(pvc)) else []},
}


@dataclass(frozen=True)
class AnnotationChange:
    """Annotations to set (a string) or remove (``None``), and why, for the log line/event."""

    annotations: Mapping[str, str | None] = field(hash=False)
    reason: str
    resource_version: str = ""

    def merge_patch(self) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386); ``None`` removes a key."""
        metadata: dict[str, Any] = {"annotations": dict(self.annotations)}
        if self.resource_version:
            metadata["resourceVersion"] = self.resource_version
        return {"metadata": metadata}


def merge_changes(*changes: AnnotationChange | None) -> AnnotationChange | None:
    """One patch for several decisions on the same PVC (reclaim space and key rotation)."""
    present = [c for c in changes if c is not None]
    if not present:
        return None
    merged: dict[str, str | None] = {}
    for change in present:
        merged.update(change.annotations)
    return AnnotationChange(MappingProxyType(merged), "; ".join(c.reason for c in present),
                            present[0].resource_version)


def stagger_window_for(config: ReclaimConfig) -> timedelta | None:
    """Staggering only means something when csi-addons reads the PVC (``pvc`` precedence)."""
    return config.stagger_window if config.precedence == "pvc" else None


def reconcile_annotations(
    pvc: RawObject,
    namespace_obj: RawObject | None,
    storageclass_obj: RawObject | None,
    config: ReclaimConfig | None = None,
    *,
    capable: bool = True,
) -> AnnotationChange | None:
    """The whole decision for one PVC: effective schedule, staggering, ownership.

    ``capable``: the PVC's driver advertises ReclaimSpace (``upstream.driver_capable``).
    """
    cfg = config if config is not None else ReclaimConfig()
    effective = effective_schedule(pvc, namespace_obj, storageclass_obj, cfg, capable=capable)
    writeback = writeback_values(pvc, namespace_obj, storageclass_obj, cfg, capable=capable)
    return desired_annotations(pvc, effective, stagger_window=stagger_window_for(cfg), writeback=writeback)


def desired_annotations(
    pvc: RawObject,
    effective: Effective | None,
    *,
    stagger_window: timedelta | None = None,
    writeback: frozenset[str] = frozenset(),
) -> AnnotationChange | None:
    """The minimal change bringing ``pvc`` in line with ``effective``; ``None`` when there is none.

    ``writeback``: values csi-addons may have written (``precedence.writeback_values``).
    """
    if is_deleting(pvc):
        return None
    annots = annotations_of(pvc)
    owner = schedule_owner(pvc, writeback)
    change = _schedule_change(pvc, annots, owner, effective, stagger_window, writeback=writeback)
    return _with_fallback_record(pvc, annots, owner, effective, change)


def _with_fallback_record(
    pvc: RawObject,
    annots: Mapping[str, Any],
    owner: ScheduleOwner,
    effective: Effective | None,
    change: AnnotationChange | None,
) -> AnnotationChange | None:
    """``change`` plus the bookkeeping of csi-addons' fallback (``annotations.FALLBACK``).

    Recorded while csi-addons' copy is its ``@weekly`` for an invalid source; dropped as
    soon as it no longer describes the PVC's schedule (taken over, edited, removed; Kustodian
    removes the fallback itself once its source has no schedule at all), and
    when taken over the fallback is kept as ``previous`` so a late write-back of it by
    csi-addons is recognised as such.
    """
    value = annots.get(SCHEDULE)
    recorded = annots.get(FALLBACK)
    extra: dict[str, str | None] = {}
    reason = ""
    if (owner is ScheduleOwner.CSI_ADDONS and isinstance(effective, InvalidSchedule)
            and value == DEFAULT_SCHEDULE and recorded != value):
        extra[FALLBACK] = value
        reason = (f'"{value}" is csi-addons\' fallback for the invalid "{effective.schedule}" of '
                  f"{effective.source}: replaced once that is valid")
    elif recorded is not None:
        written = change is not None and SCHEDULE in change.annotations  # replaced or removed
        if written or owner is not ScheduleOwner.CSI_ADDONS or value != recorded:
            extra[FALLBACK] = None
            if written and change is not None and PREVIOUS not in change.annotations \
                    and isinstance(recorded, str):
                extra[PREVIOUS] = recorded
            reason = "csi-addons' fallback is no longer the PVC's schedule"
    if not extra:
        return change
    if change is None:
        rv = str_field(pvc, "metadata", "resourceVersion")
        return AnnotationChange(MappingProxyType(extra), reason, rv)
    return AnnotationChange(MappingProxyType({**change.annotations, **extra}), change.reason,
                            change.resource_version)


def _schedule_change(
    pvc: RawObject,
    annots: Mapping[str, Any],
    owner: ScheduleOwner,
    effective: Effective | None,
    stagger_window: timedelta | None,
    *,
    writeback: frozenset[str],
) -> AnnotationChange | None:
    rv = str_field(pvc, "metadata", "resourceVersion")

    if owner is ScheduleOwner.USER:
        if APPLIED in annots:  # the user removed our marker: they adopted the schedule
            adopted: dict[str, str | None] = {APPLIED: None}
            if PREVIOUS in annots:
                adopted[PREVIOUS] = None
            return AnnotationChange(
                MappingProxyType(adopted),
                "schedule adopted by the user: dropping Kustodian's mark",
                rv,
            )
        return None
    if owner is ScheduleOwner.USER_EDITED:
        change: dict[str, str | None] = {SOURCE: None}
        for key in (APPLIED, PREVIOUS):
            if key in annots:
                change[key] = None
        return AnnotationChange(
            MappingProxyType(change), "schedule edited on the PVC: it belongs to the user now", rv
        )

    if owner is ScheduleOwner.CSI_ADDONS and not isinstance(effective, EffectiveSchedule):
        value = annots.get(SCHEDULE)
        if effective is None and not writeback and isinstance(value, str) and value == annots.get(FALLBACK):
            # csi-addons' fallback for a source schedule since removed: nobody asks for it, and csi-addons,
            # finding no schedule anywhere, deletes its cron job instead of copying one back
            reason = "the source of csi-addons' fallback has no schedule any more: removing it"
            return AnnotationChange(MappingProxyType({SCHEDULE: None, PREVIOUS: value}), reason, rv)
        return None  # csi-addons' own copy and nothing for us to write: removing it would only flap

    # NOBODY, KUSTODIAN or CSI_ADDONS: the schedule, if any, is ours to keep in line with the sources.
    # A KUSTODIAN schedule that differs from ``applied`` was written back by csi-addons: re-assert.
    if isinstance(effective, InvalidSchedule):
        return None
    if isinstance(effective, EffectiveSchedule) and effective.source == PVC_SOURCE:
        return None  # inconsistent input (the PVC's schedule is not the user's); do nothing rather than guess
    want: dict[str, str | None]
    if isinstance(effective, EffectiveSchedule):
        schedule = stagger(effective.schedule, stagger_key(pvc), stagger_window)
        want = {SCHEDULE: schedule, SOURCE: effective.source, APPLIED: schedule}
        old = annots.get(APPLIED)
        if isinstance(old, str) and old != schedule:
            want[PREVIOUS] = old
        reason = f'schedule "{schedule}" from {effective.source}'
    else:
        want = {SCHEDULE: None, SOURCE: None, APPLIED: None}
        old = annots.get(APPLIED)
        if isinstance(old, str):
            want[PREVIOUS] = old  # so a stale write-back of it is recognised after the removal
        if owner is ScheduleOwner.NOBODY:
            reason = "dropping stale Kustodian marks"
        elif isinstance(effective, Disabled):
            reason = f"reclaim space disabled by {effective.source}: removing Kustodian's schedule"
        else:
            reason = "no source has a schedule any more: removing Kustodian's schedule"
    delta = {k: v for k, v in want.items() if (k in annots if v is None else annots.get(k) != v)}
    if not delta:
        return None
    return AnnotationChange(MappingProxyType(delta), reason, rv)
