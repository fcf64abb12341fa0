"""reclaimSpace.mutation: which path gives a new PVC its schedule, chosen from the served API versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart.conftest import CHART, NAMESPACE, RELEASE, helm

MAP = "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"
PARAMS = "kustodian.io/v1alpha1/ReclaimSpaceParams"
STAGGER = {"config": {"stagger-window": "2h"}}


def _render(tmp: Path, values: dict[str, Any], *api_versions: str, check: bool = True) -> Any:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    for version in api_versions:
        args += ["--api-versions", version]
    proc = helm(*args, values=values, tmp=tmp, check=check)
    return proc if not check else [d for d in yaml.safe_load_all(proc.stdout) if d]


def _controllers_env(docs: list[dict[str, Any]]) -> dict[str, str]:
    dep = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("controllers"))
    return {e["name"]: e.get("value", "") for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}


@pytest.mark.parametrize(("mutation", "extra", "served", "policy", "webhook"), [
    ("auto", {}, (), False, True),
    ("auto", {}, (MAP,), False, True),  # the params CRD not installed yet (an upgrade): the webhook
    ("auto", {}, (MAP, PARAMS), True, False),
    ("auto", STAGGER, (MAP, PARAMS), True, True),  # the webhook still staggers at creation
    ("both", {}, (MAP, PARAMS), True, True),
    ("webhook", {}, (MAP, PARAMS), False, True),
    ("policy", STAGGER, (MAP, PARAMS), True, False),
], ids=["auto-old-cluster", "auto-no-crd", "auto-1.36", "auto-1.36-stagger", "both", "webhook", "policy"])
def test_the_path_follows_the_value_and_the_served_versions(
        tmp_path: Path, mutation: str, extra: dict[str, Any], served: tuple[str, ...], policy: bool,
        webhook: bool) -> None:
    docs = _render(tmp_path, {"reclaimSpace": {"mutation": mutation, **extra}}, *served)
    kinds = [d["kind"] for d in docs]
    assert ("MutatingAdmissionPolicy" in kinds) is policy
    assert ("MutatingAdmissionPolicyBinding" in kinds) is policy
    hooks = [w["name"] for d in docs if d["kind"] == "MutatingWebhookConfiguration" for w in d["webhooks"]]
    assert ("reclaim-space.kustodian.io" in hooks) is webhook
    env = _controllers_env(docs)
    assert env["KUSTODIAN_RECLAIM__MUTATION_PARAMS"] == (f"{RELEASE}-kustodian-reclaim-space" if policy else "")
    vwc = next(d for d in docs if d["kind"] == "ValidatingWebhookConfiguration")
    policies = vwc["metadata"]["annotations"]["kustodian.io/failure-policies"]
    assert ("reclaim-space.kustodian.io=" in policies) is webhook  # arming compares only what is rendered
    if policy:
        binding = next(d for d in docs if d["kind"] == "MutatingAdmissionPolicyBinding")
        assert binding["spec"]["paramRef"] == {"name": f"{RELEASE}-kustodian-reclaim-space", "namespace": NAMESPACE,
                                               "parameterNotFoundAction": "Allow"}
        role = next(d for d in docs if d["kind"] == "Role" and d["metadata"]["name"].endswith("controllers"))
        assert {"apiGroups": ["kustodian.io"], "resources": ["reclaimspaceparams"],
                "resourceNames": [f"{RELEASE}-kustodian-reclaim-space"], "verbs": ["get", "update"]} in role["rules"]


@pytest.mark.parametrize(("values", "served", "names"), [
    ({"mutation": "policy"}, (), "MutatingAdmissionPolicy (Kubernetes >= 1.36)"),
    ({"mutation": "both"}, (MAP,), "ReclaimSpaceParams CRD"),
    ({"mutation": "policy"}, (MAP, PARAMS), "controllers.enabled is false"),
], ids=["not-served", "no-crd", "no-controllers"])
def test_a_path_that_cannot_work_fails_the_render_naming_the_value(
        tmp_path: Path, values: dict[str, Any], served: tuple[str, ...], names: str) -> None:
    full: dict[str, Any] = {"reclaimSpace": values}
    if "controllers" in names:
        full["controllers"] = {"enabled": False}
    proc = _render(tmp_path, full, *served, check=False)
    assert proc.returncode != 0
    assert f"reclaimSpace.mutation={values['mutation']}" in proc.stderr and names in proc.stderr


def test_an_unknown_value_is_refused_by_the_schema(tmp_path: Path) -> None:
    proc = _render(tmp_path, {"reclaimSpace": {"mutation": "cel"}}, check=False)
    assert proc.returncode != 0 and "mutation" in proc.stderr
