"""csi-addons' own reclaim-space behaviour, as pure functions: what *it* will do with a PVC.

Kustodian sets policy; csi-addons' controller manager executes it.  Every answer
Kustodian gives (what to write on a PVC, which write is a person's, what ``reclaim
plan`` prints) has to agree with what that controller actually does, so its rules are
modelled here once, from its source at the pinned commit
(``internal/controller/csiaddons/persistentvolumeclaim_controller.go``,
``pvc_new_controller.go``, ``internal/util/config.go``,
``internal/controller/utils/schedule.go``):

* **Configuration** is the ConfigMap ``csi-addons-config`` in csi-addons' namespace
  (``csi-addons-system``), read once at start.  ``schedule-precedence`` is ``pvc``
  (default; legacy ``""`` means the same) or ``storageclass`` (legacy ``sc-only``).
  An unknown key or a bad value makes the manager exit: :func:`parse_csi_addons_config`
  reports that instead of guessing.  ``cronjob-stagger-window`` (hours, default 2, ``0``
  off) delays each run by an offset derived from the ReclaimSpaceCronJob's UID.
* **``pvc`` precedence** (``PersistentVolumeClaimReconciler``): only Bound PVCs whose PV
  is a CSI volume.  ``enable: "false"`` on the PVC, then the Namespace, then the
  StorageClass is checked *before any schedule*; any one of them wins.  Then the
  schedule: PVC annotation, else Namespace annotation -- used only when the PVC's
  driver has a registered connection advertising the capability (``CSIAddonsNode``
  status) -- else StorageClass annotation.  A value robfig's ``ParseStandard`` refuses
  becomes ``@weekly``.  The chosen schedule is written back onto the PVC's ``schedule``
  annotation (with ``cronjob``), by a plain patch from csi-addons' cache.
* **``storageclass`` precedence** (``PVCReconiler``, the newer controller): Bound, CSI,
  with a StorageClass name; only the StorageClass's ``schedule`` and ``enable`` count; a
  cron job named ``<pvc>-reclaimspace`` with the raw value; nothing is written on the PVC.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from kustodian.errors import ConfigError, FieldProblem
from kustodian.policy.objects import RawObject, map_field, name, namespace, str_field
from kustodian.policy.reclaim.annotations import annotations_of
from kustodian.policy.reclaim.duration import DurationError, parse_go_duration_ns
from kustodian.policy.reclaim.schedule import robfig_accepts

__all__ = [
    "CSI_ADDONS_CONFIG",
    "DEFAULT_SCHEDULE",
    "KEYROTATION",
    "RECLAIMSPACE",
    "CsiAddonsConfig",
    "CsiAddonsConfigError",
    "CsiAddonsConfigTracker",
    "Feature",
    "UpstreamOutcome",
    "driver_capable",
    "parse_csi_addons_config",
    "pvc_driver",
    "staggered_next",
    "upstream_derivation",
    "upstream_outcome",
]

# Upstream's defaults: ConfigMap name is fixed in csi-addons, the namespace is its --namespace.
CSI_ADDONS_CONFIG = ("csi-addons-system", "csi-addons-config")
DEFAULT_SCHEDULE = "@weekly"  # what csi-addons runs for a value ParseStandard refuses
SchedulePrecedence = Literal["pvc", "storageclass"]


@dataclass(frozen=True)
class Feature:
    """One csi-addons schedule feature: its annotation prefix and the capability it needs."""

    prefix: str  # "reclaimspace" or "keyrotation"
    capability: str  # CSIAddonsNode status.capabilities prefix
    cronjob_suffix: str  # name suffix used by the storageclass-precedence controller

    @property
    def schedule_key(self) -> str:
        return f"{self.prefix}.csiaddons.openshift.io/schedule"

    @property
    def enable_key(self) -> str:
        return f"{self.prefix}.csiaddons.openshift.io/enable"

    @property
    def cronjob_key(self) -> str:
        return f"{self.prefix}.csiaddons.openshift.io/cronjob"


RECLAIMSPACE = Feature("reclaimspace", "reclaim_space.", "reclaimspace")
KEYROTATION = Feature("keyrotation", "encryption_key_rotation.", "keyrotation")


# -- configuration -----------------------------------------------------------------------------

_INT_KEYS = ("max-concurrent-reconciles", "max-group-pvcs", "csi-addons-node-retry-delay",
             "cronjob-stagger-window")
_DURATION_KEYS = ("reclaim-space-timeout", "volume-health-cleanup-interval", "volume-health-stale-threshold")
_PRECEDENCES = {"pvc": "pvc", "": "pvc", "storageclass": "storageclass", "sc-only": "storageclass"}
_GO_INT = re.compile(r"^[+-]?[0-9]+$")


@dataclass(frozen=True)
class CsiAddonsConfig:
    """What csi-addons runs with.  ``CsiAddonsConfig()`` is its behaviour without the ConfigMap."""

    precedence: SchedulePrecedence = "pvc"
    stagger_hours: int = 2
    source: str = ""  # "configmap/<ns>/<name>" when read from a ConfigMap


class CsiAddonsConfigError(ConfigError):
    """csi-addons would refuse this ConfigMap (the manager exits at start); one problem per
    key at fault (``data[max-group-pvcs]``), on one line: ``problem; problem``."""

    inline = True

    def __init__(self, problems: Sequence[FieldProblem]) -> None:
        super().__init__("", problems)


class CsiAddonsConfigTracker:
    """The csi-addons configuration in force, kept once for the webhook and the controller: the
    ConfigMap is parsed again only when its resourceVersion changes, and one csi-addons would
    refuse keeps the last good configuration (csi-addons itself would not even start with it)."""

    def __init__(self) -> None:
        self._config = CsiAddonsConfig()
        self._version: str | None = None

    def update(self, configmap: RawObject | None) -> CsiAddonsConfigError | None:
        """Take ``configmap`` (or its absence) into account; the error once, when a new one is bad."""
        version = None if configmap is None else str_field(configmap, "metadata", "resourceVersion")
        if version == self._version:
            return None
        self._version = version
        try:
            self._config = parse_csi_addons_config(configmap)
        except CsiAddonsConfigError as exc:
            return exc
        return None

    @property
    def in_force(self) -> CsiAddonsConfig:
        return self._config


def parse_csi_addons_config(configmap: RawObject | None) -> CsiAddonsConfig:
    """Read ``csi-addons-config`` the way ``util.Config.readConfig`` does, legacy values included."""
    if configmap is None:
        return CsiAddonsConfig()
    data = map_field(configmap, "data")
    problems: list[FieldProblem] = []
    precedence: SchedulePrecedence = "pvc"
    stagger = 2
    for key, value in data.items():
        val = str(value)
        if key == "schedule-precedence":
            if val not in _PRECEDENCES:
                problems.append(FieldProblem("data[schedule-precedence]", f'"{val}" is not one of "pvc", '
                                             '"storageclass" (legacy: "sc-only", "")'))
            else:
                precedence = "storageclass" if _PRECEDENCES[val] == "storageclass" else "pvc"
        elif key in _INT_KEYS:
            if not _GO_INT.match(val):
                problems.append(FieldProblem(f"data[{key}]", f'"{val}" is not an integer'))
                continue
            number = int(val)
            if key == "cronjob-stagger-window":
                stagger = number
            elif key == "max-group-pvcs" and not 0 < number <= 100:
                problems.append(FieldProblem(f"data[{key}]", f"{number} is not between 1 and 100"))
            elif key == "csi-addons-node-retry-delay" and number < 1:
                problems.append(FieldProblem(f"data[{key}]", f"{number} is below 1"))
        elif key in _DURATION_KEYS:
            try:
                nanos = parse_go_duration_ns(val)
            except DurationError as exc:
                problems.append(FieldProblem(f"data[{key}]", f'"{val}" is not a Go duration: {exc.reason}'))
                continue
            if key != "reclaim-space-timeout" and nanos <= 0:
                problems.append(FieldProblem(f"data[{key}]", f'"{val}" must be positive'))
        else:
            problems.append(FieldProblem(f"data[{key}]", "unknown key (csi-addons refuses to start)"))
    if problems:
        raise CsiAddonsConfigError(problems)
    return CsiAddonsConfig(precedence, stagger, f"configmap/{namespace(configmap)}/{name(configmap)}")


# -- driver capability -------------------------------------------------------------------------

def pvc_driver(pv: RawObject | None, storageclass_obj: RawObject | None) -> str:
    """The CSI driver of a PVC: its PV's ``spec.csi.driver``, else (not bound yet) the class's provisioner."""
    driver = str_field(pv, "spec", "csi", "driver") if pv is not None else ""
    if driver:
        return driver
    return str_field(storageclass_obj, "provisioner") if storageclass_obj is not None else ""


def driver_capable(
    driver: str, csi_addons_nodes: Iterable[RawObject], feature: Feature = RECLAIMSPACE
) -> bool:
    """Does a connected CSIAddonsNode of ``driver`` advertise ``feature``?

    csi-addons asks its connection pool (``checkDriverSupportCapability``); the pool holds
    exactly the sidecars its CSIAddonsNode controller connected to, and that controller
    publishes each connection's capabilities in ``status.capabilities``
    (``reclaim_space.OFFLINE``, ``reclaim_space.ONLINE``, ...) with ``status.state:
    Connected``.  The namespace's ``.../drivers`` annotation upstream compares against the
    annotation key itself, never a driver name, so it never changes the answer and is
    not modelled.
    """
    if not driver:
        return False
    for node in csi_addons_nodes:
        if str_field(node, "spec", "driver", "name") != driver:
            continue
        if str_field(node, "status", "state") != "Connected":
            continue
        caps = map_field(node, "status").get("capabilities")
        if isinstance(caps, list) and any(
            isinstance(c, str) and c.startswith(feature.capability) for c in caps
        ):
            return True
    return False


# -- what csi-addons does with one PVC ---------------------------------------------------------

@dataclass(frozen=True)
class UpstreamOutcome:
    """csi-addons' end state for one PVC and feature.

    ``cronjob_schedule``: the schedule of the one cron job it keeps (``None``: no cron job).
    ``pvc_schedule``: what it writes on the PVC's schedule annotation (``None``: it writes
    nothing, and the annotation keeps whatever value it has).  ``reason`` for people.
    """

    cronjob_schedule: str | None
    pvc_schedule: str | None
    reason: str
    cronjob_name_suffix: str = ""  # fixed name suffix (storageclass precedence); "" = "<pvc>-<unix time>"


def _is_false(obj: RawObject | None, key: str) -> bool:
    return obj is not None and annotations_of(obj).get(key) == "false"


def _schedule_of(obj: RawObject | None, key: str) -> str | None:
    """``getScheduleFromAnnotation``: absent -> None, refused by ParseStandard -> @weekly."""
    if obj is None:
        return None
    value = annotations_of(obj).get(key)
    if not isinstance(value, str):
        return None
    return value if robfig_accepts(value) else DEFAULT_SCHEDULE


def _sc_name(pvc: RawObject) -> str:
    # csi-addons reads spec.storageClassName only (not the legacy beta annotation)
    return str_field(pvc, "spec", "storageClassName")


def upstream_derivation(
    pvc: RawObject,
    namespace_obj: RawObject | None,
    storageclass_obj: RawObject | None,
    capable: bool,
    feature: Feature = RECLAIMSPACE,
) -> str | None:
    """The schedule csi-addons derives *without* the PVC's own annotation (``pvc`` precedence).

    This is what it copies onto a PVC that has none, and so what a write-back from
    its cache can hold.  ``None``: no level has one (or a ``false`` disables it).
    """
    key = feature.schedule_key
    sc = storageclass_obj if _sc_name(pvc) else None
    if any(_is_false(o, feature.enable_key) for o in (pvc, namespace_obj, sc)):
        return None
    if capable:
        ns_schedule = _schedule_of(namespace_obj, key)
        if ns_schedule is not None:
            return ns_schedule
    return _schedule_of(storageclass_obj if _sc_name(pvc) else None, key)


def upstream_outcome(
    pvc: RawObject,
    pv: RawObject | None,
    namespace_obj: RawObject | None,
    storageclass_obj: RawObject | None,
    *,
    config: CsiAddonsConfig,
    capable: bool,
    feature: Feature = RECLAIMSPACE,
) -> UpstreamOutcome:
    """What csi-addons will do with ``pvc`` (as it is now) once it has reconciled it."""
    if str_field(pvc, "status", "phase") != "Bound":
        return UpstreamOutcome(None, None, "not Bound: csi-addons waits")
    if pv is None or not map_field(pv, "spec", "csi"):
        return UpstreamOutcome(None, None, "not a CSI volume: csi-addons ignores it")
    sc_name = _sc_name(pvc)
    sc = storageclass_obj if sc_name else None
    if config.precedence == "storageclass":
        if sc is None:
            return UpstreamOutcome(None, None, "no StorageClass: csi-addons ignores it")
        annots = annotations_of(sc)
        schedule = annots.get(feature.schedule_key)
        schedule = schedule if isinstance(schedule, str) else ""
        if schedule == "" or annots.get(feature.enable_key) == "false":
            return UpstreamOutcome(None, None, f"storageclass/{sc_name}: no schedule or disabled",
                                   feature.cronjob_suffix)
        return UpstreamOutcome(schedule, None, f"storageclass/{sc_name}", feature.cronjob_suffix)

    for obj, where in ((pvc, "pvc"), (namespace_obj, f"namespace/{namespace(pvc)}"),
                       (sc, f"storageclass/{sc_name}")):
        if _is_false(obj, feature.enable_key):
            return UpstreamOutcome(None, None, f"disabled by {where}")
    own = _schedule_of(pvc, feature.schedule_key)
    if own is not None:
        return UpstreamOutcome(own, own, "pvc")
    derived = upstream_derivation(pvc, namespace_obj, storageclass_obj, capable, feature)
    if derived is None:
        return UpstreamOutcome(None, None, "no schedule")
    return UpstreamOutcome(derived, derived, "namespace or storageclass")


# -- upstream's staggering ---------------------------------------------------------------------

def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def staggered_next(uid: str, next_time: datetime, after_next: datetime, cap_hours: int) -> datetime:
    """``utils.GetStaggeredNext``: ``next_time`` delayed by FNV-1a(uid) mod min(interval, cap).

    ``after_next`` is the schedule's run after ``next_time`` (upstream's way of finding the
    interval).
    """
    if cap_hours == 0:
        return next_time
    window = min(after_next - next_time, timedelta(hours=cap_hours))
    seconds = int(window.total_seconds())
    if seconds <= 0:
        return next_time
    return next_time + timedelta(seconds=_fnv32a(uid.encode()) % seconds)

