"""Per-kind transforms that keep a cached object to what policy reads (client-go's SetTransform).

The generic ``kube.cache.slim`` already drops ``managedFields`` and the last-applied
annotation.  Pods are the bulk of a cluster (150k in the benchmark) and policy
only needs their identity, node and claimed volumes, so their cached form keeps
just that.  Repeated strings (namespaces, node names, phases) are interned: a
cluster has few distinct values and many copies.
"""

from __future__ import annotations

import sys
from typing import Any

Obj = dict[str, Any]


def _i(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) else value


def slim_pod(pod: Obj) -> Obj:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    claims = [
        {"name": _i(v.get("name")), "persistentVolumeClaim": {"claimName": _i(v["persistentVolumeClaim"].get(
            "claimName"))}}
        for v in spec.get("volumes") or []
        if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)
    ]
    slim_meta: Obj = {k: meta[k] for k in ("name", "uid", "resourceVersion") if k in meta}
    if "namespace" in meta:
        slim_meta["namespace"] = _i(meta["namespace"])
    if meta.get("deletionTimestamp"):
        slim_meta["deletionTimestamp"] = meta["deletionTimestamp"]
    out: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": slim_meta,
                "spec": {"nodeName": _i(spec.get("nodeName")), "volumes": claims}}
    phase = (pod.get("status") or {}).get("phase")
    if phase:
        out["status"] = {"phase": _i(phase)}
    return out


def intern_common(obj: Obj) -> Obj:
    """Intern the values most objects repeat: namespace, labels, class, driver, node, pool."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        if "namespace" in meta:
            meta["namespace"] = _i(meta["namespace"])
        labels = meta.get("labels")
        if isinstance(labels, dict):
            meta["labels"] = {_i(k): _i(v) for k, v in labels.items()}
    spec = obj.get("spec")
    if isinstance(spec, dict):
        for key in ("storageClassName", "nodeName", "volumeMode", "persistentVolumeReclaimPolicy"):
            if key in spec:
                spec[key] = _i(spec[key])
        csi = spec.get("csi")
        if isinstance(csi, dict):
            csi["driver"] = _i(csi.get("driver"))
            attrs = csi.get("volumeAttributes")
            if isinstance(attrs, dict):
                csi["volumeAttributes"] = {_i(k): _i(v) for k, v in attrs.items()}
    status = obj.get("status")
    if isinstance(status, dict) and "phase" in status:
        status["phase"] = _i(status["phase"])
    return obj


TRANSFORMS = {"Pod": slim_pod}
