"""User story: `kubectl delete cephblockpool` is refused while something depends on the pool."""

from __future__ import annotations

import time
from typing import Any

import pytest
import yaml

from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess, kustodian

pytestmark = pytest.mark.api


def apply(kube_api: KubeApi, *docs: dict[str, Any]) -> None:
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def rbd_pv(name: str, cluster_ns: str, pool: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "rook-ceph-block",
                     "csi": {"driver": "rook-ceph.rbd.csi.ceph.com", "volumeHandle": f"0001-{name}",
                             "volumeAttributes": {"clusterID": cluster_ns, "pool": pool}}}}


def until(kube_api: KubeApi, args: list[str], want: str, timeout: float = 15) -> str:
    """Run kubectl until its output contains ``want`` (the webhook's cache catching up)."""
    deadline = time.monotonic() + timeout
    while True:
        proc = kube_api.kubectl(*args, check=False)
        out = proc.stdout + proc.stderr
        if want in out:
            return out
        if time.monotonic() > deadline:
            raise AssertionError(f"kubectl {' '.join(args)} never printed {want!r}; last output:\n{out}")
        time.sleep(0.1)


def blocked_events(kube_api: KubeApi, namespace: str) -> list[dict[str, Any]]:
    out = kube_api.kubectl("get", "events", "-n", namespace, "-o", "yaml").stdout
    return [e for e in yaml.safe_load(out)["items"] if e.get("reason") == "DeletionBlocked"]


def test_delete_of_a_pool_with_dependents_is_refused_with_an_actionable_message(
        kube_api: KubeApi, webhook: WebhookProcess, namespace: str) -> None:
    pv_name = f"pvc-{namespace}-1"
    apply(kube_api,
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
           "metadata": {"name": "replicapool", "namespace": namespace}, "spec": {"replicated": {"size": 3}}},
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephNFS", "metadata": {"name": "nfs-a", "namespace": namespace},
           "spec": {"rados": {"pool": "replicapool"}}},
          rbd_pv(pv_name, namespace, "replicapool"))

    expected = (f'admission webhook "deletion-guard.kustodian.io" denied the request: CephBlockPool '
                f'"{namespace}/replicapool" cannot be deleted: it has dependents: CephNFSes: [nfs-a]; '
                f'PersistentVolumes: [{pv_name}]')
    # dry run first: denied the same way, and it writes nothing (no event)
    out = until(kube_api, ["delete", "cephblockpool", "replicapool", "-n", namespace, "--dry-run=server"],
                "PersistentVolumes: [")
    assert expected in out
    time.sleep(0.5)
    assert blocked_events(kube_api, namespace) == []

    proc = kube_api.kubectl("delete", "cephblockpool", "replicapool", "-n", namespace, check=False)
    assert proc.returncode != 0
    assert f"Error from server (Forbidden): {expected}" in proc.stderr
    kube_api.kubectl("get", "cephblockpool", "replicapool", "-n", namespace)  # still there, not Terminating

    deadline = time.monotonic() + 10
    while not (events := blocked_events(kube_api, namespace)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(events) == 1
    assert events[0]["type"] == "Warning"
    assert events[0]["involvedObject"]["kind"] == "CephBlockPool"
    assert events[0]["involvedObject"]["name"] == "replicapool"

    # the dependents go; the same delete now succeeds
    kube_api.kubectl("delete", "cephnfs", "nfs-a", "-n", namespace)
    kube_api.kubectl("delete", "pv", pv_name)
    until(kube_api, ["delete", "cephblockpool", "replicapool", "-n", namespace],
          'cephblockpool.ceph.rook.io "replicapool" deleted')


def test_the_override_annotation_lets_the_delete_through_with_a_warning(
        kube_api: KubeApi, webhook: WebhookProcess, namespace: str) -> None:
    apply(kube_api,
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
           "metadata": {"name": "pool2", "namespace": namespace,
                        "annotations": {"kustodian.io/allow-delete-with-dependents": "true"}}},
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephClient", "metadata": {"name": "c1", "namespace": namespace},
           "spec": {"caps": {"osd": "profile rbd pool=pool2"}}})
    until(kube_api, ["delete", "cephblockpool", "pool2", "-n", namespace], "deleted")


def test_namespace_teardown_is_refused_while_outside_dependents_exist(
        kube_api: KubeApi, webhook: WebhookProcess, namespace: str) -> None:
    pv_name = f"pvc-{namespace}-ns"
    apply(kube_api,
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
           "metadata": {"name": "replicapool", "namespace": namespace}},
          rbd_pv(pv_name, namespace, "replicapool"))
    out = until(kube_api, ["delete", "namespace", namespace, "--dry-run=server"], "cannot be deleted")
    assert pv_name in out
    kube_api.kubectl("delete", "pv", pv_name)


def test_explain_delete_reads_the_live_cluster(kube_api: KubeApi, webhook: WebhookProcess,
                                               namespace: str) -> None:
    apply(kube_api,
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
           "metadata": {"name": "replicapool", "namespace": namespace}},
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephNFS", "metadata": {"name": "nfs-b", "namespace": namespace},
           "spec": {"rados": {"pool": "replicapool"}}})
    proc = kustodian("explain-delete", "CephBlockPool", "replicapool", "-n", namespace,
                     "--kubeconfig", str(kube_api.kubeconfig))
    assert proc.returncode == 1, proc.stderr
    assert "CephNFS" in proc.stdout and "nfs-b" in proc.stdout and "KIND" in proc.stdout
