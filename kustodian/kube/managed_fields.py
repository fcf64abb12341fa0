"""Server-side apply's field ownership (``metadata.managedFields``), read: who owns a field, and
the part of an object one manager owns (client-go's ``Extract<Kind>`` for any object).

Why Kustodian needs it: Helm 4 installs with server-side apply, so its field manager owns every
field of the chart's webhook configurations. A replica that arms a webhook's ``failurePolicy``
with a plain patch would take that field over, and Helm's next ``helm upgrade`` (which applies
``Ignore`` again) would fail on the conflict. So a field an *applier* owns is changed by applying,
as that manager, exactly what it owns with that one value changed (``owned`` below): the applier
stays its only owner, and its next apply simply sets its own value again, no conflict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["applier_of", "owned"]


def _fields_at(fields: Mapping[str, Any], path: Sequence[str]) -> bool:
    node: Any = fields
    for step in path:
        if not isinstance(node, Mapping) or step not in node:
            return False
        node = node[step]
    return True


def applier_of(obj: Mapping[str, Any], path: Sequence[str]) -> str | None:
    """The manager that owns ``path`` (FieldsV1 steps: ``f:webhooks``, ``k:{"name":"x"}``,
    ``f:failurePolicy``) through server-side apply, or None (an updater owns it, or nobody)."""
    entries = (obj.get("metadata") or {}).get("managedFields") or []
    for entry in entries:
        if (isinstance(entry, Mapping) and entry.get("operation") == "Apply" and not entry.get("subresource")
                and isinstance(entry.get("fieldsV1"), Mapping) and _fields_at(entry["fieldsV1"], path)):
            manager = entry.get("manager")
            return manager if isinstance(manager, str) else None
    return None


def owned(obj: Mapping[str, Any], manager: str) -> dict[str, Any]:
    """The part of ``obj`` that ``manager`` owns through server-side apply (values as they are
    now), with ``apiVersion``, ``kind`` and ``metadata.name``: what it would apply to keep it."""
    fields: dict[str, Any] = {}
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        if (isinstance(entry, Mapping) and entry.get("manager") == manager
                and entry.get("operation") == "Apply" and not entry.get("subresource")
                and isinstance(entry.get("fieldsV1"), Mapping)):
            fields = entry["fieldsV1"]
            break
    part = _extract(obj, fields) if fields else {}  # an empty set owns nothing (a leaf is `f:x: {}`)
    out: dict[str, Any] = part if isinstance(part, dict) else {}
    meta = dict(out.get("metadata") or {})
    meta["name"] = (obj.get("metadata") or {}).get("name")
    namespace = (obj.get("metadata") or {}).get("namespace")
    if namespace:
        meta["namespace"] = namespace
    return {**out, "apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": meta}


def _extract(value: Any, fields: Mapping[str, Any]) -> Any:
    """``value`` cut down to the FieldsV1 set ``fields`` (a leaf, ``{}``, is the whole value)."""
    children = {key: sub for key, sub in fields.items() if key != "."}
    if not children:
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, sub in children.items():
            if key.startswith("f:") and key[2:] in value:
                out[key[2:]] = _extract(value[key[2:]], sub if isinstance(sub, Mapping) else {})
        return out
    if isinstance(value, list):
        items: list[Any] = []
        keyed = [(json.loads(key[2:]), sub) for key, sub in children.items() if key.startswith("k:")]
        values = [json.loads(key[2:]) for key in children if key.startswith("v:")]
        indexed = {int(key[2:]): sub for key, sub in children.items() if key.startswith("i:")}
        for i, item in enumerate(value):
            if i in indexed:
                items.append(_extract(item, indexed[i]))
            elif item in values:
                items.append(item)
            elif isinstance(item, Mapping):
                for want, sub in keyed:
                    if all(item.get(k) == v for k, v in want.items()):
                        part = _extract(item, sub if isinstance(sub, Mapping) else {})
                        items.append({**want, **part} if isinstance(part, dict) else part)
                        break
        return items
    return value
