"""`kustodian controllers` as a process: leader election, existing PVCs reconciled at start."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import yaml

from kustodian.kube.resources import LEASES
from tests.conftest import KubeApi
from tests.e2e.stories import SCHEDULE, SOURCE, pvc, pvc_annotations, storage_class
from tests.support import free_port, wait_while_running

pytestmark = pytest.mark.api


def test_existing_pvcs_are_reconciled_at_start_and_follow_changes(kube_api: KubeApi, namespace: str,
                                                                 tmp_path: Path) -> None:
    sc = f"ctl-{uuid.uuid4().hex[:6]}"
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump(storage_class(sc, "@daily")))
    kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(pvc("before", namespace, sc)))
    port = free_port()
    log = tmp_path / "controllers.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kustodian", "controllers", "--kubeconfig", str(kube_api.kubeconfig),
             "--namespace", namespace, "--leader-election-identity", "replica-1",
             "--metrics-listen-address", f"127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
    try:
        def until(cond: Callable[[], bool], what: str, timeout: float = 20) -> None:
            wait_while_running(proc, log, cond, what, timeout)

        until(lambda: pvc_annotations(kube_api, namespace, "before").get(SCHEDULE) == "@daily",
              "the PVC that existed before the start was not reconciled")
        assert pvc_annotations(kube_api, namespace, "before")[SOURCE] == f"storageclass/{sc}"
        lease = kube_api.client.get(LEASES, "kustodian-controllers", namespace)
        assert lease["spec"]["holderIdentity"] == "replica-1"

        kube_api.kubectl("annotate", "sc", sc, "--overwrite", f"{SCHEDULE}=@weekly")
        until(lambda: pvc_annotations(kube_api, namespace, "before").get(SCHEDULE) == "@weekly",
              "the PVC did not follow the StorageClass")
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics").text
        assert 'kustodian_controller_reconcile_total{controller="reclaim-space",result="success"}' in metrics
    finally:
        proc.terminate()
        proc.wait(15)
        kube_api.kubectl("delete", "storageclass", sc, "--ignore-not-found")
    assert "Traceback" not in log.read_text(), log.read_text()
    # a clean stop releases the lease for the next replica
    assert kube_api.client.get(LEASES, "kustodian-controllers", namespace)["spec"]["holderIdentity"] == ""


def test_node_cleanup_runs_in_the_sidecar_configured_as_the_chart_configures_it(
        kube_api: KubeApi, namespace: str, tmp_path: Path) -> None:
    from kustodian.kube.errors import NotFound
    from kustodian.kube.resources import NODES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES

    client = kube_api.client
    node, sc = f"n-{uuid.uuid4().hex[:6]}", f"local-{uuid.uuid4().hex[:6]}"
    client.create(NODES, {"metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}})
    claim = client.create(PERSISTENT_VOLUME_CLAIMS, {
        "metadata": {"name": "data-0", "namespace": namespace},
        "spec": {"storageClassName": sc, "volumeName": f"pv-{node}", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}})
    client.create(PERSISTENT_VOLUMES, {
        "metadata": {"name": f"pv-{node}"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                 "local": {"path": "/mnt/x"},
                 "claimRef": {"namespace": namespace, "name": "data-0", "uid": claim["metadata"]["uid"]},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}})
    env = {**os.environ, "KUSTODIAN_LOG__FORMAT": "text", "KUSTODIAN_KUBE__NAMESPACE": namespace,
           "KUSTODIAN_LEADER_ELECTION__IDENTITY": "sidecar-1", "KUSTODIAN_RECLAIM__ENABLED": "false",
           "KUSTODIAN_NODE_CLEANUP__ENABLED": "true", "KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES": f'["{sc}"]',
           "KUSTODIAN_NODE_CLEANUP__DELAY": "1s", "KUSTODIAN_METRICS__LISTEN_ADDRESS": ""}
    log = tmp_path / "controllers.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kustodian", "controllers", "--kubeconfig",
                                 str(kube_api.kubeconfig)], stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        def leading() -> bool:  # the process is up: the node goes while it runs
            try:
                lease = client.get(LEASES, "kustodian-controllers", namespace)
            except NotFound:
                return False
            return bool(lease["spec"].get("holderIdentity") == "sidecar-1")

        wait_while_running(proc, log, leading, "the sidecar to hold the Lease")
        client.delete(NODES, node)

        def pvc_gone() -> bool:
            try:
                client.get(PERSISTENT_VOLUME_CLAIMS, "data-0", namespace)
            except NotFound:
                return True
            return False

        wait_while_running(proc, log, pvc_gone, "the PVC to be deleted", 20)
    finally:
        proc.terminate()
        proc.wait(15)
        client.delete(PERSISTENT_VOLUMES, f"pv-{node}")
    assert "Traceback" not in log.read_text(), log.read_text()
