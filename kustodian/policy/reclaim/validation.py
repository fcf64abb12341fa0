"""Admission validation for everything that can carry reclaim policy.

csi-addons never tells anyone that a schedule is wrong: an unparsable value is
logged on the controller and replaced by ``@weekly``, and ``enable: "False"`` or
``"no"`` simply leaves reclaiming on (only ``"false"`` counts).  The validating
webhook is the one place a person gets told, at the moment they write it, so each
error names the field, the value and the reason:

    metadata.annotations[reclaimspace.csiaddons.openshift.io/schedule]: "every day"
    is not a valid schedule: it has 2 fields but a cron expression needs 5 (...);
    did you mean "@daily"?

Covered: StorageClasses, Namespaces and PVCs (schedule and enable annotations; on
PVCs also the form of Kustodian's ``source`` marker) and the central ConfigMap
(only the one at the expected namespace/name; every other ConfigMap is not ours).
Other kinds get no opinion (``[]``).

A webhook should only deny UPDATEs that change these annotations (or objects not
being deleted): denying an unrelated update -- a finalizer removal, say -- because
of a value that was already there would wedge the object.
"""

from __future__ import annotations

import json
from typing import Any

from kustodian.policy.objects import RawObject, name, namespace
from kustodian.policy.reclaim.annotations import ENABLE, SCHEDULE, SOURCE, annotations_of, parse_source
from kustodian.policy.reclaim.config import DEFAULT_CONFIG_MAP, config_problems
from kustodian.policy.reclaim.schedule import schedule_error

__all__ = ["KIND_CONFIGMAP", "KIND_NAMESPACE", "KIND_PVC", "KIND_STORAGECLASS", "validate_object"]

KIND_STORAGECLASS = "StorageClass.storage.k8s.io"
KIND_NAMESPACE = "Namespace"
KIND_PVC = "PersistentVolumeClaim"
KIND_CONFIGMAP = "ConfigMap"


def validate_object(
    kind_key: str,
    obj: RawObject,
    *,
    config_map: tuple[str, str] = DEFAULT_CONFIG_MAP,
) -> list[str]:
    """Every reclaim-policy error in ``obj``, each prefixed with its field path.

    ``config_map`` is the ``(namespace, name)`` of the central ConfigMap.
    """
    if kind_key in (KIND_STORAGECLASS, KIND_NAMESPACE):
        return _annotation_errors(obj, marker=False)
    if kind_key == KIND_PVC:
        return _annotation_errors(obj, marker=True)
    if kind_key == KIND_CONFIGMAP and (namespace(obj), name(obj)) == config_map:
        return config_problems(obj)
    return []


def _path(key: str) -> str:
    return f"metadata.annotations[{key}]"


def _quote(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _annotation_errors(obj: RawObject, *, marker: bool) -> list[str]:
    annots = annotations_of(obj)
    errors: list[str] = []
    if SCHEDULE in annots:
        value = annots[SCHEDULE]
        if not isinstance(value, str):
            errors.append(f"{_path(SCHEDULE)}: must be a string, got {_quote(value)}")
        else:
            reason = schedule_error(value)
            if reason is not None:
                errors.append(f"{_path(SCHEDULE)}: {_quote(value)} is not a valid schedule: {reason}")
    if ENABLE in annots and annots[ENABLE] not in ("true", "false"):
        errors.append(
            f'{_path(ENABLE)}: {_quote(annots[ENABLE])} is not valid: use "true" or "false" '
            '(csi-addons only recognises the exact string "false"; any other value leaves reclaiming on)'
        )
    if marker and SOURCE in annots:
        value = annots[SOURCE]
        if not isinstance(value, str) or parse_source(value) is None:
            errors.append(
                f"{_path(SOURCE)}: {_quote(value)} is not a valid source: expected storageclass/<name>, "
                "namespace/<name> or configmap/<namespace>/<name> (remove it to make the schedule yours)"
            )
    return errors
