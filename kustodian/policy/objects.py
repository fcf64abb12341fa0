"""Safe readers for raw Kubernetes objects (plain ``dict``s decoded from JSON).

Admission requests and watch events carry objects we never re-serialise through a
model, so every field read must tolerate absent keys and wrong types: a malformed
object should produce a clear decision, never a ``KeyError`` on the hot path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

RawObject: TypeAlias = Mapping[str, Any]


class Frozen(dict[str, Any]):
    """A read-only sub-object that many objects may hold at once (the watch cache keeps the
    parts every object of a pool has in common once: ``kube.slim.Shared``).

    Every way to change it in place raises ``TypeError``, and it holds only scalars and other
    ``Frozen`` parts (``kube.slim`` builds it so), so it never changes: what is derived from it
    alone may be kept per part (``policy.deletion.indexing.spec_keyed``).  A copy
    (``copy.copy``, ``copy.deepcopy``, ``dict(...)``) is a plain dict, free to change.  Equal to
    a dict with the same items, as a dict is."""

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a cached object's shared part is read-only: copy it (dict(...)) to change it")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        import copy

        return {k: copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


def field(obj: RawObject | None, *path: str) -> Any:
    """Return the value at ``path`` (e.g. ``field(pv, "spec", "csi", "driver")``) or ``None``."""
    cur: Any = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def str_field(obj: RawObject | None, *path: str) -> str:
    """Like :func:`field`, but ``""`` unless the value is a string."""
    value = field(obj, *path)
    return value if isinstance(value, str) else ""


def map_field(obj: RawObject | None, *path: str) -> Mapping[str, Any]:
    """Like :func:`field`, but ``{}`` unless the value is a mapping."""
    value = field(obj, *path)
    return value if isinstance(value, Mapping) else {}


def list_field(obj: RawObject | None, *path: str) -> list[Any]:
    """Like :func:`field`, but ``[]`` unless the value is a list."""
    value = field(obj, *path)
    return value if isinstance(value, list) else []


def name(obj: RawObject | None) -> str:
    return str_field(obj, "metadata", "name")


def namespace(obj: RawObject | None) -> str:
    return str_field(obj, "metadata", "namespace")


def uid(obj: RawObject | None) -> str:
    return str_field(obj, "metadata", "uid")


def annotations_of(obj: RawObject | None) -> Mapping[str, Any]:
    return map_field(obj, "metadata", "annotations")


def labels_of(obj: RawObject | None) -> Mapping[str, Any]:
    return map_field(obj, "metadata", "labels")


def is_deleting(obj: RawObject | None) -> bool:
    return bool(str_field(obj, "metadata", "deletionTimestamp"))


def ref(obj: RawObject | None) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects), for messages and logs."""
    ns, nm = namespace(obj), name(obj)
    return f"{ns}/{nm}" if ns else nm


def json_type(value: Any) -> str:
    """What a decoded JSON value is, as an error message names it ("a string", "null", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
