"""`kustodian controllers` as a process: leader election, existing PVCs reconciled at start."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
import yaml

from kube.resources import LEASES
from tests.conftest import KubeApi
from tests.e2e.conftest import free_port
from tests.e2e.stories import SCHEDULE, SOURCE, pvc, pvc_annotations, storage_class

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
             "--namespace", namespace, "--pod-name", "replica-1", "--listen-address", f"127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "KUSTODIAN_LOG_FORMAT": "text"})
    try:
        def until(cond: object, what: str, timeout: float = 20) -> None:
            deadline = time.monotonic() + timeout
            while not cond():  # type: ignore[operator]
                assert proc.poll() is None, log.read_text()
                assert time.monotonic() < deadline, f"{what}\n{log.read_text()}"
                time.sleep(0.1)

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
    # a clean stop releases the lease for the next replica
    assert kube_api.client.get(LEASES, "kustodian-controllers", namespace)["spec"]["holderIdentity"] == ""
