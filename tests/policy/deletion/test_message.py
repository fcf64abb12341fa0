"""The denial message: exact shape, sorting, per-group "and N more", the 1 KiB cap."""

from __future__ import annotations

import pytest

from kustodian.policy.deletion import MESSAGE_LIMIT, decide_delete, rook_rules
from kustodian.policy.deletion.message import Section, fit_message, plural

from .builders import NS, blockpool, key_of, nfs, rbd_pv, view

HEADER = 'CephBlockPool "rook-ceph/replicapool" cannot be deleted: it has dependents: '


def pv_name(i: int) -> str:
    return f"pvc-{i:08x}-1f2e-4d3c-8b4a-{i:012x}"  # shaped like a real pvc-<uid>


def test_message_exact_small() -> None:
    pool = blockpool()
    decision = decide_delete(
        key_of(pool),
        pool,
        view(pool, nfs("nfs-a", "replicapool"), rbd_pv("pvc-9a"), rbd_pv("pvc-1f")),
        rook_rules(),
    )
    assert decision.message == HEADER + "CephNFSes: [nfs-a]; PersistentVolumes: [pvc-1f, pvc-9a]"


def test_message_sorted_and_other_namespaces_qualified() -> None:
    pool = blockpool()
    deps = [nfs("zeta", "replicapool"), nfs("alpha", "replicapool"), rbd_pv("pvc-b"), rbd_pv("pvc-a")]
    decision = decide_delete(key_of(pool), pool, view(pool, *deps), rook_rules())
    assert decision.message == HEADER + "CephNFSes: [alpha, zeta]; PersistentVolumes: [pvc-a, pvc-b]"


@pytest.mark.parametrize("count", [40, 41, 500], ids=["40-pvs", "41-pvs", "500-pvs"])
def test_message_caps_pvs_with_and_n_more(count: int) -> None:
    pool = blockpool()
    names = [pv_name(i) for i in range(count)]
    decision = decide_delete(
        key_of(pool), pool, view(pool, nfs("nfs-a", "replicapool"), *(rbd_pv(n) for n in names)), rook_rules()
    )

    def expected(shown: int) -> str:
        listed = ", ".join(sorted(names)[:shown])
        return f"{HEADER}CephNFSes: [nfs-a]; PersistentVolumes: [{listed} and {count - shown} more]"

    shown = max(k for k in range(count) if len(expected(k).encode()) <= MESSAGE_LIMIT)
    assert decision.message == expected(shown)
    assert shown >= 15  # the cap still leaves plenty of names to act on
    assert len(decision.message.encode()) <= MESSAGE_LIMIT < len(expected(shown + 1).encode())
    assert "\n" not in decision.message
    assert len(decision.dependents["PersistentVolumes"]) == count  # the decision keeps them all


def test_every_group_keeps_a_place_under_the_cap() -> None:
    groups = tuple((f"Kind{i}s", tuple(f"{'x' * 60}-{j:03d}" for j in range(100))) for i in range(6))
    message = fit_message("Thing cannot be deleted: it has dependents: ", [Section(groups)])
    assert len(message.encode()) <= MESSAGE_LIMIT
    for title, _ in groups:
        assert f"{title}: [" in message
    assert message.count(" more]") == 6


def test_group_with_no_room_still_counts() -> None:
    message = fit_message("H: ", [Section((("Things", ("a" * 50, "b" * 50)),))], limit=20)
    assert message == "H: Things: [and 2 more]"


PLURALS = [
    ("CephNFS", "CephNFSes"),
    ("CephClient", "CephClients"),
    ("PersistentVolume", "PersistentVolumes"),
    ("CephBlockPool", "CephBlockPools"),
    ("ObjectBucketClaim", "ObjectBucketClaims"),
    ("StorageClass", "StorageClasses"),
    ("NetworkPolicy", "NetworkPolicies"),
    ("Gateway", "Gateways"),
    ("Endpoints", "Endpoints"),
    ("CephBlockPoolRadosNamespace", "CephBlockPoolRadosNamespaces"),
]


@pytest.mark.parametrize(("kind", "expected"), PLURALS, ids=[k for k, _ in PLURALS])
def test_plural(kind: str, expected: str) -> None:
    assert plural(kind) == expected


def test_pv_labels_are_bare_names_even_from_a_namespaced_provider() -> None:
    pool = blockpool(namespace=NS)
    decision = decide_delete(key_of(pool), pool, view(pool, rbd_pv("pvc-1")), rook_rules())
    assert decision.message.endswith("PersistentVolumes: [pvc-1]")
