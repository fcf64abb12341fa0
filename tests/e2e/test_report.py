"""`kustodian report` (issue 20): every protected provider and its dependents, on Rook's own examples.

Rook's ``deploy/examples`` (``../shared/upstream/rook``) are used as they are: read from the
directory (``--from``), and applied to a real API server and read live.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import KubeApi
from tests.e2e.conftest import kustodian

# a cluster, its pools, a RADOS namespace, a filesystem with a subvolume group (apply order)
LIVE_SET = ("common.yaml", "cluster-test.yaml", "pool-test.yaml", "radosnamespace.yaml", "filesystem-test.yaml",
            "subvolumegroup.yaml")


def _by_provider(report: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(p["kind"].split(".")[0], p["namespace"], p["name"]): p for p in report["items"]}


def _dependents(entry: dict[str, Any]) -> set[tuple[str, str]]:
    return {(d["kind"].split(".")[0], d["name"]) for d in entry["dependents"]}


def test_report_from_rooks_examples_lists_every_protected_provider(upstream: Path) -> None:
    got = kustodian("report", "--from", str(upstream / "rook"), "-o", "json")
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stdout)
    found = _by_provider(report)
    cluster = found[("CephCluster", "rook-ceph", "rook-ceph")]
    kinds = {kind for kind, _ in _dependents(cluster)}
    assert {"CephBlockPool", "CephFilesystem", "CephObjectStore", "CephNFS"} <= kinds
    assert ("CephBlockPoolRadosNamespace", "namespace-a") in _dependents(found[("CephBlockPool", "rook-ceph",
                                                                                 "replicapool")])
    assert ("CephFilesystemSubVolumeGroup", "group-a") in _dependents(found[("CephFilesystem", "rook-ceph",
                                                                              "myfs")])
    assert {k for k, _ in _dependents(found[("CephObjectStore", "rook-ceph", "my-store")])} >= {
        "ObjectBucketClaim"}
    # one row per object, even where two example files declare the same one
    assert len(found) == len(report["items"])
    for entry in report["items"]:
        assert entry["dependentCount"] == len(entry["dependents"]) > 0

    table = kustodian("report", "--from", str(upstream / "rook"))
    assert table.returncode == 0 and table.stdout.splitlines()[0].split() == ["PROVIDER", "NAMESPACE",
                                                                              "PROTECTED", "BY"]
    assert any(line.startswith("CephCluster/rook-ceph ") for line in table.stdout.splitlines())
    as_yaml = kustodian("report", "--from", str(upstream / "rook"), "-o", "yaml")
    assert yaml.safe_load(as_yaml.stdout) == report


@pytest.mark.api
def test_report_on_a_live_cluster_loaded_from_rooks_examples(kube_api: KubeApi, rook_upstream: Path) -> None:
    rook = rook_upstream / "rook"
    applied = [str(rook / name) for name in LIVE_SET]
    for path in applied:
        kube_api.kubectl("apply", "-f", path)
    try:
        got = kustodian("report", "-o", "json", "--kubeconfig", str(kube_api.kubeconfig))
        assert got.returncode == 0, got.stderr
        found = _by_provider(json.loads(got.stdout))
        cluster = _dependents(found[("CephCluster", "rook-ceph", "my-cluster")])
        assert {("CephBlockPool", "replicapool"), ("CephFilesystem", "myfs")} <= cluster
        assert ("CephBlockPoolRadosNamespace", "namespace-a") in _dependents(
            found[("CephBlockPool", "rook-ceph", "replicapool")])
        assert ("CephFilesystemSubVolumeGroup", "group-a") in _dependents(found[("CephFilesystem", "rook-ceph",
                                                                                  "myfs")])
    finally:
        for path in reversed(applied[1:]):  # common.yaml (namespace, RBAC) stays for other tests
            kube_api.kubectl("delete", "--ignore-not-found", "--wait=false", "-f", path, check=False)
