"""The annotation keys of the reclaim policy, and who owns a PVC's schedule.

csi-addons' keys are used as they are (Kustodian sets policy, csi-addons executes
it): ``reclaimspace.csiaddons.openshift.io/schedule`` and
``reclaimspace.csiaddons.openshift.io/enable`` (only the exact value ``"false"``
means anything to csi-addons).  Kustodian adds two bookkeeping annotations, on PVCs
only, under its own prefix so that csi-addons never reads them:

``reclaimspace.kustodian.io/source``
    Where the schedule came from: ``storageclass/<name>``, ``namespace/<name>`` or
    ``configmap/<namespace>/<name>``.  One form per kind, ``<kind>/<name>``, with the
    ConfigMap's namespace included because a ConfigMap name alone is ambiguous;
    Kubernetes names never contain ``/``, so the value splits unambiguously.
``reclaimspace.kustodian.io/applied``
    The exact schedule string Kustodian last wrote.

Ownership is decided from the PVC's annotations plus one set computed from its sources,
the *write-back set*, never from history, so the webhook and the controller (and a
re-run after a crash) always agree.

The write-back set exists because csi-addons writes this same annotation.  Its PVC
controller patches ``schedule`` (and ``cronjob``) on every reconcile that creates or
updates a cron job, from its own cache and without a resourceVersion, with the schedule
*it* chose: the PVC's value as it last saw it, or -- for a PVC with none -- its own
derivation from the Namespace (driver permitting) or the StorageClass, ``@weekly`` for a
value robfig refuses.  Such a write is not a person's edit.  So a value is treated as
csi-addons' when it is equal to one of: csi-addons' derivation for this PVC now
(``upstream.upstream_derivation``), the unstaggered schedule Kustodian's policy gives,
or the value Kustodian applied before the current one (``previous``: csi-addons' cache
can be one change behind; measured on kube-testserver, a schedule change lost 4-6 of 20
PVCs to exactly this write-back before ``previous`` was kept).  Everything else is a
person's:

==================================================  ================  =============================
schedule / source / applied                         owner             what Kustodian does
==================================================  ================  =============================
absent / absent / absent                            ``NOBODY``        may write one
present / absent / absent, ``cronjob`` present,     ``CSI_ADDONS``    csi-addons copied its own
value in the write-back set                                           derivation: Kustodian takes over
present / absent / absent, value == ``previous``    ``KUSTODIAN``     csi-addons wrote back what
                                                                      Kustodian removed: remove again
present / absent / absent, ``cronjob`` present,     ``CSI_ADDONS``    csi-addons' ``@weekly`` for an
value == ``csi-addons-fallback``                                      invalid source: Kustodian takes
                                                                      over once the source is valid
present / absent / any other                        ``USER``          never touches it
present / present / == schedule                     ``KUSTODIAN``     keeps it in line with sources
present / present / != schedule, value in set       ``KUSTODIAN``     csi-addons wrote back: re-assert
present / present / != schedule, value not in set   ``USER_EDITED``   hands it over: drops its marks
absent / present or applied present                 ``NOBODY``        drops stale marks, may write
==================================================  ================  =============================

The one ambiguity is deliberate: a person who writes exactly csi-addons' derivation (say
the StorageClass's ``@daily`` over Kustodian's staggered ``17 3 * * *``) gets Kustodian's
policy re-asserted; they asked for what the policy already gives.  Any other value, or
``enable: "false"``, or deleting the ``source`` annotation (adoption), hands the PVC over.
A PVC that csi-addons annotated while Kustodian was away, from a source that has changed
since, holds a value outside the set and is left as the user's: the safe mistake.

csi-addons' fallback needs a record.  For a source schedule robfig refuses, csi-addons runs and
writes ``@weekly`` (``getScheduleFromAnnotation``'s ``defaultSchedule``) and from then on reads the
PVC's own value first, so it never looks at the source again; when the admin fixes the source,
``@weekly`` leaves the write-back set and would be taken for a person's schedule for good.  So
while the fallback *is* in the write-back set (the source is still invalid), Kustodian records it
in ``reclaimspace.kustodian.io/csi-addons-fallback``; a value equal to that record (with
``cronjob``, and no Kustodian marks) stays csi-addons', and Kustodian replaces it with the source's
schedule once the source is valid, or removes it once no source has a schedule (keeping ``@weekly``
as ``previous`` either way, for a late write-back).
A fallback Kustodian never saw while the source was invalid (it was down from before the PVC got
it until after the fix) is left as a person's: the same safe mistake.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from kustodian.policy.objects import RawObject, map_field

SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
ENABLE = "reclaimspace.csiaddons.openshift.io/enable"
CRONJOB = "reclaimspace.csiaddons.openshift.io/cronjob"  # written by csi-addons with its schedule
SOURCE = "reclaimspace.kustodian.io/source"
APPLIED = "reclaimspace.kustodian.io/applied"
# The value Kustodian applied before ``applied`` (kept when it removes its schedule too): csi-addons
# can write back a value from a cache one change behind, and that value is this one.
PREVIOUS = "reclaimspace.kustodian.io/previous"
# csi-addons' fallback, recorded while it is one: the value csi-addons wrote on this PVC (``@weekly``) in
# place of a Namespace or StorageClass schedule robfig refuses.  Once the source is valid again that
# value is no longer in the write-back set, and without this record it would pass for a person's.
FALLBACK = "reclaimspace.kustodian.io/csi-addons-fallback"

# EffectiveSchedule.source for a schedule the user wrote on the PVC (never written as a marker).
PVC_SOURCE = "pvc"


def annotations_of(obj: RawObject | None) -> Mapping[str, Any]:
    """``metadata.annotations`` or ``{}``.

    ``policy.objects.annotations`` is shadowed for mypy by that module's
    ``from __future__ import annotations``, so the reclaim modules read through this.
    """
    return map_field(obj, "metadata", "annotations")


SourceKind = Literal["storageclass", "namespace", "configmap"]


@dataclass(frozen=True)
class SourceRef:
    """A parsed ``reclaimspace.kustodian.io/source`` value."""

    kind: SourceKind
    name: str
    namespace: str = ""  # only for configmap

    def __str__(self) -> str:
        if self.kind == "configmap":
            return f"configmap/{self.namespace}/{self.name}"
        return f"{self.kind}/{self.name}"


def storageclass_source(name: str) -> str:
    return str(SourceRef("storageclass", name))


def namespace_source(name: str) -> str:
    return str(SourceRef("namespace", name))


def configmap_source(namespace: str, name: str) -> str:
    return str(SourceRef("configmap", name, namespace))


def parse_source(value: str) -> SourceRef | None:
    """``"storageclass/rbd"`` -> ``SourceRef("storageclass", "rbd")``; ``None`` when malformed."""
    parts = value.split("/")
    if any(not p for p in parts):
        return None
    if len(parts) == 2 and parts[0] == "storageclass":
        return SourceRef("storageclass", parts[1])
    if len(parts) == 2 and parts[0] == "namespace":
        return SourceRef("namespace", parts[1])
    if len(parts) == 3 and parts[0] == "configmap":
        return SourceRef("configmap", parts[2], parts[1])
    return None


class ScheduleOwner(StrEnum):
    NOBODY = "nobody"
    USER = "user"
    USER_EDITED = "user-edited"
    KUSTODIAN = "kustodian"
    CSI_ADDONS = "csi-addons"


def schedule_owner(pvc: RawObject | None, writeback: Collection[str] = ()) -> ScheduleOwner:
    """Who owns the PVC's schedule annotation (see the module docstring's table).

    ``writeback``: the values csi-addons may write on its own (see the module docstring).
    """
    annots = annotations_of(pvc)
    if SCHEDULE not in annots:
        return ScheduleOwner.NOBODY
    value = annots[SCHEDULE]
    stale = value == annots.get(PREVIOUS)
    if SOURCE not in annots:
        if APPLIED in annots:
            return ScheduleOwner.USER  # the user removed our marker: adopted
        if stale:
            return ScheduleOwner.KUSTODIAN
        if CRONJOB in annots and (value in writeback or value == annots.get(FALLBACK)):
            return ScheduleOwner.CSI_ADDONS
        return ScheduleOwner.USER
    if annots.get(APPLIED) == value or value in writeback or stale:
        return ScheduleOwner.KUSTODIAN
    return ScheduleOwner.USER_EDITED


def is_disabled(obj: RawObject | None) -> bool:
    """csi-addons' rule: only the exact string ``"false"`` disables."""
    return annotations_of(obj).get(ENABLE) == "false"
