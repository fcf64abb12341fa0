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

Ownership is decided from those three values alone, never from history, so the
webhook and the controller (and a re-run after a crash) always agree:

========================================  ================  =============================
schedule / source / applied               owner             what Kustodian does
========================================  ================  =============================
absent / absent / absent                  ``NOBODY``        may write one
present / absent / any                    ``USER``          never touches it
present / present / == schedule           ``KUSTODIAN``     keeps it in line with sources
present / present / != schedule or none   ``USER_EDITED``   hands it over: drops its marks
absent / present or applied present       ``NOBODY``        drops stale marks, may write
========================================  ================  =============================

A schedule without our marker is the user's even if csi-addons' own PVC controller
copied it there from a Namespace or StorageClass (older csi-addons does): we cannot
tell the two apart, and leaving a schedule alone is the safe mistake.  Deleting the
``source`` annotation is how a user adopts a Kustodian schedule as their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from kustodian.policy.objects import RawObject, map_field

SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
ENABLE = "reclaimspace.csiaddons.openshift.io/enable"
SOURCE = "reclaimspace.kustodian.io/source"
APPLIED = "reclaimspace.kustodian.io/applied"

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


def schedule_owner(pvc: RawObject | None) -> ScheduleOwner:
    """Who owns the PVC's schedule annotation (see the module docstring's table)."""
    annots = annotations_of(pvc)
    if SCHEDULE not in annots:
        return ScheduleOwner.NOBODY
    if SOURCE not in annots:
        return ScheduleOwner.USER
    if annots.get(APPLIED) == annots[SCHEDULE]:
        return ScheduleOwner.KUSTODIAN
    return ScheduleOwner.USER_EDITED


def is_disabled(obj: RawObject | None) -> bool:
    """csi-addons' rule: only the exact string ``"false"`` disables."""
    return annotations_of(obj).get(ENABLE) == "false"
