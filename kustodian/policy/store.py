"""The read-only view of the cluster that policy functions receive.

A ``ClusterView`` is what the webhook and the controllers hand to policy: it is
backed by the watch caches in production and by plain lists in tests.  Resources
are named by a *kind key*: ``"Kind"`` for the core group, ``"Kind.group"``
otherwise (``"PersistentVolume"``, ``"StorageClass.storage.k8s.io"``,
``"CephBlockPool.ceph.rook.io"``).  Secondary indexes are declared by the policy
modules themselves (``Indexers``) so that the hot path is a dict lookup, not a
scan over 50,000 objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from kustodian.policy.objects import RawObject

# An indexer maps one object to the index keys it should be found under.
Indexer = Callable[[RawObject], Iterable[str]]
# kind key -> index name -> indexer
Indexers = Mapping[str, Mapping[str, Indexer]]


class ClusterView(Protocol):
    """Read access to cached objects.  Implementations must never call the API server."""

    def has_kind(self, kind: str) -> bool:
        """True when this view holds ``kind`` at all (its CRD exists and its cache synced)."""
        ...

    def get(self, kind: str, namespace: str, name: str) -> RawObject | None: ...

    def list(self, kind: str, namespace: str | None = None) -> Sequence[RawObject]: ...

    def by_index(self, kind: str, index: str, key: str) -> Sequence[RawObject]: ...


class ListView:
    """A ``ClusterView`` over in-memory lists: for tests, ``--from DIR`` and the CLI.

    Index lookups evaluate the indexers given at construction, so a policy module's
    indexers are exercised exactly as the watch cache exercises them.
    """

    def __init__(self, objects: Mapping[str, Iterable[RawObject]], indexers: Indexers | None = None) -> None:
        self._objects: dict[str, list[RawObject]] = {k: list(v) for k, v in objects.items()}
        self._indexes: dict[tuple[str, str], dict[str, list[RawObject]]] = {}
        for kind, named in (indexers or {}).items():
            for index_name, fn in named.items():
                table: dict[str, list[RawObject]] = {}
                for obj in self._objects.get(kind, []):
                    for key in fn(obj):
                        table.setdefault(key, []).append(obj)
                self._indexes[(kind, index_name)] = table

    def has_kind(self, kind: str) -> bool:
        return kind in self._objects

    def get(self, kind: str, namespace: str, name: str) -> RawObject | None:
        for obj in self._objects.get(kind, []):
            meta: Any = obj.get("metadata") or {}
            if meta.get("name") == name and (meta.get("namespace") or "") == namespace:
                return obj
        return None

    def list(self, kind: str, namespace: str | None = None) -> Sequence[RawObject]:
        objs = self._objects.get(kind, [])
        if namespace is None:
            return objs
        return [o for o in objs if ((o.get("metadata") or {}).get("namespace") or "") == namespace]

    def by_index(self, kind: str, index: str, key: str) -> Sequence[RawObject]:
        try:
            return self._indexes[(kind, index)].get(key, [])
        except KeyError:
            raise KeyError(f"index {index!r} is not declared for {kind}") from None


def kind_key(api_version: str, kind: str) -> str:
    """``("ceph.rook.io/v1", "CephNFS")`` -> ``"CephNFS.ceph.rook.io"``; core group -> ``"Pod"``."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return f"{kind}.{group}" if group else kind
