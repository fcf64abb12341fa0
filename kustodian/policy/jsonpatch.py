"""JSON diffs of two raw objects: RFC 6902 JSON Patch (admission) and RFC 7386 merge patch (writes).

Admission mutations are written as "change a copy of the object, then diff"
(controller-runtime's ``PatchResponseFromRaw``) instead of hand-assembling patch
operations: hand-written ops are where the classic bugs live -- ``add`` on
``/metadata/annotations/...`` when ``annotations`` does not exist (the API server
rejects the whole patch), an unescaped ``/`` in an annotation key
(``reclaimspace.csiaddons.openshift.io/schedule`` must be written
``reclaimspace.csiaddons.openshift.io~1schedule``), or a re-invoked webhook adding
the same op twice.  A diff has none of these by construction and is empty when
nothing changed.

Shape of the output, chosen for admission patches:

* only ``add``, ``replace`` and ``remove``; object members are diffed recursively;
* arrays are replaced whole: index-based ops are fragile (a concurrent change shifts
  indexes) and Kubernetes' lists we touch are small;
* equality is JSON equality, so ``true`` vs ``1`` or ``1`` vs ``1.0`` count as changes
  (Python's ``True == 1`` would hide them);
* ops are ordered: removals and replacements in the old object's key order, then
  additions in the new object's key order; values are deep copies.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kustodian.policy.objects import RawObject

__all__ = ["diff", "escape", "json_equal", "merge_diff"]


def escape(token: str) -> str:
    """RFC 6901 reference token escaping: ``~`` -> ``~0`` first, then ``/`` -> ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def diff(old: RawObject, new: RawObject) -> list[dict[str, Any]]:
    """The minimal ``add``/``replace``/``remove`` operations turning ``old`` into ``new``."""
    ops: list[dict[str, Any]] = []
    _diff_objects(old, new, "", ops)
    return ops


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``True != 1`` and ``1 != 1.0``."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _diff_objects(
    old: Mapping[str, Any], new: Mapping[str, Any], path: str, ops: list[dict[str, Any]]
) -> None:
    for key, old_value in old.items():
        member = f"{path}/{escape(key)}"
        if key not in new:
            ops.append({"op": "remove", "path": member})
            continue
        new_value = new[key]
        if isinstance(old_value, Mapping) and isinstance(new_value, Mapping):
            _diff_objects(old_value, new_value, member, ops)
        elif not json_equal(old_value, new_value):
            ops.append({"op": "replace", "path": member, "value": copy.deepcopy(new_value)})
    for key, new_value in new.items():
        if key not in old:
            ops.append({"op": "add", "path": f"{path}/{escape(key)}", "value": copy.deepcopy(new_value)})


def merge_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """RFC 7386 merge patch turning ``old`` into ``new`` (removed members become ``null``),
    with the same JSON equality as :func:`diff` (for controllers that write with merge patches)."""
    patch: dict[str, Any] = {}
    for key in old:
        if key not in new:
            patch[key] = None
    for key, new_value in new.items():
        old_value = old.get(key)
        if isinstance(old_value, Mapping) and isinstance(new_value, Mapping):
            sub = merge_diff(old_value, new_value)
            if sub:
                patch[key] = sub
        elif key not in old or not json_equal(old_value, new_value):
            patch[key] = new_value
    return patch
