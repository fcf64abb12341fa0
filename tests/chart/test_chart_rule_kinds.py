"""The chart checks deletion rules at render time (issue 33): a kind that does not exist fails
``helm template`` naming the value and the kind meant; a kind written with its group renders
its DELETE admission rule and list/watch access in that group.  The real-API side (a
StorageClass delete refused through the rendered webhook while a PVC names it) is
``test_chart_api.test_readme_rule_storageclass_kept_while_a_pvc_names_it``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kustodian.policy.kinds import chart_table

from .conftest import CHART, FULLNAME, NAMESPACE, README_RULE, RELEASE, helm, one, render, webhooks

MATCH = README_RULE["match"]


def test_the_charts_kind_table_is_the_policys() -> None:
    assert json.loads((CHART / "files" / "kinds.json").read_text()) == chart_table()


def _template(rules: list[dict[str, Any]], tmp: Path) -> Any:
    return helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE,
                values={"deletionGuard": {"rules": rules}}, tmp=tmp, check=False)


@pytest.mark.parametrize(("rule", "field", "written", "meant"), [
    ({"provider": "StorageClass", "dependent": "PersistentVolumeClaim"}, "provider", "StorageClass",
     "StorageClass.storage.k8s.io"),
    ({"provider": "StorageClass.storage.k8s.io", "dependent": "PVC"}, "dependent", "PVC",
     "PersistentVolumeClaim"),
    ({"provider": "Storageclass", "dependent": "PersistentVolumeClaim"}, "provider", "Storageclass",
     "StorageClass.storage.k8s.io"),
    ({"provider": "Cephblockpool.ceph.rook.io", "dependent": "PersistentVolumeClaim"}, "provider",
     "Cephblockpool.ceph.rook.io", "CephBlockPool.ceph.rook.io"),
], ids=["no-group", "short-name", "wrong-case", "crd-wrong-case"])
def test_helm_template_fails_on_a_kind_that_does_not_exist(
        tmp_path: Path, rule: dict[str, str], field: str, written: str, meant: str) -> None:
    proc = _template([{**rule, "match": MATCH}], tmp_path)
    assert proc.returncode != 0
    assert f'deletionGuard.rules[0].{field}: "{written}" is not' in proc.stderr
    assert f'(did you mean "{meant}"?)' in proc.stderr


def test_helm_template_fails_on_a_skip_if_kind_too(tmp_path: Path) -> None:
    rule = {**README_RULE, "skipIf": {"kind": "CephCluster", "field": "spec.x", "equals": True}}
    proc = _template([rule], tmp_path)
    assert proc.returncode != 0
    assert 'deletionGuard.rules[0].skipIf.kind: "CephCluster" is not' in proc.stderr
    assert '(did you mean "CephCluster.ceph.rook.io"?)' in proc.stderr


def test_helm_template_fails_on_a_via_ref_kind_too(tmp_path: Path) -> None:
    rule = {"provider": "CephObjectStoreAccount.ceph.rook.io", "dependent": "ObjectBucket.objectbucket.io",
            "match": {"type": "via-ref", "via": {"kind": "CephObjectStoreUser", "field": "spec.accountRef.name"},
                      "field": "spec.additionalState.cephUser"}}
    proc = _template([rule], tmp_path)
    assert proc.returncode != 0
    assert 'deletionGuard.rules[0].match.via.kind: "CephObjectStoreUser" is not' in proc.stderr
    assert '(did you mean "CephObjectStoreUser.ceph.rook.io"?)' in proc.stderr


def test_a_kind_with_its_group_renders_its_groups_delete_rule_and_access(tmp_path: Path) -> None:
    rules = [README_RULE,
             {"provider": "Widget.example.com", "dependent": "VolumeSnapshot.snapshot.storage.k8s.io",
              "match": {"type": "same-namespace"}}]
    docs = render({"deletionGuard": {"rules": rules}}, tmp_path)
    guard = webhooks(docs)["deletion-guard.kustodian.io"]
    deletes = {(g, r) for rule in guard["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               if rule["operations"] == ["DELETE"]}
    assert ("storage.k8s.io", "storageclasses") in deletes
    assert ("example.com", "widgets") in deletes
    assert not {(g, r) for g, r in deletes if g == "" and r == "storageclasses"}
    role = one(docs, "ClusterRole", f"{FULLNAME}-webhook")
    reads = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
             if "watch" in rule["verbs"]}
    assert {("storage.k8s.io", "storageclasses"), ("", "persistentvolumeclaims"),
            ("snapshot.storage.k8s.io", "volumesnapshots"), ("example.com", "widgets")} <= reads
    assert ("", "storageclasses") not in reads


def test_a_known_kinds_resource_comes_from_the_table(tmp_path: Path) -> None:
    # the English plural of NetworkPolicy happens to match; Endpoints would not ("endpointses")
    rule = {"provider": "StorageClass.storage.k8s.io", "dependent": "Endpoints",
            "match": {"type": "field-ref", "field": "metadata.name", "scope": "cluster"}}
    docs = render({"deletionGuard": {"rules": [rule]}}, tmp_path)
    role = one(docs, "ClusterRole", f"{FULLNAME}-webhook")
    reads = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert ("", "endpoints") in reads
    assert ("", "endpointses") not in reads
