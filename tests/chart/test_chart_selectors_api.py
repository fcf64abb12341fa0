"""Issue 41: webhook.namespaceSelector / webhook.objectSelector narrow what the webhooks see, merged
with the built-in exclusions (kube-system, kube-node-lease, the release namespace,
webhook.excludeNamespaces), never replacing them: proved on a real API server, the chart's webhook
configurations pointed at a locally running Kustodian."""

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
from tests.e2e.stories import SCHEDULE, apply, rbd_pv, until

from .conftest import NAMESPACE, Doc, render, webhooks

CONFIG_NAME = "kchart-kustodian-selectors"
SKIP = "kustodian.io/skip"
NOT_SKIPPED = {"matchExpressions": [{"key": SKIP, "operator": "DoesNotExist"}]}
RUN = uuid.uuid4().hex[:6]
JUDGED, SKIPPED, EXCLUDED = f"ks-judged-{RUN}", f"ks-skipped-{RUN}", f"ks-excluded-{RUN}"
VALUES: dict[str, Any] = {"webhook": {"namespaceSelector": NOT_SKIPPED, "objectSelector": NOT_SKIPPED,
                                      "excludeNamespaces": [EXCLUDED]}}


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> list[Doc]:
    return render(VALUES, tmp_path_factory.mktemp("selectors"), include_crds=False)


def test_the_selectors_are_merged_with_the_exclusions(chart: list[Doc], tmp_path: Path) -> None:
    builtin = {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
               "values": ["kube-system", "kube-node-lease", NAMESPACE, EXCLUDED]}
    for name, w in webhooks(chart).items():
        if name == "reclaim-config-validation.kustodian.io":  # its own namespace, its one ConfigMap: untouched
            assert w["namespaceSelector"]["matchExpressions"][0]["operator"] == "In" and "objectSelector" not in w
            continue
        assert w["namespaceSelector"] == {"matchExpressions": [builtin, *NOT_SKIPPED["matchExpressions"]]}, name
        assert w["objectSelector"] == NOT_SKIPPED, name
    # matchLabels too, and nothing of either by default
    labelled = render({"webhook": {"namespaceSelector": {"matchLabels": {"team": "storage"}}}}, tmp_path,
                      include_crds=False)
    w = webhooks(labelled)["deletion-guard.kustodian.io"]
    assert w["namespaceSelector"]["matchLabels"] == {"team": "storage"}
    assert w["namespaceSelector"]["matchExpressions"][0]["operator"] == "NotIn"
    assert "objectSelector" not in w
    default = webhooks(render(None, tmp_path, include_crds=False))["deletion-guard.kustodian.io"]
    assert set(default["namespaceSelector"]) == {"matchExpressions"} and "objectSelector" not in default


@pytest.fixture(scope="module")
def selected_webhook(kube_api: KubeApi, chart: list[Doc], rook_crds_installed: None,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    for ns, own in ((JUDGED, {}), (SKIPPED, {SKIP: "yes"}), (EXCLUDED, {}), (NAMESPACE, {})):
        # the label every Kubernetes API server sets on a namespace (the exclusions match on it);
        # kube-testserver, a generic API server, does not default it
        labels = {**own, "kubernetes.io/metadata.name": ns}
        apply(kube_api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}})
    hook = start_webhook(kube_api, tmp_path_factory.mktemp("selectors-webhook"))
    configs = []
    for doc in chart:
        if doc["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            out: Doc = json.loads(json.dumps(doc))
            out["metadata"] = {"name": CONFIG_NAME}
            for w in out["webhooks"]:
                w["clientConfig"] = {"url": hook.url + w["clientConfig"]["service"]["path"],
                                     "caBundle": hook.ca_bundle()}
            configs.append(out)
    try:
        apply(kube_api, *configs)
        yield hook
    finally:
        kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", CONFIG_NAME,
                         "--ignore-not-found")
        stop_webhook(hook)
        kube_api.kubectl("delete", "namespace", JUDGED, SKIPPED, EXCLUDED, "--wait=false", "--ignore-not-found")


def create_pvc(kube_api: KubeApi, ns: str, labels: dict[str, str] | None = None) -> tuple[bool, str]:
    """A dry-run PVC with a malformed schedule: (admitted?, kubectl's output)."""
    doc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "data-0", "namespace": ns, "labels": labels or {},
                        "annotations": {SCHEDULE: "weekly"}},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    proc = kube_api.kubectl("create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(doc), check=False)
    return proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.api
def test_a_selected_namespace_is_judged_and_the_exclusions_still_hold(
        kube_api: KubeApi, selected_webhook: WebhookProcess) -> None:
    admitted, out = create_pvc(kube_api, JUDGED)
    assert not admitted and 'admission webhook "reclaim-space-validation.kustodian.io" denied' in out
    # left out by the namespaceSelector, by the objectSelector, and (merged, not replaced) by the
    # built-in exclusions: webhook.excludeNamespaces and the release namespace
    for ns, labels in ((SKIPPED, None), (JUDGED, {SKIP: "yes"}), (EXCLUDED, None), (NAMESPACE, None)):
        admitted, out = create_pvc(kube_api, ns, labels)
        assert admitted, (ns, labels, out)


@pytest.mark.api
def test_the_deletion_guard_sees_only_what_the_selectors_select(
        kube_api: KubeApi, selected_webhook: WebhookProcess) -> None:
    for ns in (JUDGED, SKIPPED):
        apply(kube_api, {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
                         "metadata": {"name": "replicapool", "namespace": ns}, "spec": {"replicated": {"size": 3}}},
              rbd_pv(f"pv-{ns}", ns, "replicapool"))
    try:
        out = until(kube_api, ["delete", "cephblockpool", "replicapool", "-n", JUDGED, "--dry-run=server"],
                    "cannot be deleted")
        assert 'admission webhook "deletion-guard.kustodian.io" denied the request' in out
        out = kube_api.kubectl("delete", "cephblockpool", "replicapool", "-n", SKIPPED, "--dry-run=server").stdout
        assert out.strip() == f'cephblockpool.ceph.rook.io "replicapool" deleted from {SKIPPED} namespace (server dry run)'
    finally:
        kube_api.kubectl("delete", "pv", f"pv-{JUDGED}", f"pv-{SKIPPED}", "--ignore-not-found")
        for ns in (JUDGED, SKIPPED):
            kube_api.kubectl("delete", "cephblockpool", "replicapool", "-n", ns, "--ignore-not-found")
