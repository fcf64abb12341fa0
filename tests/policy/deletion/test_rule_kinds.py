"""A rule's kinds are checked where rules are loaded: a kind that does not exist is refused
with its field path and a did-you-mean; a CRD kind not served yet still loads (issue 33)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.policy.deletion import ROOK_RULES, RuleError, load_rules
from kustodian.policy.kinds import (
    BUILTIN_GROUPS,
    BUILTIN_KINDS,
    KNOWN_CRD_KINDS,
    close_kinds,
    kind_problem,
    known_kind,
    match_kind,
)

SC_RULE: dict[str, Any] = {"provider": "StorageClass.storage.k8s.io", "dependent": "PersistentVolumeClaim",
                           "match": {"type": "field-ref", "field": "spec.storageClassName", "scope": "cluster"}}


def rule(**kinds: Any) -> dict[str, Any]:
    return {**SC_RULE, **kinds}


@pytest.mark.parametrize(("field", "written", "meant"), [
    ("provider", "StorageClass", "StorageClass.storage.k8s.io"),
    ("provider", "Storageclass", "StorageClass.storage.k8s.io"),
    ("dependent", "PVC", "PersistentVolumeClaim"),
    ("dependent", "VolumeSnapshot", "VolumeSnapshot.snapshot.storage.k8s.io"),
    ("provider", "Cephblockpool.ceph.rook.io", "CephBlockPool.ceph.rook.io"),
    ("provider", "Deployment", "Deployment.apps"),
    ("provider", "StorageClas.storage.k8s.io", "StorageClass.storage.k8s.io"),
], ids=["no-group", "wrong-case", "short-name", "crd-no-group", "crd-wrong-case",
        "apps-no-group", "typo-in-builtin-group"])
def test_a_kind_that_does_not_exist_is_refused_with_its_path_and_a_did_you_mean(
        field: str, written: str, meant: str) -> None:
    with pytest.raises(RuleError) as exc:
        load_rules([rule(**{field: written})], source="rules")
    (problem,) = exc.value.problems
    assert problem.path == f"rules[0].{field}"
    assert f"did you mean {meant!r}" in problem.message
    assert repr(written) in problem.message


def test_a_skip_if_kind_is_checked_too() -> None:
    data = rule(skipIf={"kind": "CephCluster", "field": "spec.x", "equals": True})
    with pytest.raises(RuleError) as exc:
        load_rules([data], source="rules")
    assert [p.path for p in exc.value.problems] == ["rules[0].skipIf.kind"]
    assert "'CephCluster.ceph.rook.io'" in exc.value.problems[0].message


def test_every_bad_kind_is_reported_at_once() -> None:
    with pytest.raises(RuleError) as exc:
        load_rules([rule(provider="StorageClass"), rule(provider="Storageclass", dependent="PVC")],
                   source="rules.yaml")
    assert [p.path for p in exc.value.problems] == [
        "rules.yaml[0].provider", "rules.yaml[1].provider", "rules.yaml[1].dependent"]
    assert len(str(exc.value).splitlines()) == 1


def test_a_core_kind_with_no_close_match_says_how_kinds_are_written() -> None:
    assert kind_problem("Frobnicator") == (
        "'Frobnicator' is not a core-group kind (a kind of another group is written Kind.group)")


@pytest.mark.parametrize("key", [
    "StorageClass.storage.k8s.io", "PersistentVolumeClaim", "PersistentVolume", "Namespace",
    "VolumeSnapshot.snapshot.storage.k8s.io", "CephBlockPool.ceph.rook.io", "Bucket.objectstorage.k8s.io",
    "Widget.example.com",  # a CRD group Kustodian does not know: guarded once served
    "CephNewThing.ceph.rook.io",  # a kind a newer Rook may add
])
def test_existing_and_possible_kinds_load(key: str) -> None:
    assert kind_problem(key) is None
    load_rules([{"provider": key, "dependent": "PersistentVolumeClaim", "match": {"type": "same-namespace"}}])


def test_the_table_knows_every_kind_the_built_in_rules_name() -> None:
    known = {k.key for k in BUILTIN_KINDS + KNOWN_CRD_KINDS}
    named = {r[f] for r in ROOK_RULES for f in ("provider", "dependent")}
    named |= {r["skipIf"]["kind"] for r in ROOK_RULES if "skipIf" in r}
    assert named <= known
    load_rules(ROOK_RULES)  # the built-in rules pass the same check


def test_discovery_settles_a_typo_in_a_served_crd_group() -> None:
    served = {"ceph.rook.io": {"CephBlockPool", "CephCluster"}, "example.com": {"Widget"}}
    assert kind_problem("CephBlockPol.ceph.rook.io") is None  # offline: may be a newer Rook's kind
    why = kind_problem("CephBlockPol.ceph.rook.io", served)
    assert why is not None and "did you mean 'CephBlockPool.ceph.rook.io'" in why
    assert kind_problem("Widgets.example.com", served) is not None
    # a group the cluster does not serve: a CRD not installed yet, not an error
    assert kind_problem("Gadget.other.io", served) is None
    # a kind of a served group with no close match: a newer CRD may add it
    assert kind_problem("Totally.example.com", served) is None
    with pytest.raises(RuleError) as exc:
        load_rules([rule(provider="CephBlockPol.ceph.rook.io")], source="rules", served=served)
    assert exc.value.problems[0].path == "rules[0].provider"


def test_short_names_of_crds_never_shadow_a_core_kind() -> None:
    # Longhorn's Node and Volume, events.k8s.io's Event: the core kinds keep their names
    assert kind_problem("Node") is None
    assert kind_problem("Event") is None
    assert kind_problem("Node.longhorn.io") is None


# -- kubectl's TYPE (issue 36): match_kind and close_kinds, over the offline table --------------------

ALL_KINDS = sorted((*BUILTIN_KINDS, *KNOWN_CRD_KINDS), key=lambda k: (k.group not in BUILTIN_GROUPS, k.group))


@pytest.mark.parametrize(("written", "meant"), [
    ("CephBlockPool", "CephBlockPool.ceph.rook.io"),
    ("cephblockpools", "CephBlockPool.ceph.rook.io"),
    ("cephbp", "CephBlockPool.ceph.rook.io"),
    ("cephblockpool.ceph.rook.io", "CephBlockPool.ceph.rook.io"),
    ("cephblockpools.v1.ceph.rook.io", "CephBlockPool.ceph.rook.io"),
    ("pvc", "PersistentVolumeClaim"),
    ("storageclasses.storage.k8s.io", "StorageClass.storage.k8s.io"),
    ("nodes", "Node"),
    ("nodes.longhorn.io", "Node.longhorn.io"),
    ("CephBlockPool.ceph", None),
    ("cephblockpools.x1.ceph.rook.io", None),
    ("CephBlokPool", None),
], ids=["kind", "resource", "short", "kind.group", "resource.version.group", "core-short", "builtin-group",
        "core-first", "crd-by-group", "partial-group", "not-a-version", "typo"])
def test_match_kind_reads_type_as_kubectl(written: str, meant: str | None) -> None:
    found = match_kind(written, ALL_KINDS)
    assert (found.key if found else None) == meant


def test_close_kinds_names_the_kind_of_a_typo() -> None:
    assert [k.key for k in close_kinds("CephBlokPool", ALL_KINDS)][:1] == ["CephBlockPool.ceph.rook.io"]
    assert close_kinds("zzzzzz", ALL_KINDS) == []


@pytest.mark.parametrize("crds", ["rook/crds.yaml", "longhorn/crds.yaml", "ceph-csi-operator/crds"])
def test_the_offline_table_spells_upstreams_crds_as_they_do(upstream: Path, crds: str) -> None:
    """Resource, scope and shortNames of every Rook, Longhorn and ceph-csi-operator kind in the table
    are the CRDs' own, so explain-delete reads `cephbprns` or `obcs` exactly as kubectl does (and
    knows ceph-csi-operator's CRDs declare no short name)."""
    where = upstream / crds
    files = sorted(where.glob("*.yaml")) if where.is_dir() else [where]
    checked = 0
    for doc in (d for f in files for d in yaml.safe_load_all(f.read_text())):
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc["spec"]
        known = known_kind(f"{spec['names']['kind']}.{spec['group']}")
        if known is None:
            continue
        checked += 1
        assert (known.plural, known.namespaced, set(known.short_names)) == (
            spec["names"]["plural"], spec["scope"] == "Namespaced", set(spec["names"].get("shortNames") or ())), \
            known.key
    assert checked >= 4  # the table names some of each (Rook, ceph-csi-operator: all of them)
