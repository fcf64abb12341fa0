"""Decisions around the relationships: override, missing kinds, namespace teardown, explain, scale."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kustodian.policy.deletion import (
    ALLOW_ANNOTATION,
    DeleteDecision,
    ObjectRef,
    decide_delete,
    decide_namespace_delete,
    dependents_table,
    load_rules,
    rook_rules,
)

from .builders import (
    NS,
    IndexOnlyView,
    Obj,
    blockpool,
    ceph,
    client,
    cluster,
    key_of,
    nfs,
    obj,
    object_store,
    rbd_pv,
    view,
)

POOL_KEY = "CephBlockPool.ceph.rook.io"


def decide(
    provider: Obj, *others: Obj, missing: Sequence[str] = (), deleting_namespace: str | None = None
) -> DeleteDecision:
    return decide_delete(
        key_of(provider),
        provider,
        view(provider, *others, missing=missing),
        rook_rules(),
        deleting_namespace=deleting_namespace,
    )


OVERRIDE = [
    ("true", "true", True),
    ("true-any-case", "True", True),
    ("false", "false", False),
    ("empty", "", False),
    ("yes-is-not-true", "yes", False),
]


@pytest.mark.parametrize(("value", "overridden"), [c[1:] for c in OVERRIDE], ids=[c[0] for c in OVERRIDE])
def test_override_annotation(value: str, overridden: bool) -> None:
    pool = blockpool()
    pool["metadata"]["annotations"] = {ALLOW_ANNOTATION: value}
    decision = decide(pool, nfs("nfs-a", "replicapool"))
    assert decision.allowed is overridden
    assert decision.overridden is overridden
    assert decision.dependents == {"CephNFSes": (ObjectRef("CephNFS.ceph.rook.io", NS, "nfs-a"),)}
    if overridden:
        assert decision.message == (
            'CephBlockPool "rook-ceph/replicapool" is being deleted despite its dependents '
            "(kustodian.io/allow-delete-with-dependents=true): CephNFSes: [nfs-a]"
        )


def test_override_without_dependents_overrides_nothing() -> None:
    pool = blockpool()
    pool["metadata"]["annotations"] = {ALLOW_ANNOTATION: "true"}
    assert decide(pool) == DeleteDecision(allowed=True)


CASES: list[tuple[str, Obj, list[Obj], Sequence[str], str | None, bool]] = [
    ("unknown-provider-kind", obj("apps/v1", "Deployment", "web", NS), [], (), None, True),
    ("dependent-crd-not-installed", blockpool(), [], ["CephNFS.ceph.rook.io"], None, True),
    (
        "other-dependents-still-count-without-a-crd",
        blockpool(),
        [rbd_pv("pvc-1")],
        ["CephNFS.ceph.rook.io"],
        None,
        False,
    ),
    ("pv-kind-absent", blockpool(), [nfs("nfs-a", "replicapool")], ["PersistentVolume"], None, False),
    ("provider-kind-unknown-to-view", blockpool(), [rbd_pv("pvc-1")], [POOL_KEY], None, False),
    (
        "storageclass-kind-absent",
        blockpool(),
        [rbd_pv("pvc-1")],
        ["StorageClass.storage.k8s.io"],
        None,
        False,
    ),
    (
        "cluster-kind-absent-means-no-allow-uninstall",
        blockpool(),
        [rbd_pv("pvc-1")],
        ["CephCluster.ceph.rook.io"],
        None,
        False,
    ),
    ("bucketclass-kind-absent", object_store(), [], ["BucketClass.objectstorage.k8s.io"], None, True),
    (
        "terminating-namespace-inside-dependents-go-too",
        cluster(),
        [blockpool(), nfs("nfs-a", "x")],
        (),
        NS,
        True,
    ),
    (
        "terminating-namespace-outside-dependents-block",
        blockpool(),
        [nfs("nfs-a", "replicapool"), rbd_pv("pvc-1")],
        (),
        NS,
        False,
    ),
]


@pytest.mark.parametrize(
    ("provider", "others", "missing", "deleting_namespace", "allowed"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_decision_edges(
    provider: Obj, others: list[Obj], missing: Sequence[str], deleting_namespace: str | None, allowed: bool
) -> None:
    decision = decide(provider, *others, missing=missing, deleting_namespace=deleting_namespace)
    assert decision.allowed is allowed
    if allowed:
        assert decision == DeleteDecision(allowed=True)


def test_terminating_namespace_keeps_only_outside_dependents() -> None:
    decision = decide(blockpool(), nfs("nfs-a", "replicapool"), rbd_pv("pvc-1"), deleting_namespace=NS)
    assert list(decision.dependents) == ["PersistentVolumes"]


def test_a_provider_never_depends_on_itself() -> None:
    rules = load_rules(
        [{"provider": "ConfigMap", "dependent": "ConfigMap", "match": {"type": "same-namespace"}}]
    )
    cm, other = obj("v1", "ConfigMap", "a", "apps"), obj("v1", "ConfigMap", "b", "apps")
    alone = decide_delete("ConfigMap", cm, view(cm, rules=rules), rules)
    assert alone.allowed
    paired = decide_delete("ConfigMap", cm, view(cm, other, rules=rules), rules)
    assert paired.message == 'ConfigMap "apps/a" cannot be deleted: it has dependents: ConfigMaps: [b]'


def test_dependents_table() -> None:
    decision = decide(
        blockpool(),
        rbd_pv("pvc-2"),
        nfs("nfs-a", "replicapool"),
        rbd_pv("pvc-1"),
        ceph("CephBlockPoolRadosNamespace", "rns", blockPoolName="replicapool"),
    )
    assert dependents_table(decision) == [
        ("CephBlockPoolRadosNamespace", NS, "rns"),
        ("CephNFS", NS, "nfs-a"),
        ("PersistentVolume", "", "pvc-1"),
        ("PersistentVolume", "", "pvc-2"),
    ]
    assert dependents_table(DeleteDecision(allowed=True)) == []


def _overridden(o: Obj) -> Obj:
    o["metadata"]["annotations"] = {ALLOW_ANNOTATION: "true"}
    return o


OB_CLAIM = obj(
    "objectbucket.io/v1alpha1", "ObjectBucketClaim", "claim", "apps", {"storageClassName": "bucket"}
)
BUCKET_SC = obj(
    "storage.k8s.io/v1",
    "StorageClass",
    "bucket",
    provisioner="rook-ceph.ceph.rook.io/bucket",
    parameters={"objectStoreName": "my-store", "objectStoreNamespace": NS},
)
NAMESPACE_CASES: list[tuple[str, list[Obj], bool, str]] = [
    ("empty-namespace", [], True, ""),
    (
        "inside-dependents-do-not-block",
        [
            cluster(),
            blockpool(),
            nfs("nfs-a", "replicapool"),
            client("c", {"osd": "profile rbd pool=replicapool"}),
        ],
        True,
        "",
    ),
    (
        "pvs-on-its-pool-block",
        [cluster(), blockpool(), rbd_pv("pvc-1"), rbd_pv("pvc-2")],
        False,
        'Namespace "rook-ceph" cannot be deleted: it holds providers with dependents outside it: '
        'CephBlockPool "rook-ceph/replicapool" (PersistentVolumes: [pvc-1, pvc-2]); '
        # Rook's checkPVPresentInCluster: the cluster itself also holds the volumes
        'CephCluster "rook-ceph/rook-ceph" (PersistentVolumes: [pvc-1, pvc-2])',
    ),
    (
        "claims-in-other-namespaces-block",
        [object_store(), BUCKET_SC, OB_CLAIM, rbd_pv("pvc-x", pool="nope")],
        False,
        'Namespace "rook-ceph" cannot be deleted: it holds providers with dependents outside it: '
        'CephObjectStore "rook-ceph/my-store" (ObjectBucketClaims: [apps/claim])',
    ),
    (
        "several-providers-named",
        [blockpool(), object_store(), BUCKET_SC, OB_CLAIM, rbd_pv("pvc-1")],
        False,
        'Namespace "rook-ceph" cannot be deleted: it holds providers with dependents outside it: '
        'CephBlockPool "rook-ceph/replicapool" (PersistentVolumes: [pvc-1]); '
        'CephObjectStore "rook-ceph/my-store" (ObjectBucketClaims: [apps/claim])',
    ),
    (
        "allow-uninstall-with-volumes",
        [cluster(allow_uninstall_with_volumes=True), blockpool(), rbd_pv("pvc-1")],
        True,
        "",
    ),
    (
        "other-namespaces-providers-ignored",
        [blockpool(namespace="other"), rbd_pv("pvc-1", cluster_id="other")],
        True,
        "",
    ),
    (
        "overridden-provider-lets-it-through",
        [_overridden(blockpool()), rbd_pv("pvc-1")],
        True,
        'Namespace "rook-ceph" is being deleted although providers in it have dependents outside it '
        '(kustodian.io/allow-delete-with-dependents=true): CephBlockPool "rook-ceph/replicapool" '
        "(PersistentVolumes: [pvc-1])",
    ),
    (
        "only-unwaived-providers-block",
        [_overridden(blockpool()), rbd_pv("pvc-1"), object_store(), BUCKET_SC, OB_CLAIM],
        False,
        'Namespace "rook-ceph" cannot be deleted: it holds providers with dependents outside it: '
        'CephObjectStore "rook-ceph/my-store" (ObjectBucketClaims: [apps/claim])',
    ),
]


@pytest.mark.parametrize(
    ("objects", "allowed", "message"), [c[1:] for c in NAMESPACE_CASES], ids=[c[0] for c in NAMESPACE_CASES]
)
def test_namespace_teardown(objects: list[Obj], allowed: bool, message: str) -> None:
    decision = decide_namespace_delete(NS, view(*objects), rook_rules())
    assert decision.allowed is allowed
    assert decision.message == message
    assert decision.overridden is (allowed and bool(message))


def test_namespace_decision_lists_providers_and_outside_dependents() -> None:
    decision = decide_namespace_delete(
        NS, view(blockpool(), nfs("nfs-a", "replicapool"), rbd_pv("pvc-1")), rook_rules()
    )
    assert decision.providers == (ObjectRef(POOL_KEY, NS, "replicapool"),)
    assert dependents_table(decision) == [("PersistentVolume", "", "pvc-1")]


def test_fifty_thousand_pvs_decide_by_index_only() -> None:
    """Sanity, not a benchmark: a decision over 50k cached PVs only performs index lookups."""
    pvs = [
        rbd_pv(f"pvc-{i:05d}", pool="replicapool" if i % 1250 == 0 else f"pool-{i % 7}")
        for i in range(50_000)
    ]
    pool = blockpool()
    guarded = IndexOnlyView(view(pool, cluster(), nfs("nfs-a", "replicapool"), *pvs))
    decision = decide_delete(POOL_KEY, pool, guarded, rook_rules())
    assert len(decision.dependents["PersistentVolumes"]) == 40
    assert decision.message.endswith("pvc-48750]")
    assert len(guarded.lookups) <= 12, guarded.lookups

    guarded.lookups.clear()
    namespace_decision = decide_namespace_delete(NS, guarded, rook_rules())
    assert not namespace_decision.allowed
    assert len(guarded.lookups) <= 100, len(guarded.lookups)
