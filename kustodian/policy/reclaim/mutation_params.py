"""The parameters of the reclaim-space MutatingAdmissionPolicy: what CEL cannot look up itself.

On Kubernetes >= 1.36 the chart can give a new PVC its schedule with a MutatingAdmissionPolicy
(``charts/kustodian/templates/reclaim-mutation-policy.yaml``) instead of the webhook.  The
policy's CEL runs the webhook's decision (``propagation.reconcile_annotations``) step for step,
but CEL in admission reads only the PVC, its Namespace (``namespaceObject``) and one params
object: not the StorageClass, not the central ConfigMap's JSON, not csi-addons' ConfigMap or its
CSIAddonsNodes; and it cannot parse robfig's schedule language or hash a PVC's name.  So the
controllers, which watch all of those already, write what the decision needs from them into one
``ReclaimSpaceParams`` object (``charts/kustodian/crds/``), and this module decides its ``spec``:

``precedence``      csi-addons' ``schedule-precedence`` in force (``pvc`` | ``storageclass``)
``enabled``         false when Kustodian's kill switch (``reclaim-space-enable``) is off
``source``          the central ConfigMap's marker (``configmap/<ns>/<name>``), ``""`` without one
``stagger``         Kustodian staggers (``stagger-window`` set, ``pvc`` precedence)
``storageClasses``  every StorageClass that exists or that the ConfigMap names: ``exists``,
                    ``disabled`` (its ``enable`` is ``"false"``), ``capable`` (its provisioner has a
                    connected CSIAddonsNode advertising ReclaimSpace: csi-addons then reads the
                    Namespace's schedule), its ``schedule`` if it carries one, and ``configured``,
                    the ConfigMap's schedule for it
``namespaces``      every Namespace that carries a schedule: the ``schedule`` judged

Each schedule is judged once here: ``valid`` (csi-addons runs it as written: ``precedence``'s
reading), ``parses`` (robfig's ``ParseStandard`` accepts it, else csi-addons copies ``@weekly``),
``staggered`` (Kustodian would spread it, ``configuredStaggered`` for the ConfigMap's; those of the
ConfigMap are valid by construction).

A CRD and not a ConfigMap: the API server watches a built-in ``paramKind`` through its shared
informer, which stops for good (until it restarts) once no binding uses that kind for a moment,
and then serves the last params it saw or none (kubernetes/kubernetes#130887, seen on
kube-testserver); a CRD ``paramKind`` gets an informer of its own that is started again.

What the policy cannot know it does not guess: a Namespace entry carries the value it judged and
the policy compares it with the live ``namespaceObject`` (a mismatch, like a missing entry, leaves
the PVC to the controllers); a PVC naming a StorageClass without an entry is left alone too, as
is a PVC whose schedule Kustodian would stagger (CEL has no hash).  What it cannot see change (a
StorageClass, the ConfigMap, the CSIAddonsNodes) it takes from the last params written: see
``docs/howto/reclaim-space.md`` for why that is acceptable for a convenience mutation and what
corrects it.

The object is bounded: Namespace entries (the only ones that grow with the cluster) stop before
``SIZE_LIMIT``, a schedule longer than ``SCHEDULE_LIMIT`` is left out; what is left out is
counted (``omitted``) and, again, left to the controllers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kustodian.policy.objects import RawObject, name, str_field
from kustodian.policy.reclaim.annotations import SCHEDULE, annotations_of, is_disabled
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.propagation import stagger_window_for
from kustodian.policy.reclaim.schedule import robfig_accepts, schedule_error
from kustodian.policy.reclaim.stagger import staggerable
from kustodian.policy.reclaim.upstream import driver_capable

__all__ = ["SCHEDULE_LIMIT", "SIZE_LIMIT", "MutationParams", "mutation_params"]

# the CRD's maxLength of a schedule (what robfig's callers write is far shorter)
SCHEDULE_LIMIT = 1024
# an object is stored whole in etcd (1.5 MiB a request); keep well under it
SIZE_LIMIT = 1024 * 1024


@dataclass(frozen=True)
class MutationParams:
    """The params object's ``spec``, and how many entries did not fit (left to the controllers)."""

    spec: Mapping[str, Any] = field(hash=False)
    omitted: int = 0


def _judged(schedule: str) -> dict[str, Any]:
    return {"schedule": schedule, "valid": schedule_error(schedule) is None,
            "parses": robfig_accepts(schedule), "staggered": staggerable(schedule)}


def _storage_class(sc: RawObject | None, configured: str | None, capable: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"exists": sc is not None, "disabled": is_disabled(sc), "capable": capable}
    value = annotations_of(sc).get(SCHEDULE)
    if isinstance(value, str):
        entry.update(_judged(value))
    if configured is not None:
        entry["configured"] = configured
        entry["configuredStaggered"] = staggerable(configured)
    return entry


def _size(key: str, entry: Mapping[str, Any]) -> int:
    """Bytes of ``"key":{...},`` in the compact JSON the API server stores."""
    compact = (",", ":")
    return len(json.dumps(key).encode()) + len(json.dumps(entry, separators=compact).encode()) + 2


def mutation_params(
    storage_classes: Iterable[RawObject],
    namespaces: Iterable[RawObject],
    config: ReclaimConfig,
    csi_addons_nodes: Iterable[RawObject],
) -> MutationParams:
    """The params ``spec`` for the objects as they are now (``config`` with csi-addons' precedence)."""
    nodes = tuple(csi_addons_nodes)
    by_class: dict[str, dict[str, Any]] = {}
    by_namespace: dict[str, dict[str, Any]] = {}
    size = 256
    omitted = 0

    def fits(key: str, entry: Mapping[str, Any]) -> bool:
        nonlocal size, omitted
        long = any(isinstance(v, str) and len(v) > SCHEDULE_LIMIT for v in entry.values())
        cost = _size(key, entry)
        if long or size + cost > SIZE_LIMIT:
            omitted += 1
            return False
        size += cost
        return True

    classes = {name(sc): sc for sc in storage_classes if name(sc)}
    for sc_name in sorted(classes.keys() | config.storageclass_schedules.keys()):
        sc = classes.get(sc_name)
        capable = sc is not None and driver_capable(str_field(sc, "provisioner"), nodes)
        entry = _storage_class(sc, config.schedule_for(sc_name), capable)
        if fits(sc_name, entry):
            by_class[sc_name] = entry
    scheduled = sorted((name(ns), value) for ns in namespaces
                       if name(ns) and isinstance(value := annotations_of(ns).get(SCHEDULE), str))
    for ns_name, value in scheduled:
        entry = _judged(value)
        if fits(ns_name, entry):
            by_namespace[ns_name] = entry
    spec = {
        "precedence": config.precedence,
        "enabled": config.enabled,
        "source": config.source,
        "stagger": stagger_window_for(config) is not None,
        "storageClasses": by_class,
        "namespaces": by_namespace,
        "omitted": omitted,
    }
    return MutationParams(MappingProxyType(spec), omitted)
