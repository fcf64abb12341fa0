"""Rules as data: the loader, its error report, admin rules, declared indexes."""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.errors import FieldProblem
from kustodian.policy.deletion import ROOK_RULES, RuleError, decide_delete, load_rules, rook_rules
from kustodian.policy.deletion.schema import MATCHER_TYPES

from .builders import Obj, key_of, obj, storage_class, view

PVC_RULE: dict[str, Any] = {
    "name": "pvc-needs-its-storageclass",
    "provider": "StorageClass.storage.k8s.io",
    "dependent": "PersistentVolumeClaim",
    "match": {"type": "field-ref", "field": "spec.storageClassName", "scope": "cluster"},
}


def pvc(name: str, namespace: str, storage_class_name: str) -> Obj:
    return obj("v1", "PersistentVolumeClaim", name, namespace, {"storageClassName": storage_class_name})


def test_builtin_rules_load_through_the_public_loader() -> None:
    rules = rook_rules()
    assert len(rules.rules) == len(ROOK_RULES) == 70  # 62 Rook + its accounts' buckets + 7 ceph-csi-operator
    assert len({r.name for r in rules.rules}) == len(rules.rules)
    assert load_rules(ROOK_RULES) == rules


def test_admin_rule_storageclass_blocked_by_pvcs() -> None:
    rules = rook_rules().merged(load_rules([PVC_RULE]))
    fast = storage_class("fast", "ebs.csi.aws.com")
    objects = [fast, pvc("data-1", "db", "fast"), pvc("data-0", "apps", "fast"), pvc("other", "apps", "slow")]
    decision = decide_delete(key_of(fast), fast, view(*objects, rules=rules), rules)
    assert not decision.allowed
    assert decision.message == (
        'StorageClass "fast" cannot be deleted: it has dependents: '
        "PersistentVolumeClaims: [apps/data-0, db/data-1]"
    )


def test_admin_rule_storageclass_without_pvcs_is_allowed() -> None:
    rules = load_rules([PVC_RULE])
    slow = storage_class("slow", "ebs.csi.aws.com")
    decision = decide_delete(
        key_of(slow), slow, view(slow, pvc("data-0", "apps", "fast"), rules=rules), rules
    )
    assert decision.allowed and not decision.message


def test_indexers_cover_admin_rules() -> None:
    indexers = load_rules([PVC_RULE]).indexers()
    assert set(indexers["PersistentVolumeClaim"]) == {"kustodian.io/field:spec.storageClassName"}
    assert set(indexers["StorageClass.storage.k8s.io"]) == {"kustodian.io/namespace"}
    assert list(
        indexers["PersistentVolumeClaim"]["kustodian.io/field:spec.storageClassName"](
            pvc("a", "apps", "fast")
        )
    ) == ["fast"]


def _rule(**overrides: Any) -> dict[str, Any]:
    return {**PVC_RULE, **overrides}


EXPECTED_TYPES = ", ".join(MATCHER_TYPES)
BAD: list[tuple[str, Any, list[str]]] = [
    ("not-a-list", {"provider": "x"}, ["rules: must be a list of rules"]),
    ("rule-not-a-mapping", ["nope"], ["rules[0]: must be a mapping"]),
    ("missing-field", [_rule(match={"type": "field-ref"})], ["rules[0].match.field: required"]),
    ("missing-match-type", [_rule(match={"field": "spec.x"})], ["rules[0].match.type: required"]),
    (
        "unknown-match-type",
        [_rule(match={"type": "regex"})],
        [f"rules[0].match.type: unknown matcher type 'regex' (expected one of: {EXPECTED_TYPES})"],
    ),
    (
        "misspelt-key",
        [{k if k != "provider" else "provdier": v for k, v in PVC_RULE.items()}],
        ["rules[0].provider: required", "rules[0].provdier: unknown field"],
    ),
    (
        "snake-case-key",
        [_rule(skip_if={"kind": "CephCluster.ceph.rook.io", "field": "a", "equals": True})],
        ["rules[0].skip_if: unknown field"],
    ),
    (
        "bad-kind-key",
        [_rule(provider="storageclass")],
        [
            "rules[0].provider: must be a kind key like 'PersistentVolume' or 'CephBlockPool.ceph.rook.io', "
            "not 'storageclass' (did you mean 'StorageClass.storage.k8s.io'?)"  # kubectl's spelling, named
        ],
    ),
    (
        "bad-field-path",
        [_rule(match={"type": "field-ref", "field": "spec..x"})],
        ["rules[0].match.field: must be a dotted field path like 'spec.storageClassName', not 'spec..x'"],
    ),
    (
        "bad-template",
        [_rule(match={"type": "field-ref", "field": "spec.x", "values": ["{nam}"]})],
        ["rules[0].match.values[0]: unknown placeholder(s) ['nam'] in '{nam}'; use {name} or {namespace}"],
    ),
    (
        "bad-scope",
        [_rule(match={"type": "field-ref", "field": "spec.x", "scope": "world"})],
        ["rules[0].match.scope: Input should be 'namespace' or 'cluster'"],
    ),
    (
        "where-missing-equals",
        [_rule(match={"type": "same-namespace", "where": [{"field": "spec.x"}]})],
        ["rules[0].match.where[0].equals: required"],
    ),
    (
        "csi-volume-without-attributes",
        [
            _rule(
                provider="CephBlockPool.ceph.rook.io",
                dependent="PersistentVolume",
                match={"type": "csi-volume", "driverSuffix": ".rbd.csi.ceph.com"},
            )
        ],
        ["rules[0].match: needs poolAttributes, nameAttributes or matchAll"],
    ),
    (
        "csi-volume-on-pvcs",
        [
            _rule(
                provider="CephBlockPool.ceph.rook.io",
                match={"type": "csi-volume", "driverSuffix": ".rbd.csi.ceph.com", "poolAttributes": ["pool"]},
            )
        ],
        ["rules[0].dependent: csi-volume matches PersistentVolume only, not 'PersistentVolumeClaim'"],
    ),
    (
        "pool-ref-on-provider-without-pools",
        [_rule(match={"type": "pool-ref", "fields": ["spec.pool"]})],
        [
            "rules[0].match: pool-ref needs a provider whose pools are known (CephBlockPool.ceph.rook.io, "
            "CephFilesystem.ceph.rook.io, CephObjectStore.ceph.rook.io, CephObjectZone.ceph.rook.io), "
            "not 'StorageClass.storage.k8s.io'"
        ],
    ),
    (
        "cosi-bucket-on-other-kind",
        [_rule(provider="CephObjectStore.ceph.rook.io", match={"type": "cosi-bucket"})],
        [
            "rules[0].dependent: cosi-bucket matches Bucket.objectstorage.k8s.io only, "
            "not 'PersistentVolumeClaim'"
        ],
    ),
    (
        "every-bad-rule-reported",
        [_rule(match={"type": "field-ref"}), PVC_RULE, _rule(dependent="pvc", extra=1)],
        [
            "rules[0].match.field: required",
            "rules[2].dependent: must be a kind key like 'PersistentVolume' or "
            "'CephBlockPool.ceph.rook.io', not 'pvc' (did you mean 'PersistentVolumeClaim'?)",
            "rules[2].extra: unknown field",
        ],
    ),
]


@pytest.mark.parametrize(("data", "problems"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_rules_refused_with_every_problem(data: Any, problems: list[str]) -> None:
    with pytest.raises(RuleError) as caught:
        load_rules(data)
    assert sorted(map(str, caught.value.problems)) == sorted(problems)
    assert str(caught.value) == "invalid deletion rules: " + "; ".join(map(str, caught.value.problems))


def test_error_paths_use_the_given_source() -> None:
    with pytest.raises(RuleError) as caught:
        load_rules([_rule(match={"type": "field-ref"})], source="deletionRules")
    assert caught.value.problems == (FieldProblem("deletionRules[0].match.field", "required"),)
