"""Pool names derived as Rook derives them, and the keys that make prefix pools indexable."""

from __future__ import annotations

import pytest

from kustodian.policy.deletion.pools import PoolSet, pool_index_keys, provider_pools

from .builders import Obj, blockpool, ceph, filesystem, key_of, object_store

CASES: list[tuple[str, Obj, PoolSet | None]] = [
    ("blockpool-metadata-name", blockpool("replicapool"), PoolSet(frozenset({"replicapool"}))),
    ("blockpool-spec-name-wins", blockpool("builtin-mgr", pool_name=".mgr"), PoolSet(frozenset({".mgr"}))),
    ("filesystem-unnamed-data-pool", filesystem("myfs"), PoolSet(frozenset({"myfs-metadata", "myfs-data0"}))),
    (
        "filesystem-named-data-pools",
        filesystem("myfs", data_pools=("replicated", "ec")),
        PoolSet(frozenset({"myfs-metadata", "myfs-replicated", "myfs-ec"})),
    ),
    (
        "filesystem-mixed-data-pools-keep-their-index",
        filesystem("myfs", data_pools=("", "fast", "")),
        PoolSet(frozenset({"myfs-metadata", "myfs-data0", "myfs-fast", "myfs-data2"})),
    ),
    ("filesystem-no-data-pools", filesystem("myfs", data_pools=()), PoolSet(frozenset({"myfs-metadata"}))),
    (
        "objectstore",
        object_store("my-store"),
        PoolSet(frozenset({".rgw.root"}), frozenset({"my-store.rgw."})),
    ),
    (
        "objectstore-shared-pools",
        object_store("s", sharedPools={"metadataPoolName": "rgw-meta", "dataPoolName": "rgw-data"}),
        PoolSet(frozenset({".rgw.root", "rgw-meta", "rgw-data"}), frozenset({"s.rgw."})),
    ),
    (
        "objectzone",
        ceph("CephObjectZone", "zone-a"),
        PoolSet(frozenset({".rgw.root"}), frozenset({"zone-a.rgw."})),
    ),
    ("no-pools-for-nfs", ceph("CephNFS", "nfs"), None),
]


@pytest.mark.parametrize(("provider", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_provider_pools(provider: Obj, expected: PoolSet | None) -> None:
    assert provider_pools(key_of(provider), provider) == expected


KEY_CASES = [
    ("plain-pool", "replicapool", ["ns/pool:replicapool"]),
    ("rgw-pool", "my-store.rgw.meta", ["ns/pool:my-store.rgw.meta", "ns/prefix:my-store.rgw."]),
    ("rgw-root-names-no-store", ".rgw.root", ["ns/pool:.rgw.root"]),
    (
        "store-name-containing-rgw",
        "a.rgw.b.rgw.log",
        ["ns/pool:a.rgw.b.rgw.log", "ns/prefix:a.rgw.", "ns/prefix:a.rgw.b.rgw."],
    ),
    ("empty", "", []),
]


@pytest.mark.parametrize(("pool", "expected"), [c[1:] for c in KEY_CASES], ids=[c[0] for c in KEY_CASES])
def test_pool_index_keys(pool: str, expected: list[str]) -> None:
    assert list(pool_index_keys("ns", pool)) == expected


def test_lookup_keys_meet_index_keys_for_a_dotted_store_name() -> None:
    pools = provider_pools("CephObjectStore.ceph.rook.io", object_store("a.rgw.b", "ns"))
    assert pools is not None
    assert set(pools.lookup_keys("ns")) & set(pool_index_keys("ns", "a.rgw.b.rgw.log")) == {
        "ns/prefix:a.rgw.b.rgw."
    }
    assert not set(pools.lookup_keys("ns")) & set(pool_index_keys("ns", "a.rgw.log"))
