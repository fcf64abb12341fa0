"""`helm test` (issue 20): the chart's test hook Pod proves a denial and a mutation.

kube-testserver runs no kubelet, so the hook's own command (the script the chart renders
into the Pod) runs here, with the Pod's env, against the real API server, behind the chart's
webhook configurations pointed at a locally running Kustodian.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess, start_webhook, stop_webhook
from tests.e2e.stories import apply

from .conftest import Doc, find, one, render, run_hook_script

pytestmark = pytest.mark.api

CONFIG_NAME = "kchart-kustodian-helmtest"


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> list[Doc]:
    return render(None, tmp_path_factory.mktemp("helm-test"), include_crds=False)


@pytest.fixture(scope="module")
def hook(kube_api: KubeApi, chart: list[Doc], tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    hook = start_webhook(kube_api, tmp_path_factory.mktemp("helm-test-webhook"))
    yield hook
    stop_webhook(hook)


def register(kube_api: KubeApi, chart: list[Doc], hook: WebhookProcess) -> None:
    configs = []
    for doc in chart:
        if doc["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            out: Doc = json.loads(json.dumps(doc))
            out["metadata"] = {"name": CONFIG_NAME}
            for w in out["webhooks"]:
                w["clientConfig"] = {"url": hook.url + w["clientConfig"]["service"]["path"],
                                     "caBundle": hook.ca_bundle()}
            configs.append(out)
    apply(kube_api, *configs)


def run_test_pod(kube_api: KubeApi, chart: list[Doc], namespace: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    """The hook Pod's container command, with its env (TEST_NAMESPACE pointed at ``namespace``)."""
    pod = one(chart, "Pod")
    (container,) = pod["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {"TEST_NAMESPACE": "default"}
    return run_hook_script(kube_api, container, tmp, {"TEST_NAMESPACE": namespace}, timeout=120)


def test_the_hook_is_a_helm_test_with_its_own_least_privilege(chart: list[Doc]) -> None:
    pod = one(chart, "Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    sa = pod["spec"]["serviceAccountName"]
    (role,) = [r for r in find(chart, "ClusterRole") if r["metadata"]["name"] == sa]
    grants = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
              for v in rule["verbs"]}
    assert grants == {("storage.k8s.io", "storageclasses", "create"), ("storage.k8s.io", "storageclasses", "delete"),
                      ("", "persistentvolumeclaims", "create")}
    for d in chart:
        if d["metadata"]["name"] == sa:
            assert d["metadata"]["annotations"]["helm.sh/hook"] == "test", d["kind"]


def test_helm_test_proves_a_denial_and_a_mutation(
        kube_api: KubeApi, chart: list[Doc], hook: WebhookProcess, namespace: str, tmp_path: Path) -> None:
    register(kube_api, chart, hook)
    try:
        proc = run_test_pod(kube_api, chart, namespace, tmp_path)
    finally:
        kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", CONFIG_NAME,
                         "--ignore-not-found")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'ok denial: admission webhook "reclaim-space-validation.kustodian.io" denied the request' in proc.stdout
    assert "ok mutation: reclaimspace.csiaddons.openshift.io/schedule @weekly" in proc.stdout
    # dry runs only: nothing left behind
    assert kube_api.kubectl("get", "pvc", "-n", namespace, "-o", "name").stdout.strip() == ""
    left = kube_api.kubectl("get", "storageclass", "-o", "name").stdout
    assert "kustodian-helm-test-" not in left


def test_helm_test_fails_without_kustodian(kube_api: KubeApi, chart: list[Doc], namespace: str,
                                           tmp_path: Path) -> None:
    proc = run_test_pod(kube_api, chart, namespace, tmp_path)
    assert proc.returncode != 0
    assert "FAIL denial: a malformed schedule was not refused by Kustodian" in proc.stderr
