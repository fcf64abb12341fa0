"""Issue 19: ``kustodian node-cleanup`` as a drop-in for upstream's deployment, with RBAC enforced.

Nothing is deployed but what upstream's example gives: its ServiceAccount, ClusterRole and
ClusterRoleBinding (``../shared/upstream/local-static-provisioner``, applied verbatim), the
controller running under that identity with upstream's example args, and the PV exactly as
upstream's provisioner writes it. A Node deleted -> its PVC and then its PV are cleaned up.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.kube.errors import NotFound
from kustodian.kube.resources import EVENTS, NODES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
from tests.conftest import KubeApi
from tests.support import free_port, wait_while_running

pytestmark = pytest.mark.api

LSP = "local-static-provisioner"
NODE = "gke-cluster-1-default-pool-3f9c2a1b-x7kq"  # the node of upstream's derived PV
SA = "system:serviceaccount:default:local-volume-node-cleanup-controller"


def upstream_args(upstream: Path) -> list[str]:
    deployment = yaml.safe_load((upstream / LSP / "deployment/kubernetes/example/node-cleanup-controller/"
                                 "deployment.yaml").read_text())
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def gone(api: KubeApi, res: Any, name: str, ns: str | None = None) -> bool:
    try:
        api.client.get(res, name, ns)
    except NotFound:
        return True
    return False


def test_upstreams_deployment_and_rbac_clean_up_after_a_node_loss(
        kube_api_rbac: KubeApi, upstream: Path, tmp_path: Path) -> None:
    api = kube_api_rbac
    server = api.require_server()
    example = upstream / LSP / "deployment/kubernetes/example/node-cleanup-controller"
    api.kubectl("apply", "-f", str(example / "rbac.yaml"))
    sc = next(d for d in yaml.safe_load_all((upstream / LSP / "helm/generated_examples/"
                                             "gke-nvme-ssd-block-raid.yaml").read_text())
              if d and d.get("kind") == "StorageClass")
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump(sc))
    api.client.create(NODES, {"apiVersion": "v1", "kind": "Node",
                              "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}}})
    api.kubectl("create", "-f", str(upstream / LSP / "derived/local-pv.yaml"))
    api.kubectl("create", "namespace", "app")
    claim = api.client.create(PERSISTENT_VOLUME_CLAIMS, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data-0", "namespace": "app"},
        "spec": {"storageClassName": "nvme-ssd-block", "volumeName": "local-pv-d2bcb795",
                 "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "736Gi"}}}})
    # no binder on the test server: bind as the PV controller would
    api.client.patch(PERSISTENT_VOLUMES, "local-pv-d2bcb795", {"spec": {"claimRef": {
        "namespace": "app", "name": "data-0", "uid": claim["metadata"]["uid"]}}})
    pv = api.client.get(PERSISTENT_VOLUMES, "local-pv-d2bcb795")
    pv["status"] = {"phase": "Bound"}
    api.client.replace(PERSISTENT_VOLUMES, pv, subresource="status")

    kubeconfig = server.kubeconfig_for(SA)
    # upstream's example args verbatim; then, only to keep the test short, a 2 s delay, and a 1 s
    # deleter interval, accepted and unused (the last occurrence of a flag wins, as with Go's flag package)
    args = [*upstream_args(upstream), "--pvc-deletion-delay=2s", "--stale-pv-discovery-interval=1s",
            f"--listen-address=127.0.0.1:{free_port()}", f"--kubeconfig={kubeconfig}"]
    log = tmp_path / "node-cleanup.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kustodian", "node-cleanup", *args], stdout=out,
                                stderr=subprocess.STDOUT, env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
    try:
        def until(cond: Any, what: str, timeout: float = 30) -> None:
            wait_while_running(proc, log, cond, what, timeout)

        until(lambda: "kustodian-node-cleanup running" in log.read_text(), "the controller did not start")
        assert "timer kept in memory" in log.read_text()  # upstream's ClusterRole grants no patch on PVs
        deleted_at = time.monotonic()
        api.client.delete(NODES, NODE)
        until(lambda: gone(api, PERSISTENT_VOLUME_CLAIMS, "data-0", "app"), "the PVC was not deleted")
        assert time.monotonic() - deleted_at >= 2.0  # not before the delay
        # the PVC is gone: the PV controller would release the PV; do as it does
        pv = api.client.get(PERSISTENT_VOLUMES, "local-pv-d2bcb795")
        pv["status"] = {"phase": "Released"}
        api.client.replace(PERSISTENT_VOLUMES, pv, subresource="status")
        until(lambda: gone(api, PERSISTENT_VOLUMES, "local-pv-d2bcb795"), "the PV was not deleted")
        events = api.client.list(EVENTS, "app")[0]
        assert any(e["source"].get("component") == "cleanup-controller" for e in events), events
    finally:
        proc.terminate()
        proc.wait(15)
    text = log.read_text()
    assert "Traceback" not in text, text
    assert "Forbidden" not in text and "forbidden" not in text, text  # upstream's RBAC was enough
