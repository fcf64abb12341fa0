"""A list page decoded to what a projection keeps (msgspec), and orjson for everything else.

A PersistentVolume as the API server sends it is ~2.8 KB of JSON, most of it ``managedFields``
and annotations no policy reads; orjson builds every dict and string of it and the cache's
projection (``kube.slim.projection``) then drops nine tenths.  Given the projection's paths as
``TypedDict`` types, msgspec builds only those fields and skips the rest as it scans: a page of
500 PVs decodes in about a fifth of orjson's time and the projection has less to walk (measured:
``docs/performance.md``, "The largest clusters").  The decode is one call into C that holds the
GIL: a fifth of the time is a fifth of the pause it causes the webhook's event loop.

What the projection then makes of the page is the same either way: every path it reads is
decoded whole, and so are the fields every cache reads (identity, ``resourceVersion``).  A page
whose shape does not fit the types (a path through a value that is not an object: a custom
resource's schema allows it) is decoded again by orjson, which takes anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypedDict

import msgspec
import orjson

Obj = dict[str, Any]
Path = tuple[str, ...]

READ_BY_EVERY_CACHE: tuple[Path, ...] = (
    ("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"),
    ("metadata", "resourceVersion"), ("metadata", "uid"), ("metadata", "deletionTimestamp"))
"""What a cache reads of any object besides its projection (its key and resourceVersion)."""


def page_decoder(paths: Iterable[Path]) -> Callable[[bytes], Obj]:
    """``decode(body)`` of a List response keeping its items' ``paths`` (and
    ``READ_BY_EVERY_CACHE``); the page's own ``metadata`` (``continue``, ``resourceVersion``)
    whole."""
    tree: dict[str, Any] = {}
    for path in (*READ_BY_EVERY_CACHE, *paths):
        node: dict[str, Any] | None = tree
        for part in path[:-1]:
            assert node is not None
            nxt = node.setdefault(part, {})
            if nxt is None:  # a shorter path keeps this subtree whole
                node = None
                break
            node = nxt
        if node is not None:
            node[path[-1]] = None  # kept whole (a longer path's subtree is kept whole too)
    items: Any = list[_typed(tree, "Item")] | None  # type: ignore[misc]
    fields = {"apiVersion": Any, "kind": Any, "metadata": Any, "items": items}
    decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(TypedDict("Page", fields, total=False))  # type: ignore[operator]

    def decode(body: bytes) -> Obj:
        try:
            out: Obj = decoder.decode(body)
        except msgspec.DecodeError:  # not this shape (or not JSON: orjson says so as it would anyway)
            out = orjson.loads(body)
        return out

    return decode


def _typed(tree: dict[str, Any], name: str) -> Any:
    fields = {key: Any if sub is None else _typed(sub, f"{name}_{key}") | None for key, sub in tree.items()}
    return TypedDict(name, fields, total=False)  # type: ignore[operator]
