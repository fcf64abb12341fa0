"""Per-kind transforms that keep a cached object to what policy reads (client-go's SetTransform).

One slim shape per kind: a process caches each kind once (``runtime.manager``), whichever
components read it, so the shape here is what *every* reader needs, and a component that
needs another shape of a kind it shares is refused at assembly.  The generic
``kube.cache.slim`` already drops ``managedFields`` and the last-applied annotation.

* Pods are the bulk of a cluster (150k in the benchmark): node cleanup reads their claims,
  node and StatefulSet owner, capacity reservations their node and phase, so their cached
  form keeps identity, node, claimed volumes, the controlling StatefulSet and the phase.
* Nodes carry their images, conditions and addresses in ``status`` (kilobytes each) that
  nothing reads: node cleanup reads names, UIDs and the hostname label, capacity
  reservations csi-baremetal's node ID (an annotation, else a label, under a configurable
  key), so the cached form keeps identity, labels and annotations.

Repeated strings (namespaces, node names, phases) are interned: a
cluster has few distinct values and many copies.  What names one object (its name,
uid, resourceVersion, deletionTimestamp) is not: nothing shares it, and the table of
interned strings would grow by an entry per value (~10 MiB at 100k PersistentVolumes)
to save nothing.

A copy keeps the decoded string objects themselves.  A str holds its own characters,
never a reference into the response it was decoded from, so what a list costs after it
ends is what the copies hold, provided the pages go as they are copied
(``kube.cache.WatchCache``: one page at a time, its garbage collected before the next).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
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
    # the controller's reference only when it is a StatefulSet (node cleanup recovers its pods)
    owners = [{"apiVersion": _i(o.get("apiVersion")), "kind": "StatefulSet", "name": o.get("name"),
               "controller": True}
              for o in meta.get("ownerReferences") or []
              if isinstance(o, dict) and o.get("kind") == "StatefulSet" and o.get("controller") is True]
    if owners:
        slim_meta["ownerReferences"] = owners
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


def slim_node(node: Obj) -> Obj:
    meta = node.get("metadata") or {}
    kept: Obj = {k: meta[k] for k in ("name", "uid", "resourceVersion", "deletionTimestamp") if meta.get(k)}
    for key in ("labels", "annotations"):
        values = meta.get(key)
        if isinstance(values, dict) and values:
            kept[key] = {_i(k): _i(v) for k, v in values.items()}
    return {"apiVersion": "v1", "kind": "Node", "metadata": kept}


TRANSFORMS = {"Pod": slim_pod, "Node": slim_node}


def projection(paths: Iterable[tuple[str, ...]]) -> Callable[[Obj], Obj]:
    """A transform keeping only ``paths`` (plus apiVersion and kind) of an object: what the
    policy reads (``policy.deletion.projection.fields_read``).  A path through something that
    is not a mapping keeps that value whole; strings along the way are interned."""
    tree: dict[str, Any] = {}
    for p in paths:
        node = tree
        for part in p[:-1]:
            nxt = node.setdefault(part, {})
            if nxt is None or nxt is _AS_IS:  # a shorter path already keeps this subtree whole
                break
            node = nxt
        else:
            node[p[-1]] = _AS_IS if len(p) == 2 and p[0] == "metadata" and p[1] in _OWN else None
    return lambda obj: _project(obj, tree, top=True)


_OWN = frozenset({"name", "uid", "resourceVersion", "deletionTimestamp"})
"""Metadata that names one object: kept as decoded, not interned."""
_AS_IS: Any = object()
"""A projection tree's leaf for a value kept whole, not interned (None: kept whole, interned)."""


def _project(obj: Obj, tree: dict[str, Any], *, top: bool = False) -> Obj:
    out: Obj = {}
    if top:
        for key in ("apiVersion", "kind"):
            if key in obj:
                out[key] = _i(obj[key])
    for key, sub in tree.items():
        if key not in obj:
            continue
        value = obj[key]
        if sub is _AS_IS:
            out[key] = value
        elif sub is None or not isinstance(value, dict):
            out[key] = _i(value)
        else:
            out[key] = _project(value, sub)
    return out
