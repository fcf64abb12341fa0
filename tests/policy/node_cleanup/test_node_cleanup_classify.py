from __future__ import annotations

from typing import Any

import pytest

from kustodian.policy.node_cleanup import (
    ANNOTATION_NODE_UID,
    INDEXERS,
    PV_BY_CLAIM,
    PV_BY_NODE,
    NodeCleanupReason,
    NodeSnapshot,
    affinity_node_names,
    classify_pv,
    node_exists,
    node_uid,
)
from kustodian.policy.store import ListView

SC = "local-nvme"
HOST = "kubernetes.io/hostname"


def expr(*values: str, key: str = HOST, operator: str = "In") -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def term(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(exprs)}


def local_pv(
    *terms: dict[str, Any],
    name: str = "pv-1",
    sc: str = SC,
    node_uid: str | None = None,
    affinity: Any = "terms",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"local": {"path": "/mnt/disks/ssd0"}, "storageClassName": sc}
    if affinity == "terms":
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": list(terms)}}
    elif affinity is not None:
        spec["nodeAffinity"] = affinity
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if node_uid is not None:
        meta["annotations"] = {ANNOTATION_NODE_UID: node_uid}
    return {"metadata": meta, "spec": spec}


def node(name: str, hostname: str | None = None, uid: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}"}
    if hostname is not None:
        meta["labels"] = {HOST: hostname}
    return {"metadata": meta}


def nodes(*objs: dict[str, Any]) -> NodeSnapshot:
    return NodeSnapshot.from_nodes(objs)


EKS_NODE = node("ip-10-0-1-23.ec2.internal", hostname="ip-10-0-1-23", uid="eks-uid")

CLASSIFY_CASES: list[tuple[str, dict[str, Any], NodeSnapshot, list[str], bool, NodeCleanupReason]] = [
    (
        "node-exists-by-name",
        local_pv(term(expr("n1"))),
        nodes(node("n1", "n1")),
        [SC],
        False,
        NodeCleanupReason.NODE_EXISTS,
    ),
    ("node-missing", local_pv(term(expr("n1"))), nodes(node("n2", "n2")), [SC], True, NodeCleanupReason.NODE_MISSING),
    ("no-nodes-at-all", local_pv(term(expr("n1"))), nodes(), [SC], True, NodeCleanupReason.NODE_MISSING),
    (
        "eks-affinity-uses-hostname-label-not-node-name",
        local_pv(term(expr("ip-10-0-1-23"))),
        nodes(EKS_NODE),
        [SC],
        False,
        NodeCleanupReason.NODE_EXISTS,
    ),
    (
        "eks-affinity-uses-node-name",
        local_pv(term(expr("ip-10-0-1-23.ec2.internal"))),
        nodes(EKS_NODE),
        [SC],
        False,
        NodeCleanupReason.NODE_EXISTS,
    ),
    (
        "terms-union-one-node-left",
        local_pv(term(expr("gone")), term(expr("n2"))),
        nodes(node("n2", "n2")),
        [SC],
        False,
        NodeCleanupReason.NODE_EXISTS,
    ),
    (
        "terms-union-all-gone",
        local_pv(term(expr("gone-a")), term(expr("gone-b"))),
        nodes(node("n2", "n2")),
        [SC],
        True,
        NodeCleanupReason.NODE_MISSING,
    ),
    (
        "expressions-intersect-existing-node-outside-intersection-is-ignored",
        local_pv(term(expr("gone", "n2"), expr("gone", "n3"))),
        nodes(node("n2", "n2"), node("n3", "n3")),
        [SC],
        True,
        NodeCleanupReason.NODE_MISSING,
    ),
    (
        "expressions-intersect-node-in-intersection-exists",
        local_pv(term(expr("n1", "n2"), expr("n2", "n3"))),
        nodes(node("n2", "n2")),
        [SC],
        False,
        NodeCleanupReason.NODE_EXISTS,
    ),
    (
        "contradictory-expressions-are-malformed",
        local_pv(term(expr("a"), expr("b"))),
        nodes(),
        [SC],
        False,
        NodeCleanupReason.MALFORMED_NODE_AFFINITY,
    ),
    ("empty-opt-in-list", local_pv(term(expr("gone"))), nodes(), [], False, NodeCleanupReason.NOT_OPTED_IN),
    (
        "other-storage-class",
        local_pv(term(expr("gone")), sc="other"),
        nodes(),
        [SC],
        False,
        NodeCleanupReason.NOT_OPTED_IN,
    ),
    (
        "non-local-pv",
        {"metadata": {"name": "csi"}, "spec": {"csi": {"driver": "x"}, "storageClassName": SC}},
        nodes(),
        [SC],
        False,
        NodeCleanupReason.NOT_LOCAL,
    ),
    ("missing-affinity", local_pv(affinity=None), nodes(), [SC], False, NodeCleanupReason.NO_NODE_AFFINITY),
    (
        "affinity-not-an-object",
        local_pv(affinity="junk"),
        nodes(),
        [SC],
        False,
        NodeCleanupReason.MALFORMED_NODE_AFFINITY,
    ),
    ("no-required", local_pv(affinity={}), nodes(), [SC], False, NodeCleanupReason.MALFORMED_NODE_AFFINITY),
    ("empty-terms", local_pv(), nodes(), [SC], False, NodeCleanupReason.MALFORMED_NODE_AFFINITY),
    ("empty-term", local_pv({"matchExpressions": []}), nodes(), [SC], False, NodeCleanupReason.MALFORMED_NODE_AFFINITY),
    ("term-not-object", local_pv("x"), nodes(), [SC], False, NodeCleanupReason.MALFORMED_NODE_AFFINITY),  # type: ignore[arg-type]
    (
        "values-not-strings",
        local_pv(term({"key": HOST, "operator": "In", "values": [1]})),
        nodes(),
        [SC],
        False,
        NodeCleanupReason.MALFORMED_NODE_AFFINITY,
    ),
    (
        "values-missing",
        local_pv(term({"key": HOST, "operator": "In"})),
        nodes(),
        [SC],
        False,
        NodeCleanupReason.MALFORMED_NODE_AFFINITY,
    ),
    (
        "operator-notin",
        local_pv(term(expr("n1", operator="NotIn"))),
        nodes(),
        [SC],
        False,
        NodeCleanupReason.UNSUPPORTED_OPERATOR,
    ),
    (
        "operator-exists",
        local_pv(term({"key": HOST, "operator": "Exists"})),
        nodes(),
        [SC],
        False,
        NodeCleanupReason.UNSUPPORTED_OPERATOR,
    ),
    (
        "other-key-in-same-term",
        local_pv(term(expr("gone"), expr("zone-a", key="topology.kubernetes.io/zone"))),
        nodes(),
        [SC],
        False,
        NodeCleanupReason.UNSUPPORTED_KEY,
    ),
    (
        "unsupported-term-poisons-the-union",
        local_pv(term(expr("gone")), term(expr("x", key="topology.kubernetes.io/zone"))),
        nodes(),
        [SC],
        False,
        NodeCleanupReason.UNSUPPORTED_KEY,
    ),
    (
        "match-fields",
        local_pv({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gone"]}]}),
        nodes(),
        [SC],
        False,
        NodeCleanupReason.UNSUPPORTED_KEY,
    ),
    (
        "lookup-error-counts-as-exists",
        local_pv(term(expr("gone"))),
        NodeSnapshot(lookup_failed=True),
        [SC],
        False,
        NodeCleanupReason.NODE_LOOKUP_FAILED,
    ),
]


@pytest.mark.parametrize(
    ("pv", "snapshot", "opted_in", "stale", "reason"),
    [c[1:] for c in CLASSIFY_CASES],
    ids=[c[0] for c in CLASSIFY_CASES],
)
def test_classify_pv(
    pv: dict[str, Any], snapshot: NodeSnapshot, opted_in: list[str], stale: bool, reason: NodeCleanupReason
) -> None:
    status = classify_pv(pv, snapshot, opted_in)
    assert (status.stale, status.reason) == (stale, reason)
    assert status.detail
    if not stale:
        assert status.record_node_uid is None


def test_stale_status_names_the_nodes() -> None:
    status = classify_pv(local_pv(term(expr("b")), term(expr("a"))), nodes(), [SC])
    assert status.node_names == ("a", "b")


def test_affinity_errors_carry_field_path() -> None:
    got = affinity_node_names(local_pv(term(expr("n1")), term(expr("x", operator="NotIn"))))
    assert got.skip_reason == NodeCleanupReason.UNSUPPORTED_OPERATOR
    path = "spec.nodeAffinity.required.nodeSelectorTerms[1].matchExpressions[0].operator"
    assert got.detail.startswith(path)
    assert got.node_names == frozenset()


RECREATED_CASES: list[tuple[str, dict[str, Any], NodeSnapshot, bool, NodeCleanupReason, str | None]] = [
    (
        "same-uid-is-the-same-machine",
        local_pv(term(expr("n1")), node_uid="old"),
        nodes(node("n1", "n1", uid="old")),
        False,
        NodeCleanupReason.NODE_EXISTS,
        None,
    ),
    (
        "new-uid-under-same-name-is-stale",
        local_pv(term(expr("n1")), node_uid="old"),
        nodes(node("n1", "n1", uid="new")),
        True,
        NodeCleanupReason.NODE_RECREATED,
        None,
    ),
    (
        "new-uid-found-through-hostname-label",
        local_pv(term(expr("ip-10-0-1-23")), node_uid="old"),
        nodes(EKS_NODE),
        True,
        NodeCleanupReason.NODE_RECREATED,
        None,
    ),
    (
        "no-recorded-uid-records-it",
        local_pv(term(expr("n1"))),
        nodes(node("n1", "n1", uid="u1")),
        False,
        NodeCleanupReason.NODE_EXISTS,
        "u1",
    ),
    (
        "multi-node-pv-not-checked",
        local_pv(term(expr("n1", "n2")), node_uid="old"),
        nodes(node("n1", "n1", uid="new")),
        False,
        NodeCleanupReason.NODE_EXISTS,
        None,
    ),
    (
        "ambiguous-hostname-label-not-checked",
        local_pv(term(expr("h")), node_uid="old"),
        nodes(node("a", "h", uid="x"), node("b", "h", uid="y")),
        False,
        NodeCleanupReason.NODE_EXISTS,
        None,
    ),
    (
        "lookup-error-still-wins",
        local_pv(term(expr("n1")), node_uid="old"),
        NodeSnapshot(lookup_failed=True),
        False,
        NodeCleanupReason.NODE_LOOKUP_FAILED,
        None,
    ),
]


@pytest.mark.parametrize(
    ("pv", "snapshot", "stale", "reason", "record"),
    [c[1:] for c in RECREATED_CASES],
    ids=[c[0] for c in RECREATED_CASES],
)
def test_recreated_node_detection(
    pv: dict[str, Any], snapshot: NodeSnapshot, stale: bool, reason: NodeCleanupReason, record: str | None
) -> None:
    status = classify_pv(pv, snapshot, [SC], detect_recreated=True)
    assert (status.stale, status.reason, status.record_node_uid) == (stale, reason, record)


def test_recreated_detection_is_off_by_default() -> None:
    pv = local_pv(term(expr("n1")), node_uid="old")
    status = classify_pv(pv, nodes(node("n1", "n1", uid="new")), [SC])
    assert (status.stale, status.record_node_uid) == (False, None)


def test_node_directory_helpers() -> None:
    snap = nodes(EKS_NODE)
    assert node_exists(snap, "ip-10-0-1-23") and node_exists(snap, "ip-10-0-1-23.ec2.internal")
    assert not node_exists(snap, "ip-10-0-9-9")
    assert node_uid(snap, "ip-10-0-1-23") == "eks-uid"
    assert node_exists(NodeSnapshot(lookup_failed=True), "anything")
    assert node_uid(NodeSnapshot(lookup_failed=True), "anything") is None


def test_indexers_through_list_view() -> None:
    pv_a = local_pv(term(expr("n1", "n2")), term(expr("n3")), name="a")
    pv_a["spec"]["claimRef"] = {"namespace": "db", "name": "data-0", "uid": "c1"}
    pv_b = local_pv(term(expr("n1", operator="NotIn")), name="b")
    view = ListView(
        {"PersistentVolume": [pv_a, pv_b], "Node": [EKS_NODE, node("bare")]},
        INDEXERS,
    )
    assert [p["metadata"]["name"] for p in view.by_index("PersistentVolume", PV_BY_NODE, "n3")] == ["a"]
    assert view.by_index("PersistentVolume", PV_BY_NODE, "n1") == [pv_a]
    assert view.by_index("PersistentVolume", PV_BY_CLAIM, "db/data-0") == [pv_a]
