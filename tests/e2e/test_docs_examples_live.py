"""docs/examples/rook is what the README's quickstart reads with ``--from``; it is also what a Rook
admin may apply: valid against Rook's real CRDs (../shared/upstream/rook/crds.yaml, a server-side
dry run), and what ``explain-delete -o name`` prints of it is what kubectl reads back."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.support import clean_env, run
from tests.conftest import KubeApi

pytestmark = pytest.mark.api

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "rook"
NS = "rook-ceph"


def _namespace(kube_api: KubeApi) -> None:
    if kube_api.kubectl("get", "namespace", NS, check=False).returncode != 0:
        kube_api.kubectl("create", "namespace", NS)


def test_the_rook_examples_pass_a_server_side_dry_run_against_rooks_crds(
        kube_api: KubeApi, rook_upstream: Path) -> None:
    _namespace(kube_api)
    proc = kube_api.kubectl("apply", "--dry-run=server", "--validate=strict", "-f", str(EXAMPLES))
    assert sorted(proc.stdout.split("\n")[:-1]) == [
        "cephblockpool.ceph.rook.io/replicapool created (server dry run)",
        "cephnfs.ceph.rook.io/nfs-a created (server dry run)",
        "persistentvolume/pvc-0000 created (server dry run)",
        "storageclass.storage.k8s.io/rook-ceph-block created (server dry run)",
    ], proc.stderr


def test_explain_delete_names_what_kubectl_reads_back(kube_api: KubeApi, rook_upstream: Path,
                                                      tmp_path: Path) -> None:
    _namespace(kube_api)
    kube_api.kubectl("apply", "-f", str(EXAMPLES))
    try:
        env = clean_env(tmp_path, KUBECONFIG=str(kube_api.kubeconfig))
        proc = run(tmp_path, "explain-delete", "CephBlockPool", "replicapool", "-n", NS, "-o", "name", env=env)
        assert proc.returncode == 1, proc.stderr  # dependents block the delete
        names = proc.stdout.split()
        # cluster-scoped first, then by namespace; the namespace kubectl needs is said on stderr
        assert names == ["persistentvolume/pvc-0000", "cephnfs.ceph.rook.io/nfs-a"]
        assert f"kubectl get -n {NS} $(... -o name)" in proc.stderr
        got = kube_api.kubectl("get", "-n", NS, *names, "-o", "name")
        assert got.stdout.split() == names
    finally:
        kube_api.kubectl("delete", "-f", str(EXAMPLES), "--ignore-not-found", "--wait=false", check=False)
