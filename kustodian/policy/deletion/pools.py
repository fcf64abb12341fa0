"""Which Ceph pools a Rook provider owns, named exactly as Rook names them.

Consumers (CephNFS, CephClient caps, CSI volumes, StorageClasses) refer to pools
by their Ceph name, never to the CR, so a guard must derive the names the way the
operator does:

* CephBlockPool: ``spec.name`` if set, else ``metadata.name``;
* CephFilesystem (Rook's ``generateMetaDataPoolName``/``generateDataPoolNames``):
  ``<fs>-metadata``, or ``<fs>-<metadataPool.name>``; per data pool ``<fs>-data<i>``
  when unnamed, ``<fs>-<name>`` when named; with ``preservePoolNames`` a given name
  is the pool name as it is;
* CephObjectStore / CephObjectZone: every pool starting ``<name>.rgw.``, the
  realm-wide ``.rgw.root``, and every pool ``spec.sharedPools`` names (top level and
  ``poolPlacements``).  Shared pools are CephBlockPools the store also *consumes*
  (``rook/blockpool-objectstores``); counting them as the store's too errs large.

Object-store pools are a *prefix*, and an index answers exact keys only, so pool
references are indexed under their exact name plus one key per ``.rgw.``
boundary in the name (``a.rgw.meta`` -> ``prefix:a.rgw.``); a provider then looks
up its prefix like any other key.  When unsure the sets err on the large side:
a false block costs an annotation, a false allow costs data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kustodian.policy.objects import RawObject, field, list_field, name, str_field

RGW_MARKER = ".rgw."
RGW_ROOT_POOL = ".rgw.root"


@dataclass(frozen=True)
class PoolSet:
    """Pool names a provider owns: ``exact`` names and name ``prefixes`` (each ending in ``.rgw.``)."""

    exact: frozenset[str] = frozenset()
    prefixes: frozenset[str] = frozenset()

    def lookup_keys(self, scope: str) -> list[str]:
        """Index keys under which references to these pools (in ``scope``) are found."""
        keys = [f"{scope}/pool:{p}" for p in sorted(self.exact)]
        keys += [f"{scope}/prefix:{p}" for p in sorted(self.prefixes)]
        return keys


def pool_index_keys(scope: str, pool: str) -> Iterator[str]:
    """Index keys for a reference to ``pool`` made from ``scope`` (a namespace or a clusterID)."""
    if not pool:
        return
    yield f"{scope}/pool:{pool}"
    start = pool.find(RGW_MARKER, 1)  # a leading ".rgw." (".rgw.root") names no store
    while start > 0:
        yield f"{scope}/prefix:{pool[: start + len(RGW_MARKER)]}"
        start = pool.find(RGW_MARKER, start + 1)


def _block_pool(obj: RawObject) -> PoolSet:
    return PoolSet(exact=frozenset({str_field(obj, "spec", "name") or name(obj)}))


def _filesystem(obj: RawObject) -> PoolSet:
    fs = name(obj)
    preserve = field(obj, "spec", "preservePoolNames") is True

    def pool(given: str, unnamed: str) -> str:
        if not given:
            return f"{fs}-{unnamed}"
        return given if preserve else f"{fs}-{given}"

    pools = {pool(str_field(obj, "spec", "metadataPool", "name"), "metadata")}
    for i, data_pool in enumerate(list_field(obj, "spec", "dataPools")):
        pools.add(pool(str_field(data_pool, "name"), f"data{i}"))
    return PoolSet(exact=frozenset(pools))


SHARED_POOL_FIELDS = (
    "spec.sharedPools.metadataPoolName",
    "spec.sharedPools.dataPoolName",
    "spec.sharedPools.poolPlacements.*.metadataPoolName",
    "spec.sharedPools.poolPlacements.*.dataPoolName",
    "spec.sharedPools.poolPlacements.*.dataNonECPoolName",
    "spec.sharedPools.poolPlacements.*.storageClasses.*.dataPoolName",
)


def values_at(obj: Any, dotted: str) -> Iterator[str]:
    """Non-empty strings at ``dotted``, where a ``*`` segment walks every item of a list."""
    yield from _walk(obj, dotted.split("."))


def _walk(cur: Any, parts: list[str]) -> Iterator[str]:
    if not parts:
        if isinstance(cur, str) and cur:
            yield cur
        elif isinstance(cur, list):
            yield from (v for v in cur if isinstance(v, str) and v)
        return
    head, rest = parts[0], parts[1:]
    if head == "*":
        for item in cur if isinstance(cur, list) else ():
            yield from _walk(item, rest)
    elif isinstance(cur, Mapping):
        yield from _walk(cur.get(head), rest)


def _object_store(obj: RawObject) -> PoolSet:
    shared = {pool for f in SHARED_POOL_FIELDS for pool in values_at(obj, f)}
    return PoolSet(
        exact=frozenset({RGW_ROOT_POOL} | shared), prefixes=frozenset({f"{name(obj)}{RGW_MARKER}"})
    )


POOL_DERIVATIONS: Mapping[str, Callable[[RawObject], PoolSet]] = {
    "CephBlockPool.ceph.rook.io": _block_pool,
    "CephFilesystem.ceph.rook.io": _filesystem,
    "CephObjectStore.ceph.rook.io": _object_store,
    "CephObjectZone.ceph.rook.io": _object_store,
}


def provider_pools(kind: str, obj: RawObject) -> PoolSet | None:
    """The pools of ``obj`` if Kustodian knows how ``kind`` names its pools, else ``None``."""
    derive = POOL_DERIVATIONS.get(kind)
    return derive(obj) if derive else None
