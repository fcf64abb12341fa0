"""Kustodian gone must not be an outage (issue 20): the chart's own webhook configurations,
pointed at an endpoint where nothing listens, on a real API server.

What the webhooks must not judge goes through (PVC binding, resize, labels, finalizer
removal on annotated PVCs; deletes of namespaces without providers); what they must judge
is refused, fail closed (a schedule change, a provider's DELETE, a provider namespace's DELETE).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kustodian.testing.webhooks import armed
from tests.conftest import KubeApi
from tests.e2e.stories import SCHEDULE, apply, pvc
from tests.support import free_port

from .conftest import Doc, render

pytestmark = pytest.mark.api

CONFIG_NAME = "kchart-kustodian-dead"
SOURCE = "reclaimspace.kustodian.io/source"
PROVIDER_LABEL = "kustodian.io/storage-providers"


@pytest.fixture(scope="module")
def dead_webhook(kube_api: KubeApi, rook_crds_installed: None,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Doc]]:
    """The default chart's Validating/MutatingWebhookConfigurations as a replica armed them (each
    webhook's intended failure policy), every clientConfig a closed port: the replicas gone."""
    chart = [armed(d) if d["kind"].endswith("WebhookConfiguration") else d
             for d in render(None, tmp_path_factory.mktemp("dead"), include_crds=False)]
    dead = f"https://127.0.0.1:{free_port()}"
    configs: list[Doc] = []
    for doc in chart:
        if doc["kind"] not in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            continue
        out: Doc = json.loads(json.dumps(doc))
        out["metadata"] = {"name": CONFIG_NAME}
        for w in out["webhooks"]:
            w["clientConfig"] = {"url": dead + w["clientConfig"]["service"]["path"]}
        configs.append(out)
    assert len(configs) == 2
    yield configs
    kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", CONFIG_NAME,
                     "--ignore-not-found")


def register(kube_api: KubeApi, configs: list[Doc]) -> None:
    apply(kube_api, *configs)


def unregister(kube_api: KubeApi) -> None:
    kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", CONFIG_NAME,
                     "--ignore-not-found")


def refused_by(proc_stderr: str, webhook: str) -> bool:
    return f'failed calling webhook "{webhook}"' in proc_stderr


def get(kube_api: KubeApi, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(kube_api.kubectl("get", *args, "-o", "json").stdout)
    return out


def test_pvc_lifecycle_updates_on_an_annotated_pvc_need_no_kustodian(
        kube_api: KubeApi, dead_webhook: list[Doc], namespace: str) -> None:
    sc = f"exp-{uuid.uuid4().hex[:6]}"
    pv = f"pv-{uuid.uuid4().hex[:8]}"
    apply(kube_api,
          {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": sc},
           "provisioner": "rook-ceph.rbd.csi.ceph.com", "allowVolumeExpansion": True},
          {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
           "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                    "csi": {"driver": "rook-ceph.rbd.csi.ceph.com", "volumeHandle": pv}}})
    # as the mutator leaves it: a schedule plus Kustodian's own marker; a finalizer of its user
    claim = pvc("data-0", namespace, sc, {SCHEDULE: "@daily", SOURCE: "storageclass"})
    claim["metadata"]["finalizers"] = ["example.com/hold"]
    apply(kube_api, claim)
    register(kube_api, dead_webhook)
    try:
        # the binder: volumeName + its annotations, then the status
        kube_api.kubectl("patch", "pvc", "data-0", "-n", namespace, "--type=merge", "-p", json.dumps(
            {"metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
             "spec": {"volumeName": pv}}))
        kube_api.kubectl("patch", "pvc", "data-0", "-n", namespace, "--subresource=status", "--type=merge",
                         "-p", json.dumps({"status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                                                      "capacity": {"storage": "1Gi"}}}))
        # resize and a label
        kube_api.kubectl("patch", "pvc", "data-0", "-n", namespace, "--type=merge", "-p",
                         json.dumps({"spec": {"resources": {"requests": {"storage": "2Gi"}}}}))
        kube_api.kubectl("label", "pvc", "data-0", "-n", namespace, "tier=gold")
        got = get(kube_api, "pvc", "data-0", "-n", namespace)
        assert got["spec"]["volumeName"] == pv
        assert got["spec"]["resources"]["requests"]["storage"] == "2Gi"
        assert got["metadata"]["labels"] == {"tier": "gold"}
        assert got["metadata"]["annotations"][SCHEDULE] == "@daily"

        # a person changing the schedule is still judged, and refused while nobody can judge it
        for change in ([f"{SCHEDULE}=@weekly"], [f"{SCHEDULE}-"], [f"{SOURCE}=namespace"]):
            proc = kube_api.kubectl("annotate", "pvc", "data-0", "-n", namespace, "--overwrite", *change,
                                    check=False)
            assert proc.returncode != 0, change
            assert refused_by(proc.stderr, "reclaim-space-validation.kustodian.io"), proc.stderr
        # and so is a new PVC that carries one (CREATE)
        proc = kube_api.kubectl("create", "-f", "-", input=json.dumps(
            pvc("data-1", namespace, sc, {SCHEDULE: "@daily"})), check=False)
        assert proc.returncode != 0 and refused_by(proc.stderr, "reclaim-space-validation.kustodian.io")

        # delete: Terminating behind the finalizer, gone once its owner removes it
        kube_api.kubectl("delete", "pvc", "data-0", "-n", namespace, "--wait=false")
        assert get(kube_api, "pvc", "data-0", "-n", namespace)["metadata"]["deletionTimestamp"]
        kube_api.kubectl("patch", "pvc", "data-0", "-n", namespace, "--type=json", "-p",
                         json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]))
        gone = kube_api.kubectl("get", "pvc", "data-0", "-n", namespace, "--ignore-not-found", "-o", "name")
        assert gone.stdout.strip() == ""
    finally:
        unregister(kube_api)
        kube_api.kubectl("delete", "pvc", "data-0", "-n", namespace, "--ignore-not-found", "--wait=false")
        kube_api.kubectl("delete", "pv", pv, "--ignore-not-found", "--wait=false")
        kube_api.kubectl("delete", "storageclass", sc, "--ignore-not-found")


def test_only_provider_namespaces_and_providers_wait_on_the_guard(
        kube_api: KubeApi, dead_webhook: list[Doc], upstream: Path) -> None:
    suffix = uuid.uuid4().hex[:6]
    plain, labelled, holder = f"plain-{suffix}", f"storage-{suffix}", f"pools-{suffix}"
    pool = {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
            "metadata": {"name": "replicapool", "namespace": holder},
            "spec": {"replicated": {"size": 3}}}
    apply(kube_api,
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plain}},
          {"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": labelled, "labels": {PROVIDER_LABEL: "true"}}},
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": holder}})
    apply(kube_api, pool)
    register(kube_api, dead_webhook)
    try:
        # a namespace without providers: its DELETE never reaches Kustodian
        out = kube_api.kubectl("delete", "namespace", plain, "--wait=false")
        assert f'namespace "{plain}" deleted' in out.stdout
        # a namespace labelled as holding providers: judged, so refused while Kustodian is down
        proc = kube_api.kubectl("delete", "namespace", labelled, "--wait=false", check=False)
        assert proc.returncode != 0 and refused_by(proc.stderr, "deletion-guard.kustodian.io"), proc.stderr
        # a provider's own DELETE, wherever it lives: refused (fail closed), the pool stays
        proc = kube_api.kubectl("delete", "cephblockpool", "replicapool", "-n", holder, "--wait=false",
                                check=False)
        assert proc.returncode != 0 and refused_by(proc.stderr, "deletion-guard.kustodian.io"), proc.stderr
        assert get(kube_api, "cephblockpool", "replicapool", "-n", holder)["metadata"]["name"] == "replicapool"
        # the default names rook-ceph (Rook's own namespace) even without the label
        (guard,) = [w for c in dead_webhook for w in c["webhooks"] if w["name"] == "deletion-guard.kustodian.io"]
        assert "['rook-ceph']" in guard["matchConditions"][0]["expression"]
    finally:
        unregister(kube_api)
        for ns in (plain, labelled, holder):
            kube_api.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false")
