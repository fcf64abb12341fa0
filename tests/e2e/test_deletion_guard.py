"""User story: `kubectl delete cephblockpool` is refused while something depends on the pool."""

from __future__ import annotations

import pytest

from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess, kustodian
from tests.e2e.stories import apply, deletion_guard_story, rbd_pv, until

pytestmark = pytest.mark.api


def test_delete_of_a_pool_with_dependents_is_refused_with_an_actionable_message(
        kube_api: KubeApi, webhook: WebhookProcess, namespace: str) -> None:
    deletion_guard_story(kube_api, namespace)


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


def test_providers_in_a_terminating_namespace_go_with_their_inside_dependents(
        kube_api: KubeApi, webhook: WebhookProcess, namespace: str) -> None:
    """The namespace controller's deletes of a namespace whose delete was admitted are not refused
    one by one for dependents that are going too; an outside dependent still blocks."""
    apply(kube_api,
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
           "metadata": {"name": "inner", "namespace": namespace}},
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
           "metadata": {"name": "shared", "namespace": namespace}},
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephNFS", "metadata": {"name": "nfs-in", "namespace": namespace},
           "spec": {"rados": {"pool": "inner"}}})
    until(kube_api, ["delete", "cephblockpool", "inner", "-n", namespace, "--dry-run=server"], "cannot be deleted")
    pv_name = f"pvc-{namespace}-out"
    # a finalizer holds the namespace Terminating, as it is while the namespace controller drains it
    kube_api.kubectl("patch", "namespace", namespace, "--type=merge",
                     "-p", '{"metadata":{"finalizers":["kustodian.io/test-hold"]}}')
    try:
        kube_api.kubectl("delete", "namespace", namespace, "--wait=false")
        out = until(kube_api, ["delete", "cephblockpool", "inner", "-n", namespace], "deleted")
        assert "cannot" not in out
        apply(kube_api, rbd_pv(pv_name, namespace, "shared"))
        out = until(kube_api, ["delete", "cephblockpool", "shared", "-n", namespace, "--dry-run=server"],
                    "cannot be deleted")
        assert pv_name in out
    finally:
        kube_api.kubectl("delete", "pv", pv_name, "--ignore-not-found")
        kube_api.kubectl("patch", "namespace", namespace, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
