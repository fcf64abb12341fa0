"""The rendered chart against a real API server: CRD schemas, and the webhook
configurations (pointed at a locally running webhook) carrying the user stories."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess, start_webhook, stop_webhook

from .conftest import ALL_ON, Doc, find, render

pytestmark = pytest.mark.api

SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
CONFIG_NAME = "kchart-kustodian-localtest"


def apply(kube_api: KubeApi, *docs: Doc) -> None:
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def until(kube_api: KubeApi, args: list[str], want: str, timeout: float = 15) -> str:
    deadline = time.monotonic() + timeout
    while True:
        proc = kube_api.kubectl(*args, check=False)
        out = proc.stdout + proc.stderr
        if want in out:
            return out
        if time.monotonic() > deadline:
            raise AssertionError(f"kubectl {' '.join(args)} never printed {want!r}; last output:\n{out}")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> list[Doc]:
    return render(ALL_ON, tmp_path_factory.mktemp("chart-api"))


@pytest.fixture(scope="module")
def crds_applied(kube_api: KubeApi, chart: list[Doc]) -> None:
    crds = find(chart, "CustomResourceDefinition")
    apply(kube_api, *crds)
    kube_api.kubectl("wait", "--for=condition=Established", "--timeout=30s",
                     *[f"crd/{d['metadata']['name']}" for d in crds])


def pointed_at(doc: Doc, hook: WebhookProcess) -> Doc:
    """The rendered configuration with each Service clientConfig replaced by the local URL + CA."""
    out: Doc = json.loads(json.dumps(doc))
    out["metadata"] = {"name": CONFIG_NAME}
    for w in out["webhooks"]:
        path = w["clientConfig"]["service"]["path"]
        w["clientConfig"] = {"url": f"{hook.url}{path}", "caBundle": hook.ca_bundle()}
    return out


@pytest.fixture(scope="module")
def chart_webhook(kube_api: KubeApi, chart: list[Doc], crds_applied: None, rook_crds_installed: None,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    hook = start_webhook(kube_api, tmp_path_factory.mktemp("chart-webhook"))
    configs = [pointed_at(d, hook) for d in chart
               if d["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")]
    assert len(configs) == 2
    try:
        apply(kube_api, *configs)
        yield hook
    finally:
        # failurePolicy Fail + a stopped webhook would block every other test
        kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", CONFIG_NAME,
                         "--ignore-not-found")
        stop_webhook(hook)


def ac(name: str, **spec: Any) -> Doc:
    base = {"location": "drive-1", "nodeId": "node-a", "storageClass": "SSD", "size": 1 << 30}
    return {"apiVersion": "kustodian.io/v1alpha1", "kind": "AvailableCapacity", "metadata": {"name": name},
            "spec": {**base, **spec}}


@pytest.mark.parametrize(("spec", "why"), [
    ({"size": -1}, "spec.size"),
    ({"storageClass": "FOO"}, "spec.storageClass"),
], ids=["negative-size", "unknown-class"])
def test_the_crd_schema_refuses_an_invalid_available_capacity(
        kube_api: KubeApi, crds_applied: None, spec: dict[str, Any], why: str) -> None:
    good = f"ac-{uuid.uuid4().hex[:8]}"
    bad = f"ac-{uuid.uuid4().hex[:8]}"
    try:
        kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(ac(good)))
        out = kube_api.kubectl("get", "ac", good, "-o", "wide").stdout
        assert "node-a" in out and "SSD" in out
        proc = kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(ac(bad, **spec)), check=False)
        assert proc.returncode != 0
        assert "is invalid" in proc.stderr and why in proc.stderr
    finally:
        kube_api.kubectl("delete", "ac", good, bad, "--ignore-not-found")


def rbd_pv(name: str, cluster_ns: str, pool: str) -> Doc:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "rook-ceph-block",
                     "csi": {"driver": "rook-ceph.rbd.csi.ceph.com", "volumeHandle": f"0001-{name}",
                             "volumeAttributes": {"clusterID": cluster_ns, "pool": pool}}}}


def test_deletion_guard_story_through_the_chart_configuration(
        kube_api: KubeApi, chart_webhook: WebhookProcess, namespace: str) -> None:
    pv_name = f"pvc-{namespace}-chart"
    apply(kube_api,
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
           "metadata": {"name": "replicapool", "namespace": namespace}, "spec": {"replicated": {"size": 3}}},
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephNFS", "metadata": {"name": "nfs-a", "namespace": namespace},
           "spec": {"rados": {"pool": "replicapool"}}},
          rbd_pv(pv_name, namespace, "replicapool"))
    expected = (f'admission webhook "deletion-guard.kustodian.io" denied the request: CephBlockPool '
                f'"{namespace}/replicapool" cannot be deleted: it has dependents: CephNFSes: [nfs-a]; '
                f'PersistentVolumes: [{pv_name}]')
    until(kube_api, ["delete", "cephblockpool", "replicapool", "-n", namespace, "--dry-run=server"],
          "PersistentVolumes: [")
    proc = kube_api.kubectl("delete", "cephblockpool", "replicapool", "-n", namespace, check=False)
    assert proc.returncode != 0
    assert f"Error from server (Forbidden): {expected}" in proc.stderr
    kube_api.kubectl("get", "cephblockpool", "replicapool", "-n", namespace)

    kube_api.kubectl("delete", "cephnfs", "nfs-a", "-n", namespace)
    kube_api.kubectl("delete", "pv", pv_name)
    until(kube_api, ["delete", "cephblockpool", "replicapool", "-n", namespace],
          'cephblockpool.ceph.rook.io "replicapool" deleted')


def pvc(name: str, ns: str, sc: str) -> Doc:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                     "resources": {"requests": {"storage": "1Gi"}}}}


def pvc_annotations(kube_api: KubeApi, ns: str, name: str) -> dict[str, str]:
    out = kube_api.kubectl("get", "pvc", name, "-n", ns, "-o", "json").stdout
    result: dict[str, str] = json.loads(out)["metadata"].get("annotations") or {}
    return result


def test_pvc_mutation_story_through_the_chart_configuration(
        kube_api: KubeApi, chart_webhook: WebhookProcess, namespace: str) -> None:
    sc = f"rbd-{uuid.uuid4().hex[:6]}"
    apply(kube_api, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                     "metadata": {"name": sc, "annotations": {SCHEDULE: "@daily"}},
                     "provisioner": "rook-ceph.rbd.csi.ceph.com"})
    try:
        deadline = time.monotonic() + 15
        i = 0
        while True:  # the webhook learns the StorageClass from its watch
            name = f"probe-{i}"
            kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(pvc(name, namespace, sc)))
            if pvc_annotations(kube_api, namespace, name).get(SCHEDULE):
                break
            assert time.monotonic() < deadline, "the schedule never appeared"
            i += 1
            time.sleep(0.1)
        kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(pvc("data", namespace, sc)))
        assert pvc_annotations(kube_api, namespace, "data")[SCHEDULE] == "@daily"

        # the validation webhook (matchConditions: only objects carrying a policy annotation)
        proc = kube_api.kubectl("annotate", "sc", sc, "--overwrite", f"{SCHEDULE}=every day", check=False)
        assert proc.returncode != 0
        assert 'admission webhook "reclaim-space-validation.kustodian.io" denied the request' in proc.stderr
        kube_api.kubectl("label", "sc", sc, "team=storage")
    finally:
        kube_api.kubectl("delete", "storageclass", sc, "--ignore-not-found")


def test_capacity_validation_through_the_chart_configuration(
        kube_api: KubeApi, chart_webhook: WebhookProcess) -> None:
    name = f"acr-{uuid.uuid4().hex[:8]}"
    # schema-valid but incoherent: RESERVED on a node it never requested (only the webhook knows)
    acr = {"apiVersion": "kustodian.io/v1alpha1", "kind": "AvailableCapacityReservation",
           "metadata": {"name": name},
           "spec": {"namespace": "default", "status": "RESERVED",
                    "nodeRequests": {"requested": ["node-a"], "reserved": ["node-z"]},
                    "reservationRequests": [{"capacityRequest": {"name": "v", "storageClass": "SSD", "size": 1},
                                             "reservations": ["ac-1"]}]}}
    try:
        proc = kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(acr), check=False)
        assert proc.returncode != 0
        assert 'admission webhook "capacity-validation.kustodian.io" denied the request' in proc.stderr
    finally:
        kube_api.kubectl("delete", "acr", name, "--ignore-not-found")


def test_the_local_webhook_logs_are_clean(chart_webhook: WebhookProcess) -> None:
    assert "Traceback" not in chart_webhook.logs()
