"""Issue 36: the chart as users get it: `helm package`d (in CI: the release artifact of `make dist`),
then `helm install`ed from the .tgz into an
API server that enforces RBAC (kube-testserver, KTS_AUTHORIZATION=RBAC). Every object the packaged
chart renders is accepted and stored, and the node agent's metrics port is what the rendered
PodMonitor, and (on `helm upgrade` without it) the ServiceMonitor through the agent's Service,
select: their selectors are evaluated by the API server against a pod built from the DaemonSet's
own template (kube-testserver runs no DaemonSet controller)."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import KubeApi

from .conftest import ALL_ON, CHART, Doc, helm

pytestmark = pytest.mark.api

RELEASE = "kpkg"
NAMESPACE = "kustodian-pkg"  # apart from the other chart tests' release and namespace on this server
FULLNAME = f"{RELEASE}-kustodian"
AGENT = f"{FULLNAME}-node-agent"
NODE = "kpkg-node-1"

MONITORING_CRDS = {"servicemonitors": "ServiceMonitor", "podmonitors": "PodMonitor",
                   "prometheusrules": "PrometheusRule"}

# every feature on, with monitoring; the webhooks Ignore failures: nothing serves them on this
# server, and other tests share it
VALUES: dict[str, Any] = copy.deepcopy(ALL_ON)
VALUES["metrics"] = {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
                     "podMonitor": {"enabled": True}, "prometheusRule": {"enabled": True},
                     "dashboard": {"enabled": True}}
VALUES["admission"] = {w: {"failurePolicy": "Ignore"} for w in
                       ("deletionGuard", "reclaimValidation", "reclaimConfigValidation", "capacityValidation",
                        "reclaimMutation")}
VALUES["reclaimSpace"]["csiAddonsConfigRole"] = False  # its namespace does not exist here
VALUES["nodeCleanup"]["enabled"] = True
# kube-testserver serves neither networking.k8s.io nor policy: the NetworkPolicies and the PDB
# are validated against the Kubernetes schemas instead (test_chart_values.py)
VALUES["networkPolicy"] = {"enabled": False}
VALUES["webhook"] = {"podDisruptionBudget": {"enabled": False}}
# issue 41's values, set away from their defaults, so the API server stores them as rendered
OPT_OUT = {"matchExpressions": [{"key": "kustodian.io/skip", "operator": "DoesNotExist"}]}
VALUES["webhook"].update({"hostNetwork": True, "port": 9443, "namespaceSelector": OPT_OUT, "objectSelector": OPT_OUT,
                          "updateStrategy": {"type": "Recreate"}, "revisionHistoryLimit": 2})
VALUES["metrics"]["port"] = 9080
VALUES["controllers"] = {"updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                         "revisionHistoryLimit": 3}
VALUES["nodeAgent"].update({"updateStrategy": {"type": "OnDelete"}, "revisionHistoryLimit": 0})
VALUES["reclaimSpace"]["config"]["auto-reclaim-storageclass"]["rbd.fast"] = "CRON_TZ=Europe/Paris 30 2 * * mon-fri"


def minimal_crd(plural: str, kind: str) -> Doc:
    """A stand-in for prometheus-operator's CRD (the repository does not ship it): the group,
    names and version the chart's objects use, any content."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.monitoring.coreos.com"},
            "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The release artifact when ``KUSTODIAN_TEST_DIST`` names a ``make dist`` folder (CI: the ``.tgz`` a
    tag would push is the one installed here; it must be there), else the chart packaged now."""
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    name = f"kustodian-{chart['version']}.tgz"
    dist = os.environ.get("KUSTODIAN_TEST_DIST")
    if dist:
        tgz = Path(dist) / name
        assert tgz.is_file(), f"KUSTODIAN_TEST_DIST={dist} holds no {name}: run make dist"
        return tgz
    out = tmp_path_factory.mktemp("package")
    proc = helm("package", str(CHART), "--destination", str(out))
    tgz = out / name
    assert tgz.is_file(), proc.stdout
    return tgz


def test_the_package_holds_the_whole_chart(packaged: Path, tmp_path: Path) -> None:
    with tarfile.open(packaged) as tar:
        names = set(tar.getnames())
    for path in ("Chart.yaml", "values.yaml", "values.schema.json", "README.md", "templates/NOTES.txt",
                 "templates/tests/admission-test.yaml", "files/helm-test.py", "files/uninstall-cleanup.py",
                 "crds/orphanedreplicadirs.kustodian.io.yaml", "dashboards/kustodian.json"):
        assert f"kustodian/{path}" in names, path
    proc = helm("lint", str(packaged), "--strict", values=VALUES, tmp=tmp_path)
    assert "0 chart(s) failed" in proc.stdout


def _helm_on(api: KubeApi, *args: str, tmp: Path, values: dict[str, Any]) -> str:
    return helm(*args, "--kubeconfig", str(api.kubeconfig), "--namespace", NAMESPACE, values=values, tmp=tmp).stdout


@pytest.fixture(scope="module")
def installed(kube_api_rbac: KubeApi, packaged: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    api = kube_api_rbac
    tmp = tmp_path_factory.mktemp("install")
    created: list[str] = []
    for plural, kind in MONITORING_CRDS.items():
        name = f"{plural}.monitoring.coreos.com"
        if api.kubectl("get", "crd", name, check=False).returncode != 0:
            api.kubectl("apply", "-f", "-", input=json.dumps(minimal_crd(plural, kind)))
            created.append(name)
    for ns in ("longhorn-system",):  # the node agent's Role for Longhorn's objects lives there
        with contextlib.suppress(AssertionError):
            api.kubectl("create", "namespace", ns)
    for name in created:
        api.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    _helm_on(api, "install", RELEASE, str(packaged), "--create-namespace", tmp=tmp, values=VALUES)
    try:
        yield tmp
    finally:
        # no kubelet runs the post-delete Job here: uninstall without hooks, then the namespace
        helm("uninstall", RELEASE, "--no-hooks", "--kubeconfig", str(api.kubeconfig), "--namespace", NAMESPACE,
             check=False)
        api.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
        for name in created:
            api.kubectl("delete", "crd", name, "--wait=false", check=False)


def _manifest(api: KubeApi) -> list[Doc]:
    out = helm("get", "manifest", RELEASE, "--kubeconfig", str(api.kubeconfig), "--namespace", NAMESPACE).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_every_object_of_the_packaged_chart_is_applied(kube_api_rbac: KubeApi, installed: Path) -> None:
    docs = _manifest(kube_api_rbac)
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "DaemonSet", "Service", "ServiceAccount", "ClusterRole", "RoleBinding",
            "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
            "ServiceMonitor", "PodMonitor", "PrometheusRule", "ConfigMap"} <= kinds
    manifest = installed / "manifest.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    stored = json.loads(kube_api_rbac.kubectl("get", "-f", str(manifest), "-o", "json").stdout)["items"]
    assert sorted((d["kind"], d["metadata"]["name"]) for d in stored) == sorted(
        (d["kind"], d["metadata"]["name"]) for d in docs)
    assert all(d["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE for d in stored)
    crd = kube_api_rbac.kubectl("get", "crd", "orphanedreplicadirs.kustodian.io", "-o", "name").stdout
    assert crd.strip() == "customresourcedefinition.apiextensions.k8s.io/orphanedreplicadirs.kustodian.io"
    status = json.loads(helm("status", RELEASE, "--kubeconfig", str(kube_api_rbac.kubeconfig), "--namespace",
                             NAMESPACE, "-o", "json").stdout)
    assert status["info"]["status"] == "deployed"


def _agent_pod(api: KubeApi) -> Iterator[Doc]:
    """A pod from the DaemonSet's template, as its controller would create it on NODE."""
    ds = json.loads(api.kubectl("get", "daemonset", AGENT, "--namespace", NAMESPACE, "-o", "json").stdout)
    template = ds["spec"]["template"]
    pod: Doc = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"{AGENT}-{uuid.uuid4().hex[:5]}", "namespace": NAMESPACE, "labels": template["metadata"]["labels"]},
           "spec": {**template["spec"], "nodeName": NODE}}
    api.kubectl("apply", "-f", "-", input=json.dumps(pod))
    try:
        yield pod
    finally:
        # no kubelet confirms a graceful delete here
        api.kubectl("delete", "pod", pod["metadata"]["name"], "--namespace", NAMESPACE, "--grace-period=0",
                    "--force", check=False)


@pytest.fixture
def agent_pod(kube_api_rbac: KubeApi, installed: Path) -> Iterator[Doc]:
    yield from _agent_pod(kube_api_rbac)


def _selector(label_selector: Doc) -> str:
    """A LabelSelector object as kubectl's -l string."""
    parts = [f"{k}={v}" for k, v in label_selector.get("matchLabels", {}).items()]
    for expr in label_selector.get("matchExpressions", []):
        op = {"In": "in", "NotIn": "notin"}[expr["operator"]]
        parts.append(f"{expr['key']} {op} ({','.join(expr['values'])})")
    return ",".join(parts)


def _selected(api: KubeApi, kind: str, label_selector: Doc, namespaces: list[str]) -> set[str]:
    names: set[str] = set()
    for ns in namespaces:
        out = api.kubectl("get", kind, "--namespace", ns, "-l", _selector(label_selector), "-o", "json").stdout
        names |= {item["metadata"]["name"] for item in json.loads(out)["items"]}
    return names


def _stored(api: KubeApi, kind: str, name: str) -> Doc:
    doc: Doc = json.loads(api.kubectl("get", kind, name, "--namespace", NAMESPACE, "-o", "json").stdout)
    return doc


def test_the_pod_monitor_selects_the_node_agents_metrics_port(kube_api_rbac: KubeApi, agent_pod: Doc) -> None:
    api = kube_api_rbac
    pm = _stored(api, "podmonitors.monitoring.coreos.com", AGENT)
    assert _selected(api, "pods", pm["spec"]["selector"], pm["spec"]["namespaceSelector"]["matchNames"]) == {
        agent_pod["metadata"]["name"]}
    pod = _stored(api, "pod", agent_pod["metadata"]["name"])
    ports = {p["name"]: p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
    (endpoint,) = pm["spec"]["podMetricsEndpoints"]
    assert ports[endpoint["port"]] == 8082
    # the agent's Service selects the same pod, by the port's name
    svc = _stored(api, "service", AGENT)
    assert _selected(api, "pods", {"matchLabels": svc["spec"]["selector"]}, [NAMESPACE]) == {
        agent_pod["metadata"]["name"]}
    (port,) = svc["spec"]["ports"]
    assert port["targetPort"] in ports and port["name"] == "agent-metrics"
    # the ServiceMonitor leaves the agent to the PodMonitor (no double scrape)
    sm = _stored(api, "servicemonitors.monitoring.coreos.com", FULLNAME)
    assert AGENT not in _selected(api, "services", sm["spec"]["selector"], [NAMESPACE])


def test_without_the_pod_monitor_the_service_monitor_scrapes_the_agent_through_its_service(
        kube_api_rbac: KubeApi, installed: Path, packaged: Path) -> None:
    api = kube_api_rbac
    values = copy.deepcopy(VALUES)
    values["metrics"]["podMonitor"]["enabled"] = False
    _helm_on(api, "upgrade", RELEASE, str(packaged), tmp=installed, values=values)
    try:
        assert api.kubectl("get", "podmonitors.monitoring.coreos.com", AGENT, "--namespace", NAMESPACE,
                           check=False).returncode != 0  # removed by the upgrade
        sm = _stored(api, "servicemonitors.monitoring.coreos.com", FULLNAME)
        services = _selected(api, "services", sm["spec"]["selector"], sm["spec"]["namespaceSelector"]["matchNames"])
        assert services == {FULLNAME, f"{FULLNAME}-controllers", AGENT}
        svc = _stored(api, "service", AGENT)
        assert "agent-metrics" in {e["port"] for e in sm["spec"]["endpoints"]}
        assert "agent-metrics" in {p["name"] for p in svc["spec"]["ports"]}
        for pod in _agent_pod(api):
            assert _selected(api, "pods", {"matchLabels": svc["spec"]["selector"]}, [NAMESPACE]) == {
                pod["metadata"]["name"]}
    finally:
        _helm_on(api, "upgrade", RELEASE, str(packaged), tmp=installed, values=VALUES)




def test_issue_41_values_are_stored_as_rendered(kube_api_rbac: KubeApi, installed: Path) -> None:
    """hostNetwork, the webhook selectors, update strategies and revision limits, through a real
    `helm install` of the package: what the API server keeps is what the values say."""
    api = kube_api_rbac
    web = _stored(api, "deployment", FULLNAME)["spec"]
    assert web["strategy"] == {"type": "Recreate"} and web["revisionHistoryLimit"] == 2
    pod = web["template"]["spec"]
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert {p["containerPort"] for p in pod["containers"][0]["ports"]} == {9443, 9080}
    ctrl = _stored(api, "deployment", f"{FULLNAME}-controllers")["spec"]
    assert ctrl["strategy"] == {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    assert ctrl["revisionHistoryLimit"] == 3
    agent = _stored(api, "daemonset", AGENT)["spec"]
    assert agent["updateStrategy"] == {"type": "OnDelete"} and agent["revisionHistoryLimit"] == 0
    for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
        config = json.loads(api.kubectl("get", kind, FULLNAME, "-o", "json").stdout)
        for w in config["webhooks"]:
            if w["name"] == "reclaim-config-validation.kustodian.io":
                continue
            assert w["namespaceSelector"]["matchExpressions"][1:] == OPT_OUT["matchExpressions"], w["name"]
            assert w["namespaceSelector"]["matchExpressions"][0]["operator"] == "NotIn", w["name"]
            assert w["objectSelector"] == OPT_OUT, w["name"]
    cm = _stored(api, "configmap", "kustodian-reclaim-config")
    assert json.loads(cm["data"]["config.json"])["auto-reclaim-storageclass"]["rbd.fast"].startswith("CRON_TZ=")
