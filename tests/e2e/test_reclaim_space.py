"""User story: a StorageClass's reclaim-space schedule lands on every PVC created in it."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
import yaml

from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess

pytestmark = pytest.mark.api

SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
SOURCE = "reclaimspace.kustodian.io/source"


def storage_class(name: str, schedule: str | None) -> dict[str, Any]:
    ann = {SCHEDULE: schedule} if schedule else {}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "annotations": ann}, "provisioner": "rook-ceph.rbd.csi.ceph.com"}


def pvc(name: str, ns: str, sc: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns, "annotations": annotations or {}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                     "resources": {"requests": {"storage": "1Gi"}}}}


def annotations(kube_api: KubeApi, ns: str, name: str) -> dict[str, str]:
    out = kube_api.kubectl("get", "pvc", name, "-n", ns, "-o", "json").stdout
    result: dict[str, str] = json.loads(out)["metadata"].get("annotations") or {}
    return result


def test_pvc_created_in_an_annotated_storageclass_carries_the_schedule(
        kube_api: KubeApi, webhook: WebhookProcess, namespace: str) -> None:
    sc = f"rbd-{uuid.uuid4().hex[:6]}"
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump(storage_class(sc, "@daily")))
    try:
        # the webhook learns about the StorageClass from its watch; PVCs created before that
        # would simply not be mutated (failurePolicy Ignore), so wait for the first one to be
        deadline = time.monotonic() + 15
        i = 0
        while True:
            name = f"probe-{i}"
            kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(pvc(name, namespace, sc)))
            if annotations(kube_api, namespace, name).get(SCHEDULE):
                break
            assert time.monotonic() < deadline, "the schedule never appeared"
            i += 1
            time.sleep(0.1)

        kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(pvc("data", namespace, sc)))
        got = annotations(kube_api, namespace, "data")
        assert got[SCHEDULE] == "@daily"
        assert got[SOURCE] == f"storageclass/{sc}"

        # a PVC with its own schedule is never touched
        kube_api.kubectl("create", "-f", "-",
                         input=yaml.safe_dump(pvc("mine", namespace, sc, {SCHEDULE: "@weekly"})))
        got = annotations(kube_api, namespace, "mine")
        assert got[SCHEDULE] == "@weekly" and SOURCE not in got
    finally:
        kube_api.kubectl("delete", "storageclass", sc, "--ignore-not-found")


@pytest.mark.parametrize(("value", "why"), [
    ("every day", "every day"),
    ("61 * * * *", "61"),
    ("0 0 * * * *", "6 fields"),
    ("CRON_TZ=Mars/Olympus @daily", "Mars/Olympus"),
], ids=["words", "minute-out-of-range", "six-fields", "unknown-zone"])
def test_a_bad_schedule_on_a_storageclass_is_refused_with_key_value_and_reason(
        kube_api: KubeApi, webhook: WebhookProcess, value: str, why: str) -> None:
    sc = f"rbd-{uuid.uuid4().hex[:6]}"
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump(storage_class(sc, None)))
    try:
        proc = kube_api.kubectl("annotate", "sc", sc, f"{SCHEDULE}={value}", check=False)
        assert proc.returncode != 0
        assert 'admission webhook "reclaim-space-validation.kustodian.io" denied the request' in proc.stderr
        assert SCHEDULE in proc.stderr and why in proc.stderr
        # an unrelated update of the same object still goes through
        kube_api.kubectl("label", "sc", sc, "team=storage")
    finally:
        kube_api.kubectl("delete", "storageclass", sc, "--ignore-not-found")
