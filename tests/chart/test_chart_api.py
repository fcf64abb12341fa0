"""The rendered chart against a real API server: CRD schemas, and the webhook
configurations (pointed at a locally running webhook) carrying the user stories."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess, start_webhook, stop_webhook
from tests.e2e.stories import (
    SCHEDULE,
    apply,
    deletion_guard_story,
    pvc,
    pvc_mutation_story,
    storage_class,
    until,
)

from .conftest import ALL_ON, Doc, find, render

pytestmark = pytest.mark.api

CONFIG_NAME = "kchart-kustodian-localtest"


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
    workdir = tmp_path_factory.mktemp("chart-webhook")
    # the rules file exactly as the chart mounts it (its deletion-rules ConfigMap)
    (rules_cm,) = [d for d in chart if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-deletion-rules")]
    rules_file = workdir / "deletion-rules.yaml"
    rules_file.write_text(rules_cm["data"]["deletion-rules.yaml"])
    hook = start_webhook(kube_api, workdir, f"--deletion-guard-rules-file={rules_file}")
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


@pytest.fixture(scope="module")
def csi_baremetal_crds(kube_api: KubeApi, upstream: Path) -> None:
    """csi-baremetal's own CRDs (the operator's chart installs them; Kustodian ships none)."""
    kube_api.kubectl("apply", "-f", str(upstream / "csi-baremetal" / "crds"))
    kube_api.kubectl("wait", "--for=condition=Established", "--timeout=30s",
                     "crd/availablecapacities.csi-baremetal.dell.com",
                     "crd/availablecapacityreservations.csi-baremetal.dell.com")


def ac(name: str, **spec: Any) -> Doc:
    base = {"Location": "drive-1", "NodeId": "node-a", "storageClass": "SSD", "Size": 1 << 30}
    return {"apiVersion": "csi-baremetal.dell.com/v1", "kind": "AvailableCapacity", "metadata": {"name": name},
            "spec": {**base, **spec}}


@pytest.mark.parametrize(("spec", "why"), [
    ({"Size": -1}, "spec.Size: must be a non-negative integer, got -1"),
    ({"storageClass": "FOO"}, "spec.storageClass: must be one of"),
], ids=["negative-size", "unknown-class"])
def test_the_webhook_refuses_an_invalid_available_capacity(
        kube_api: KubeApi, csi_baremetal_crds: None, chart_webhook: WebhookProcess,
        spec: dict[str, Any], why: str) -> None:
    good = f"ac-{uuid.uuid4().hex[:8]}"
    bad = f"ac-{uuid.uuid4().hex[:8]}"
    try:
        kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(ac(good)))
        out = kube_api.kubectl("get", "ac", good, "-o", "wide").stdout
        assert "node-a" in out and "SSD" in out
        proc = kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(ac(bad, **spec)), check=False)
        assert proc.returncode != 0
        assert 'admission webhook "capacity-validation.kustodian.io" denied the request' in proc.stderr
        assert why in proc.stderr
    finally:
        kube_api.kubectl("delete", "ac", good, bad, "--ignore-not-found")


def test_the_webhook_admits_upstreams_example_objects(
        kube_api: KubeApi, csi_baremetal_crds: None, chart_webhook: WebhookProcess, upstream: Path) -> None:
    derived = upstream / "csi-baremetal" / "derived"
    try:
        for name in ("ac.yaml", "acr.yaml", "lvg.yaml", "drive.yaml"):
            kube_api.kubectl("apply", "--validate=strict", "-f", str(derived / name))
    finally:
        for name in ("ac.yaml", "acr.yaml", "lvg.yaml", "drive.yaml"):
            kube_api.kubectl("delete", "--ignore-not-found", "-f", str(derived / name))


def test_deletion_guard_story_through_the_chart_configuration(
        kube_api: KubeApi, chart_webhook: WebhookProcess, namespace: str) -> None:
    deletion_guard_story(kube_api, namespace)


def test_readme_rule_storageclass_kept_while_a_pvc_names_it(
        kube_api: KubeApi, chart_webhook: WebhookProcess, namespace: str) -> None:
    """README "Deletion rules are data": the rule in deletionGuard.rules, nothing else configured."""
    sc = f"fast-{uuid.uuid4().hex[:6]}"
    apply(kube_api, storage_class(sc, None), pvc("data-0", namespace, sc))
    try:
        out = until(kube_api, ["delete", "storageclass", sc, "--dry-run=server"], "cannot be deleted")
        assert (f'admission webhook "deletion-guard.kustodian.io" denied the request: StorageClass "{sc}" '
                f"cannot be deleted: it has dependents: PersistentVolumeClaims: [{namespace}/data-0]") in out
        kube_api.kubectl("delete", "pvc", "data-0", "-n", namespace)
        until(kube_api, ["delete", "storageclass", sc], f'storageclass.storage.k8s.io "{sc}" deleted')
    finally:
        kube_api.kubectl("delete", "storageclass", sc, "--ignore-not-found", check=False)


def test_pvc_mutation_story_through_the_chart_configuration(
        kube_api: KubeApi, chart_webhook: WebhookProcess, namespace: str) -> None:
    pvc_mutation_story(kube_api, namespace)


def test_schedule_validation_through_the_chart_configuration(
        kube_api: KubeApi, chart_webhook: WebhookProcess) -> None:
    sc = f"rbd-{uuid.uuid4().hex[:6]}"
    apply(kube_api, storage_class(sc, None))
    try:
        # the validation webhook (matchConditions: only objects carrying a policy annotation)
        proc = kube_api.kubectl("annotate", "sc", sc, "--overwrite", f"{SCHEDULE}=every day", check=False)
        assert proc.returncode != 0
        assert 'admission webhook "reclaim-space-validation.kustodian.io" denied the request' in proc.stderr
        kube_api.kubectl("label", "sc", sc, "team=storage")
    finally:
        kube_api.kubectl("delete", "storageclass", sc, "--ignore-not-found")


def test_capacity_validation_through_the_chart_configuration(
        kube_api: KubeApi, csi_baremetal_crds: None, chart_webhook: WebhookProcess) -> None:
    name = f"acr-{uuid.uuid4().hex[:8]}"
    # schema-valid but incoherent: RESERVED on a node it never requested (only the webhook knows)
    acr = {"apiVersion": "csi-baremetal.dell.com/v1", "kind": "AvailableCapacityReservation",
           "metadata": {"name": name},
           "spec": {"Namespace": "default", "Status": "RESERVED",
                    "NodeRequests": {"Requested": ["node-a"], "Reserved": ["node-z"]},
                    "ReservationRequests": [{"CapacityRequest": {"Name": "v", "StorageClass": "SSD", "Size": 1},
                                             "Reservations": ["ac-1"]}]}}
    try:
        proc = kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(acr), check=False)
        assert proc.returncode != 0
        assert 'admission webhook "capacity-validation.kustodian.io" denied the request' in proc.stderr
    finally:
        kube_api.kubectl("delete", "acr", name, "--ignore-not-found")


def test_the_local_webhook_logs_are_clean(chart_webhook: WebhookProcess) -> None:
    assert "Traceback" not in chart_webhook.logs()
