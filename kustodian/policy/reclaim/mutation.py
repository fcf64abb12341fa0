"""The admission-time half of propagation: JSON patch ops for a PVC being created.

A PVC should be born with its schedule rather than get it from the controller a
moment later: csi-addons then creates its ReclaimSpaceCronJob once, with the right
schedule, instead of creating and immediately updating it.  The decision is exactly
the controller's (``propagation.reconcile_annotations``: the same ownership rules,
so a PVC arriving with its own schedule is never touched); only the output differs.
The change is applied to a copy and diffed (``policy.jsonpatch``), which creates
``metadata.annotations`` when it is absent, escapes ``/`` as ``~1``, and yields no
ops when the webhook is re-invoked on an already patched object.

Staggering is keyed on ``namespace/name`` (see ``stagger``); a PVC created with
``generateName`` has no name yet, gets the unstaggered schedule here and is
staggered by the controller afterwards.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kustodian.policy.jsonpatch import diff
from kustodian.policy.objects import RawObject
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.propagation import AnnotationChange, reconcile_annotations

__all__ = ["apply_change", "mutate_on_create", "patch_ops"]


def mutate_on_create(
    pvc: RawObject,
    namespace_obj: RawObject | None,
    storageclass_obj: RawObject | None,
    config: ReclaimConfig | None = None,
    *,
    capable: bool = True,
) -> list[dict[str, Any]]:
    """RFC 6902 ops adding the effective schedule and Kustodian's marks; ``[]`` when none are due."""
    change = reconcile_annotations(pvc, namespace_obj, storageclass_obj, config, capable=capable)
    return patch_ops(pvc, change)


def patch_ops(pvc: RawObject, change: AnnotationChange | None) -> list[dict[str, Any]]:
    """``change`` as JSON patch ops against ``pvc``."""
    if change is None:
        return []
    return diff(pvc, apply_change(pvc, change))


def apply_change(pvc: RawObject, change: AnnotationChange) -> dict[str, Any]:
    """A deep copy of ``pvc`` with ``change`` applied to its annotations."""
    new: dict[str, Any] = copy.deepcopy(dict(pvc))
    metadata = new.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
    current = metadata.get("annotations")
    annots: dict[str, Any] = dict(current) if isinstance(current, Mapping) else {}
    for key, value in change.annotations.items():
        if value is None:
            annots.pop(key, None)
        else:
            annots[key] = value
    if annots or "annotations" in metadata:
        metadata["annotations"] = annots
    new["metadata"] = metadata
    return new
