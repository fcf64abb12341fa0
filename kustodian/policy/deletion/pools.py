"""Which Ceph pools a Rook provider owns, named exactly as Rook names them.

Consumers (CephNFS, CephClient caps, CSI volumes, StorageClasses) refer to pools
by their Ceph name, never to the CR, so a guard must derive the names the way the
operator does:

* CephBlockPool: ``spec.name`` if set, else ``metadata.name``;
* CephFilesystem: ``<fs>-metadata`` and, per data pool, ``<fs>-<name>`` or
  ``<fs>-data<i>`` when unnamed;
* CephObjectStore / CephObjectZone: every pool starting ``<name>.rgw.``, the
  realm-wide ``.rgw.root``, and any ``spec.sharedPools`` it uses.

Object-store pools are a *prefix*, and an index answers exact keys only, so pool
references are indexed under their exact name plus one key per ``.rgw.``
boundary in the name (``a.rgw.meta`` -> ``prefix:a.rgw.``); a provider then looks
up its prefix like any other key.  When unsure the sets err on the large side:
a false block costs an annotation, a false allow costs data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from kustodian.policy.objects import RawObject, list_field, map_field, name, str_field

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
    pools = {f"{fs}-metadata"}
    for i, data_pool in enumerate(list_field(obj, "spec", "dataPools")):
        pool_name = str_field(data_pool, "name")
        pools.add(f"{fs}-{pool_name}" if pool_name else f"{fs}-data{i}")
    return PoolSet(exact=frozenset(pools))


def _object_store(obj: RawObject) -> PoolSet:
    shared = map_field(obj, "spec", "sharedPools")
    exact = {RGW_ROOT_POOL} | {
        pool for pool in (str_field(shared, "metadataPoolName"), str_field(shared, "dataPoolName")) if pool
    }
    return PoolSet(exact=frozenset(exact), prefixes=frozenset({f"{name(obj)}{RGW_MARKER}"}))


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
