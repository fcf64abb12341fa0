"""Raw-object builders and a tiny JSON-patch applier for the reclaim policy tests.

Objects are plain dicts shaped like what the API server sends (the seed's
``rook-ceph-block``/``rbd-pvc`` examples, trimmed).  The applier understands only
what ``policy.jsonpatch.diff`` emits (add/replace/remove on object members), which
is the point: it checks the ops the API server would apply, not our own code.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from kustodian.policy.reclaim.annotations import APPLIED, SCHEDULE, SOURCE

CM_NAMESPACE = "csi-addons-system"
CM_NAME = "csi-addons-reclaim-config"
CM_SOURCE = f"configmap/{CM_NAMESPACE}/{CM_NAME}"


def pvc(
    name: str = "rbd-pvc",
    namespace: str = "test",
    storage_class: str | None = "rook-ceph-block",
    annotations: Mapping[str, str] | None = None,
    *,
    deleting: bool = False,
    resource_version: str = "2311226",
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": "7388ae15-3ee4-4051-90d5-0661181b36d6",
        "resourceVersion": resource_version,
    }
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    if deleting:
        metadata["deletionTimestamp"] = "2024-07-11T08:00:00Z"
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}


def kustodian_pvc(schedule: str, source: str, **kwargs: Any) -> dict[str, Any]:
    """A PVC whose schedule Kustodian wrote (marker present, applied == schedule)."""
    extra = dict(kwargs.pop("annotations", None) or {})
    return pvc(annotations={SCHEDULE: schedule, SOURCE: source, APPLIED: schedule, **extra}, **kwargs)


def namespace(name: str = "test", annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "annotations": dict(annotations or {})}}


def storageclass(name: str = "rook-ceph-block", annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "annotations": dict(annotations or {})},
        "provisioner": "rook-ceph.rbd.csi.ceph.com",
    }


def configmap(config: Mapping[str, Any] | str, *, ns: str = CM_NAMESPACE, name: str = CM_NAME) -> dict[str, Any]:
    text = config if isinstance(config, str) else json.dumps(config)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": {"config.json": text}}


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def apply_patch(obj: Mapping[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply RFC 6902 add/replace/remove ops on object members; raise like a server would."""
    doc: dict[str, Any] = copy.deepcopy(dict(obj))
    for op in ops:
        tokens = [_unescape(t) for t in op["path"].split("/")[1:]]
        parent: Any = doc
        for token in tokens[:-1]:
            parent = parent[token]  # KeyError: the parent must exist (the classic annotations bug)
        last = tokens[-1]
        if not isinstance(parent, dict):
            raise TypeError(f"{op['path']}: parent is not an object")
        if op["op"] == "add":
            parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "replace":
            if last not in parent:
                raise KeyError(f"replace of missing member {op['path']}")
            parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            del parent[last]
        else:
            raise ValueError(f"unexpected op {op['op']}")
    return doc
