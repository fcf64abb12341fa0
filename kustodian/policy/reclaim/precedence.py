"""Which reclaim schedule applies to a PVC, and who said so.

One function, the single answer the webhook, the propagation controller and
``kustodian reclaim plan`` all share, so none of them can drift from the others.

``pvc`` mode (csi-addons' default ``schedule-precedence``), first match wins.  Steps
1-3 are csi-addons' own order (``checkDisabledByAnnotation`` runs before any schedule
is looked at, so any ``"false"`` wins, even over a schedule on the PVC):

1. PVC ``enable: "false"``                       -> ``Disabled("pvc")``
2. Namespace ``enable: "false"``                 -> ``Disabled(namespace/<ns>)``
3. StorageClass ``enable: "false"``              -> ``Disabled(storageclass/<sc>)``
4. a schedule the *user* put on the PVC          -> that schedule, source ``"pvc"``
   (one Kustodian or csi-addons wrote is recomputed below: see ``annotations.schedule_owner``)
5. ConfigMap ``reclaim-space-enable: "false"``    -> ``Disabled(configmap/...)``
6. Namespace schedule, *only if the PVC's driver  -> source ``namespace/<ns>``
   advertises the capability* (``upstream.driver_capable``; csi-addons skips it otherwise)
7. StorageClass schedule                         -> source ``storageclass/<sc>``
8. ConfigMap ``auto-reclaim-storageclass[<sc>]`` -> source ``configmap/<ns>/<name>``
9. nothing                                       -> ``None``

The kill switch (5) sits below the user's own PVC schedule on purpose: Kustodian
never edits a schedule it does not own, and csi-addons would keep running it, so
reporting it as disabled would be a lie.  It disables every schedule Kustodian
propagates.

``storageclass`` mode: csi-addons' newer controller reads only the StorageClass and
never the PVC's annotations, so a schedule Kustodian wrote on a PVC would be ignored:
Kustodian propagates nothing (``None``) and removes what it wrote before.  ``reclaim
plan`` shows csi-addons' own StorageClass-only behaviour (``upstream.upstream_outcome``).

A schedule that does not parse is not skipped in favour of the next level (that would
apply something nobody chose) nor passed on (csi-addons would quietly run
``@weekly``): it is returned as ``InvalidSchedule`` so callers can leave PVCs alone
and report it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from kustodian.policy.objects import RawObject, name, namespace, str_field
from kustodian.policy.reclaim.annotations import (
    PVC_SOURCE,
    SCHEDULE,
    ScheduleOwner,
    annotations_of,
    is_disabled,
    namespace_source,
    schedule_owner,
    storageclass_source,
)
from kustodian.policy.reclaim.config import Precedence, ReclaimConfig
from kustodian.policy.reclaim.schedule import schedule_error
from kustodian.policy.reclaim.upstream import upstream_derivation

__all__ = [
    "Disabled",
    "Effective",
    "EffectiveSchedule",
    "InvalidSchedule",
    "effective_schedule",
    "policy_schedule",
    "storage_class_name",
    "writeback_values",
]

_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"


@dataclass(frozen=True)
class EffectiveSchedule:
    """Reclaim space on ``schedule``; ``source`` is ``"pvc"`` or a marker value."""

    schedule: str
    source: str


@dataclass(frozen=True)
class Disabled:
    """``enable: "false"`` (or the kill switch) at ``source`` switches reclaiming off."""

    source: str


@dataclass(frozen=True)
class InvalidSchedule:
    """The deciding level holds a schedule csi-addons would not run as written."""

    schedule: str
    source: str
    reason: str


Effective: TypeAlias = EffectiveSchedule | Disabled | InvalidSchedule


def storage_class_name(pvc: RawObject) -> str:
    """The PVC's StorageClass name, ``""`` for none.

    Same order as Kubernetes' ``GetPersistentVolumeClaimClass``: the legacy beta
    annotation, when present, wins over ``spec.storageClassName``.
    """
    value = annotations_of(pvc).get(_BETA_STORAGE_CLASS)
    if isinstance(value, str):
        return value
    return str_field(pvc, "spec", "storageClassName")


def policy_schedule(
    pvc: RawObject,
    namespace_obj: RawObject | None,
    storageclass_obj: RawObject | None,
    config: ReclaimConfig | None = None,
    *,
    capable: bool = True,
) -> Effective | None:
    """The policy's schedule for ``pvc`` ignoring any schedule on the PVC itself (steps 1-3, 5-9)."""
    cfg = config if config is not None else ReclaimConfig()
    sc_name = storage_class_name(pvc)
    sc_source = storageclass_source(sc_name)
    ns_source = namespace_source(namespace(pvc))
    if is_disabled(pvc):
        return Disabled(PVC_SOURCE)
    if is_disabled(namespace_obj):
        return Disabled(ns_source)
    if is_disabled(storageclass_obj):
        return Disabled(sc_source)
    if not cfg.enabled:
        return Disabled(cfg.source)
    levels = ((namespace_obj, ns_source),) if capable else ()
    for obj, source in (*levels, (storageclass_obj, sc_source)):
        decided = _level(obj, source)
        if decided is not None:
            return decided
    schedule = cfg.schedule_for(sc_name)
    return EffectiveSchedule(schedule, cfg.source) if schedule is not None else None


def writeback_values(
    pvc: RawObject,
    namespace_obj: RawObject | None,
    storageclass_obj: RawObject | None,
    config: ReclaimConfig | None = None,
    *,
    capable: bool = True,
) -> frozenset[str]:
    """Values csi-addons may write on this PVC on its own (``annotations`` explains why)."""
    values: set[str] = set()
    derived = upstream_derivation(pvc, namespace_obj, storageclass_obj, capable)
    if derived is not None:
        values.add(derived)
    policy = policy_schedule(pvc, namespace_obj, storageclass_obj, config, capable=capable)
    if isinstance(policy, EffectiveSchedule):
        values.add(policy.schedule)
    return frozenset(values)


def effective_schedule(
    pvc: RawObject,
    namespace_obj: RawObject | None,
    storageclass_obj: RawObject | None,
    config: ReclaimConfig | None = None,
    mode: Precedence | None = None,
    *,
    capable: bool = True,
) -> Effective | None:
    """The schedule that applies to ``pvc`` (see the module docstring for the order).

    ``namespace_obj``/``storageclass_obj`` are the PVC's Namespace and StorageClass
    (``None`` when absent from the cache); ``mode`` defaults to ``config.precedence``;
    ``capable``: the PVC's driver advertises ReclaimSpace (``upstream.driver_capable``).
    """
    cfg = config if config is not None else ReclaimConfig()
    sc_name = storage_class_name(pvc)
    if namespace_obj is not None and name(namespace_obj) != namespace(pvc):
        raise ValueError(f"namespace {name(namespace_obj)!r} is not the PVC's ({namespace(pvc)!r})")
    if storageclass_obj is not None and name(storageclass_obj) != sc_name:
        raise ValueError(f"StorageClass {name(storageclass_obj)!r} is not the PVC's ({sc_name!r})")

    if (mode or cfg.precedence) == "storageclass":
        return None

    policy = policy_schedule(pvc, namespace_obj, storageclass_obj, cfg, capable=capable)
    if isinstance(policy, Disabled) and policy.source != cfg.source:
        return policy  # csi-addons' own enable check comes before any schedule
    writeback = writeback_values(pvc, namespace_obj, storageclass_obj, cfg, capable=capable)
    if schedule_owner(pvc, writeback) in (ScheduleOwner.USER, ScheduleOwner.USER_EDITED):
        return _decide(annotations_of(pvc)[SCHEDULE], PVC_SOURCE)
    return policy


def _level(obj: RawObject | None, source: str) -> Effective | None:
    if obj is None:
        return None
    if is_disabled(obj):
        return Disabled(source)
    annots = annotations_of(obj)
    return _decide(annots[SCHEDULE], source) if SCHEDULE in annots else None


def _decide(value: Any, source: str) -> Effective:
    if not isinstance(value, str):
        return InvalidSchedule(str(value), source, "must be a string")
    reason = schedule_error(value)
    if reason is not None:
        return InvalidSchedule(value, source, reason)
    return EffectiveSchedule(value, source)
