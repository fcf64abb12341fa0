"""The same policy for ``keyrotation.csiaddons.openshift.io/schedule`` (csi-addons#677), off by default.

csi-addons handles encryption key rotation exactly like reclaim space: the same
annotation triple (``schedule``, ``enable``, ``cronjob``) under the ``keyrotation.``
prefix, the same precedence and enable order, the same write-back onto the PVC, and the
driver check on the ``encryption_key_rotation`` capability
(``persistentvolumeclaim_controller.go``, ``processKeyRotation``).  Rather than a second
copy of the rules, this module runs the reclaim-space machinery on a *translated view*:
each object's ``keyrotation.*`` annotations are presented under the reclaim-space keys
(and the real reclaim-space keys hidden), the decision is taken, and the resulting
change is translated back.  Kustodian's marks live under ``keyrotation.kustodian.io/``.

There is no central schedule map for key rotation (Kustodian's ConfigMap is about
reclaim space), and no Kustodian staggering: a rotation schedule is a security policy,
not a load problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from kustodian.policy.objects import RawObject, map_field
from kustodian.policy.reclaim.annotations import (
    APPLIED,
    CRONJOB,
    ENABLE,
    FALLBACK,
    PREVIOUS,
    SCHEDULE,
    SOURCE,
)
from kustodian.policy.reclaim.config import Precedence, ReclaimConfig
from kustodian.policy.reclaim.propagation import AnnotationChange, reconcile_annotations

__all__ = ["KEYROTATION_KEYS", "reconcile_keyrotation"]

KEYROTATION_KEYS: Mapping[str, str] = MappingProxyType({
    SCHEDULE: "keyrotation.csiaddons.openshift.io/schedule",
    ENABLE: "keyrotation.csiaddons.openshift.io/enable",
    CRONJOB: "keyrotation.csiaddons.openshift.io/cronjob",
    SOURCE: "keyrotation.kustodian.io/source",
    APPLIED: "keyrotation.kustodian.io/applied",
    PREVIOUS: "keyrotation.kustodian.io/previous",
    FALLBACK: "keyrotation.kustodian.io/csi-addons-fallback",  # csi-addons falls back to @weekly here too
})


def _view(obj: RawObject | None) -> dict[str, Any] | None:
    """``obj`` with its key-rotation annotations under the reclaim-space keys (and those hidden)."""
    if obj is None:
        return None
    annots = map_field(obj, "metadata", "annotations")
    translated = {k: v for k, v in annots.items() if k not in KEYROTATION_KEYS}
    for reclaim_key, rotation_key in KEYROTATION_KEYS.items():
        if rotation_key in annots:
            translated[reclaim_key] = annots[rotation_key]
    meta = dict(map_field(obj, "metadata"))
    meta["annotations"] = translated
    return {**dict(obj), "metadata": meta}


def reconcile_keyrotation(
    pvc: RawObject,
    namespace_obj: RawObject | None,
    storageclass_obj: RawObject | None,
    *,
    precedence: Precedence = "pvc",
    capable: bool,
) -> AnnotationChange | None:
    """The key-rotation annotation change for ``pvc`` (``capable``: encryption_key_rotation advertised)."""
    view = _view(pvc)
    assert view is not None
    change = reconcile_annotations(view, _view(namespace_obj), _view(storageclass_obj),
                                   ReclaimConfig(precedence=precedence), capable=capable)
    if change is None:
        return None
    return AnnotationChange(
        MappingProxyType({KEYROTATION_KEYS[k]: v for k, v in change.annotations.items()}),
        "key rotation: " + change.reason,
        change.resource_version,
    )
