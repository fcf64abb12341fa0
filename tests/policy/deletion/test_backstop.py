"""The deletion backstop's record (``policy.deletion.backstop``): its keys, what it holds, how a
stale kind keeps its entries, how it splits into shards and reads back.  The record as the chart's
policy reads it on a real API server is ``tests/e2e/test_deletion_backstop.py``."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kustodian.policy.deletion.backstop import (
    CONFIRMED_ANNOTATION,
    ENTRIES_KEY,
    KEY_LIMIT,
    NAMESPACES_SCOPE,
    RECORD_API_VERSION,
    RECORD_KIND,
    RECORD_LABEL,
    RECORD_SHARDS,
    SHARD_LIMIT,
    ProviderFacts,
    data_bytes,
    key_scope,
    merged,
    namespace_key,
    pack,
    plan_record,
    protected_entries,
    read_record,
    record_key,
    shard_document,
    shard_of,
    unpack,
)

CONFIGMAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")  # validation.IsConfigMapKey
POOLS = ("ceph.rook.io", "cephblockpools")
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("parts", "key"), [
    (("ceph.rook.io", "cephblockpools", "rook-ceph", "replicapool"), "ceph.rook.io_cephblockpools_rook-ceph_replicapool"),
    (("ceph.rook.io", "cephclusters", "rook-ceph", "my.cluster"), "ceph.rook.io_cephclusters_rook-ceph_my.cluster"),
    (("storage.k8s.io", "storageclasses", "", "fast"), "storage.k8s.io_storageclasses__fast"),
    (("", "persistentvolumes", "", "pv-1"), "_persistentvolumes__pv-1"),
], ids=["namespaced", "dotted-name", "cluster-scoped", "core-group"])
def test_a_key_names_one_object_in_a_configmap_keys_alphabet(parts: tuple[str, str, str, str], key: str) -> None:
    assert record_key(*parts) == key
    assert CONFIGMAP_KEY.fullmatch(key)
    assert key_scope(key) == parts[:2]


def test_a_key_too_long_for_a_configmap_is_not_made() -> None:
    name = "n" * (KEY_LIMIT - len("ceph.rook.io_cephblockpools_rook-ceph_"))
    assert record_key(*POOLS, "rook-ceph", name) is not None
    assert record_key(*POOLS, "rook-ceph", name + "n") is None


def test_a_namespace_is_keyed_as_a_cluster_scoped_core_object() -> None:
    assert namespace_key("rook-ceph") == "_namespaces__rook-ceph"
    assert key_scope("_namespaces__rook-ceph") == NAMESPACES_SCOPE
    assert key_scope("not-ours") == ("", "")


def pool(name: str, dependents: int, outside: int | None = None, *, ns: str = "rook-ceph",
         waived: bool = False) -> ProviderFacts:
    return ProviderFacts(record_key(*POOLS, ns, name), ns, dependents,
                         dependents if outside is None else outside, waived)


@pytest.mark.parametrize(("facts", "want"), [
    ([pool("a", 3)], {"ceph.rook.io_cephblockpools_rook-ceph_a": "3", "_namespaces__rook-ceph": "3"}),
    ([pool("a", 0)], {}),
    ([pool("a", 2, outside=0)], {"ceph.rook.io_cephblockpools_rook-ceph_a": "2"}),
    ([pool("a", 2, waived=True)], {"ceph.rook.io_cephblockpools_rook-ceph_a": "2"}),
    ([pool("a", 2, waived=True), pool("b", 1)],
     {"ceph.rook.io_cephblockpools_rook-ceph_a": "2", "ceph.rook.io_cephblockpools_rook-ceph_b": "1",
      "_namespaces__rook-ceph": "1"}),
    ([pool("a", 2), pool("b", 5, ns="other")],
     {"ceph.rook.io_cephblockpools_rook-ceph_a": "2", "ceph.rook.io_cephblockpools_other_b": "5",
      "_namespaces__rook-ceph": "2", "_namespaces__other": "5"}),
    ([ProviderFacts(record_key("storage.k8s.io", "storageclasses", "", "fast"), "", 4)],
     {"storage.k8s.io_storageclasses__fast": "4"}),
    ([ProviderFacts(None, "rook-ceph", 2, 2)], {"_namespaces__rook-ceph": "2"}),
], ids=["dependents-and-outside", "none", "only-inside", "waived-namespace", "one-waived-one-not",
        "two-namespaces", "cluster-scoped", "key-too-long-still-blocks-its-namespace"])
def test_the_entries_are_what_the_webhook_would_refuse(facts: list[ProviderFacts], want: dict[str, str]) -> None:
    assert protected_entries(facts) == want


def test_an_entry_of_a_stale_scope_stays_until_fresh_knowledge_drops_it() -> None:
    previous = {"ceph.rook.io_cephblockpools_rook-ceph_a": "3", "ceph.rook.io_cephnfses_rook-ceph_n": "1",
                "_namespaces__rook-ceph": "3"}
    computed = {"ceph.rook.io_cephnfses_rook-ceph_m": "2"}
    fresh_pools = merged(computed, previous, lambda scope: scope == POOLS)
    assert fresh_pools == {"ceph.rook.io_cephnfses_rook-ceph_m": "2", "ceph.rook.io_cephnfses_rook-ceph_n": "1",
                           "_namespaces__rook-ceph": "3"}
    all_fresh = merged(computed, previous, lambda scope: True)
    assert all_fresh == computed
    # what fresh knowledge computes wins over what was recorded
    assert merged({"ceph.rook.io_cephblockpools_rook-ceph_a": "1"}, previous, lambda s: False)[
        "ceph.rook.io_cephblockpools_rook-ceph_a"] == "1"


def test_shards_split_the_entries_by_a_stable_hash() -> None:
    entries = {record_key(*POOLS, "rook-ceph", f"pool-{i}") or "": str(i) for i in range(200)}
    plan = plan_record(entries)
    assert len(plan.shards) == RECORD_SHARDS and not plan.oversize
    assert plan.entries == 200
    for index, data in enumerate(plan.shards):
        assert data is not None and data  # 200 keys reach every shard
        assert all(shard_of(k) == index for k in data)
    assert shard_of("ceph.rook.io_cephblockpools_rook-ceph_p1") == 2  # crc32: the same in every process


def test_ten_thousand_providers_fit_in_well_under_a_mebibyte() -> None:
    entries = {record_key(*POOLS, "rook-ceph", f"replicapool-{i:05d}") or "": "12" for i in range(10_000)}
    assert data_bytes(entries) < 1024 * 1024 * 0.6
    assert not plan_record(entries).oversize


def test_a_shard_over_the_limit_is_not_written() -> None:
    big = {f"_persistentvolumes__{i:0200d}": "1" for i in range(SHARD_LIMIT // 200 * 2)}
    plan = plan_record(big, shards=1)
    assert plan.oversize == (0,) and plan.shards == (None,)


def cm(index: int, data: Any, confirmed: str | None = None, rv: str = "7") -> dict[str, Any]:
    """A shard's BackstopRecord; a dict of strings is packed as the writer packs it, anything else
    is its spec as given."""
    meta: dict[str, Any] = {"name": f"rec-{index}", "resourceVersion": rv}
    if confirmed is not None:
        meta["annotations"] = {CONFIRMED_ANNOTATION: confirmed}
    if isinstance(data, dict) and ENTRIES_KEY not in data and all(isinstance(v, str) for v in data.values()):
        data = {ENTRIES_KEY: pack(data)}
    return {"apiVersion": RECORD_API_VERSION, "kind": RECORD_KIND, "metadata": meta, "spec": data}


def test_the_record_reads_back_with_its_oldest_confirmation() -> None:
    state = read_record([cm(0, {"a_b_c_d": "1"}, "2026-11-28T12:00:00Z"),
                         cm(1, {"e_f_g_h": "2"}, "2026-11-28T11:59:00Z")])
    assert state.complete and state.entries == {"a_b_c_d": "1", "e_f_g_h": "2"}
    assert state.confirmed_at == NOW - timedelta(minutes=1)
    assert state.age(NOW) == timedelta(minutes=1)
    assert state.size() == data_bytes({"a_b_c_d": "1"}) + data_bytes({"e_f_g_h": "2"})


@pytest.mark.parametrize("shards", [
    [cm(0, {"a_b_c_d": "1"}, "2026-11-28T12:00:00Z"), None],
    [cm(0, {"a_b_c_d": "1"}, "2026-11-28T12:00:00Z"), cm(1, {})],
    [cm(0, {"a_b_c_d": "1"}, "2026-11-28T12:00:00Z"), cm(1, {}, "yesterday")],
], ids=["a-shard-missing", "never-confirmed", "unreadable-time"])
def test_a_record_with_a_shard_missing_or_unconfirmed_has_no_age(shards: list[dict[str, Any] | None]) -> None:
    state = read_record(shards)
    assert state.confirmed_at is None and state.age(NOW) is None
    assert state.complete == (shards[1] is not None)


def test_data_that_is_not_a_packed_string_reads_as_nothing() -> None:
    assert read_record([cm(0, {ENTRIES_KEY: 1})]).entries == {}
    assert read_record([cm(0, ["not", "a", "map"])]).entries == {}
    assert read_record([cm(0, {"a_b_c_d": 1, "e_f_g_h": "2"})]).entries == {}  # a key each: not the format
    # the record's first format, a ConfigMap's data, is not read as entries
    assert read_record([{**cm(0, {}), "spec": None, "data": {ENTRIES_KEY: "\na_b_c_d=3\n"}}]).entries == {}
    assert read_record([cm(0, {ENTRIES_KEY: "\nnot a line\na_b_c_d=3\n=4\n"})]).entries == {"a_b_c_d": "3"}


def test_a_shard_is_one_string_in_which_each_key_is_found_exactly() -> None:
    """What the policy's CEL does: \n<key>= found in the string, never a key that only ends or
    begins like it (a key holds neither \n nor =)."""
    entries = {"ceph.rook.io_cephblockpools_ns_a": "2", "ceph.rook.io_cephblockpools_ns_ab": "5"}
    text = pack(entries)
    assert text == "\nceph.rook.io_cephblockpools_ns_a=2\nceph.rook.io_cephblockpools_ns_ab=5\n"
    assert unpack(text) == entries
    assert "\nceph.rook.io_cephblockpools_ns_a=" in text and "\nceph.rook.io_cephblockpools_ns_b=" not in text
    assert "\nrook.io_cephblockpools_ns_a=" not in text
    # the count, as the policy's messageExpression splits it out
    assert text.split("\nceph.rook.io_cephblockpools_ns_ab=", 1)[1].split("\n", 1)[0] == "5"
    assert pack({}) == "\n" and unpack("\n") == {}


def test_a_shard_document_is_a_labelled_backstop_record_with_its_confirmation() -> None:
    doc = shard_document("rec", "kustodian", 3, {"a_b_c_d": "1"}, confirmed_at=NOW, resource_version="9",
                         labels={"app": "x"})
    assert doc["metadata"] == {"name": "rec-3", "namespace": "kustodian", "resourceVersion": "9",
                               "labels": {"app": "x", RECORD_LABEL: "rec"},
                               "annotations": {CONFIRMED_ANNOTATION: "2026-11-28T12:00:00Z"}}
    assert (doc["apiVersion"], doc["kind"]) == ("kustodian.io/v1alpha1", "BackstopRecord")
    assert doc["spec"] == {ENTRIES_KEY: "\na_b_c_d=1\n"} and "data" not in doc
    assert "annotations" not in shard_document("rec", "ns", 0, {}, confirmed_at=None)["metadata"]
