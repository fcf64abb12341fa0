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

A projection (``projection``) also shares what many objects hold alike: a projected
sub-object made only of such values (a PersistentVolume's ``spec``: its class, CSI driver,
cluster and pool) is kept once, as a read-only ``Shared`` dict, by every object that holds the
same values.  Of a PV's five projected dicts, three are then shared by every PV of its pool:
the webhook's PV cache holds ~0.7 KiB a PV instead of ~1.3 KiB.  Values that name one object
(a CephFS subvolume path) make their sub-object unique: it is kept as it is, and the table of
shared parts stays bounded (``SHARED_MAX``).

A copy keeps the decoded string objects themselves.  A str holds its own characters,
never a reference into the response it was decoded from, so what a list costs after it
ends is what the copies hold, provided the pages go as they are copied
(``kube.cache.WatchCache``: one page at a time, its garbage collected before the next).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from kustodian.policy.objects import Frozen

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


class Shared(Frozen):
    """A projected sub-object that every cached object holding the same values shares.

    Read-only (``policy.objects.Frozen``): a change through one holder would change them all, so
    every way to change it in place raises ``TypeError``; a copy is a plain dict."""

    __slots__ = ()


SHARED_MAX = 4096
"""Shared parts a projection remembers; when full it starts over (parts already handed out stay
shared), so sub-objects that are all different cost no more than a table of this size."""

_SCALARS = frozenset({str, int, float, bool, type(None)})


def projection(paths: Iterable[tuple[str, ...]]) -> Projection:
    """A transform keeping only ``paths`` (plus apiVersion and kind) of an object: what the
    policy reads (``policy.deletion.projection.fields_read``).  A path through something that
    is not a mapping keeps that value whole; strings along the way are interned, and a
    sub-object made only of scalars and shared parts is ``Shared`` with every other object
    holding the same values (the module docstring)."""
    paths = tuple(paths)
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
    return Projection(tuple(paths), tree)


class Projection:
    """A projection (``projection``) as a callable; ``paths`` is what it keeps, so a list can be
    decoded to just that (``kube.decode.page_decoder``)."""

    __slots__ = ("_shared", "_tree", "paths")

    def __init__(self, paths: tuple[tuple[str, ...], ...], tree: dict[str, Any]) -> None:
        self.paths = paths
        self._tree = tree
        self._shared: dict[tuple[Any, ...], Shared] = {}

    def __call__(self, obj: Obj) -> Obj:
        return _project(obj, self._tree, self._shared, top=True)


_OWN = frozenset({"name", "uid", "resourceVersion", "deletionTimestamp"})
"""Metadata that names one object: kept as decoded, not interned."""
_AS_IS: Any = object()
"""A projection tree's leaf for a value kept whole, not interned (None: kept whole, interned)."""


def _project(obj: Obj, tree: dict[str, Any], shared: dict[tuple[Any, ...], Shared], *,
             top: bool = False) -> Obj:
    out: Obj = {}
    if top:
        for key in ("apiVersion", "kind"):
            if key in obj:
                out[key] = _i(obj[key])
    # what names the sub-object's content, if it can be shared: its items, a shared child by
    # identity (equal children are the same object; the table keeps them alive while it holds
    # a key naming them)
    parts: list[Any] | None = None if top else []
    for key, sub in tree.items():
        if key not in obj:
            continue
        value = obj[key]
        if sub is _AS_IS:
            out[key] = value
            parts = None
            continue
        value = _i(value) if sub is None or not isinstance(value, dict) else _project(value, sub, shared)
        out[key] = value
        if parts is not None:
            kind = type(value)
            if kind is Shared:
                parts += (key, kind, id(value))
            elif kind in _SCALARS:
                parts += (key, kind, value)  # True is not 1 here, nor 1 1.0
            else:  # a list or a dict kept whole: this object's own
                parts = None
    if parts is None:
        return out
    content = tuple(parts)
    have = shared.get(content)
    if have is None:
        if len(shared) >= SHARED_MAX:
            shared.clear()
        have = shared[content] = Shared(out)
    return have
