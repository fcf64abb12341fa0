"""`helm test` (issues 20, 41): the chart's test hook Pod proves the schedule validator answers in
its mode (enforce: a refusal; warn: Kustodian's warning; audit: silence, once Kustodian is seen
answering), a mutation, and that a replica serving this very configuration armed it.

kube-testserver runs no kubelet, so the hook's own command (the script the chart renders into the
Pod) runs here, with the Pod's env, against the real API server, behind the chart's webhook
configurations pointed at a locally running Kustodian started with the mode and arming flags of
the chart's own Deployment.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kustodian.policy.modes import Mode, outcome
from kustodian.policy.reclaim.validation import KIND_PVC, validate_object
from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess, start_webhook, stop_webhook
from tests.e2e.stories import apply
from tests.support import free_port

from .conftest import Doc, find, one, render, run_hook_script

pytestmark = pytest.mark.api

CONFIG_NAME = "kchart-kustodian-helmtest"
MODES = ("enforce", "warn", "audit")
MALFORMED = "not a schedule"
SCHEDULES = "reclaim-space-validation.kustodian.io"


def values(mode: str, **more: Any) -> dict[str, Any]:
    return {"admission": {"reclaimValidation": {"mode": mode, **more}}}


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Doc]]:
    return {mode: render(values(mode), tmp_path_factory.mktemp(f"helm-test-{mode}"), include_crds=False)
            for mode in MODES}


def mode_flags(chart: list[Doc]) -> list[str]:
    """The enforcement-mode and arming flags of the chart's webhook Deployment (the local webhook runs
    with them), the configuration it arms renamed as ``register`` names it."""
    (container,) = one(chart, "Deployment", "kchart-kustodian")["spec"]["template"]["spec"]["containers"]
    flags = [a for a in container["args"] if a.startswith(("--reclaim-mode=", "--deletion-guard-mode=",
                                                           "--webhook-configuration-", "--webhook-failure-policies="))]
    assert len(flags) == 5, container["args"]
    return [f"--webhook-configuration-name={CONFIG_NAME}" if a.startswith("--webhook-configuration-name=") else a
            for a in flags]


@pytest.fixture
def hook(request: pytest.FixtureRequest, kube_api: KubeApi, charts: dict[str, list[Doc]],
         tmp_path: Path) -> Iterator[WebhookProcess]:
    workdir = tmp_path / "webhook"
    workdir.mkdir()
    hook = start_webhook(kube_api, workdir, *mode_flags(charts[request.param]))
    yield hook
    stop_webhook(hook)


def register(kube_api: KubeApi, chart: list[Doc], url: str, ca_bundle: str | None) -> None:
    configs = []
    for doc in chart:
        if doc["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            out: Doc = json.loads(json.dumps(doc))
            out["metadata"] = {"name": CONFIG_NAME, "annotations": doc["metadata"]["annotations"]}
            for w in out["webhooks"]:
                w["clientConfig"] = {"url": url + w["clientConfig"]["service"]["path"]}
                if ca_bundle:
                    w["clientConfig"]["caBundle"] = ca_bundle
            configs.append(out)
    apply(kube_api, *configs)


def policies(kube_api: KubeApi) -> dict[str, str]:
    """Every webhook's failurePolicy in the two registered configurations, by name."""
    out: dict[str, str] = {}
    for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
        config = json.loads(kube_api.kubectl("get", kind, CONFIG_NAME, "-o", "json").stdout)
        out.update({w["name"]: w["failurePolicy"] for w in config["webhooks"]})
    return out


def unregister(kube_api: KubeApi) -> None:
    kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", CONFIG_NAME,
                     "--ignore-not-found")


def run_test_pod(kube_api: KubeApi, chart: list[Doc], mode: str, namespace: str,
                 tmp: Path) -> subprocess.CompletedProcess[str]:
    """The hook Pod's container command, with its env (TEST_NAMESPACE pointed at ``namespace``)."""
    pod = one(chart, "Pod")
    (container,) = pod["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {"TEST_NAMESPACE": "default", "RECLAIM_MODE": mode, "WEBHOOK_CONFIGURATION": "kchart-kustodian"}
    return run_hook_script(kube_api, container, tmp, {**env, "TEST_NAMESPACE": namespace,
                                                      "WEBHOOK_CONFIGURATION": CONFIG_NAME}, timeout=120)


def test_the_hook_is_a_helm_test_with_its_own_least_privilege(charts: dict[str, list[Doc]]) -> None:
    chart = charts["enforce"]
    pod = one(chart, "Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    sa = pod["spec"]["serviceAccountName"]
    (role,) = [r for r in find(chart, "ClusterRole") if r["metadata"]["name"] == sa]
    grants = {(g, r, v, *rule.get("resourceNames", [])) for rule in role["rules"] for g in rule["apiGroups"]
              for r in rule["resources"] for v in rule["verbs"]}
    assert grants == {("storage.k8s.io", "storageclasses", "create"), ("storage.k8s.io", "storageclasses", "delete"),
                      ("", "persistentvolumeclaims", "create"),
                      ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "get", "kchart-kustodian"),
                      ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "get", "kchart-kustodian")}
    for d in chart:
        if d["metadata"]["name"] == sa:
            assert d["metadata"]["annotations"]["helm.sh/hook"] == "test", d["kind"]


def webhook_message(namespace: str) -> str:
    """What Kustodian's validator says about the test's malformed PVC (the webhook's own function)."""
    obj = {"metadata": {"name": "x", "namespace": namespace,
                        "annotations": {"reclaimspace.csiaddons.openshift.io/schedule": MALFORMED}}}
    return "; ".join(validate_object(KIND_PVC, obj))


def audited(hook: WebhookProcess) -> float:
    with hook.http() as http:
        text = http.get("/metrics").text
    pattern = re.compile(r'^kustodian_admission_policy_outcomes_total\{([^}]*)\} (\S+)$', re.MULTILINE)
    return sum(float(n) for labels, n in pattern.findall(text)
               if 'feature="reclaim-validation"' in labels and 'outcome="audited"' in labels)


@pytest.mark.parametrize("hook", MODES, ids=MODES, indirect=True)
def test_helm_test_proves_the_validator_in_its_mode_and_a_mutation(
        kube_api: KubeApi, charts: dict[str, list[Doc]], hook: WebhookProcess, request: pytest.FixtureRequest,
        namespace: str, tmp_path: Path) -> None:
    mode = request.node.callspec.params["hook"]
    chart = charts[mode]
    before = audited(hook)
    register(kube_api, chart, hook.url, hook.ca_bundle())
    try:
        proc = run_test_pod(kube_api, chart, mode, namespace, tmp_path)
        armed = policies(kube_api)
    finally:
        unregister(kube_api)
    assert proc.returncode == 0, proc.stdout + proc.stderr + hook.logs()[-3000:]
    lines = proc.stdout.splitlines()
    if mode == "enforce":
        assert lines[0] == ('ok denial: admission webhook "reclaim-space-validation.kustodian.io" denied the '
                            f"request: {webhook_message(namespace)}")
    elif mode == "warn":
        # the API server hands the webhook's warning to the client as kubectl prints it
        warning = outcome(Mode.WARN, webhook_message(namespace)).warning
        assert lines[0] == f"ok warning: Warning: {warning}"
        assert warning is not None and warning.startswith("kustodian (warn mode, not enforced): metadata.annotations")
    else:
        assert lines[0].startswith("ok audit: Kustodian answered (Warning: reclaimspace.csiaddons.openshift.io/"
                                   "schedule: '0 0 30 2 *' is accepted")
        assert audited(hook) == before + 1  # the silent refusal was counted
    assert lines[1:] == ["ok mutation: reclaimspace.csiaddons.openshift.io/schedule @weekly",
                         f"ok armed: {CONFIG_NAME} is armed by a replica serving it"]
    # armed as the mode intends: the validator fails closed in enforce, open in warn and audit
    assert armed[SCHEDULES] == ("Fail" if mode == "enforce" else "Ignore"), armed
    # dry runs only: nothing left behind
    assert kube_api.kubectl("get", "pvc", "-n", namespace, "-o", "name").stdout.strip() == ""
    left = kube_api.kubectl("get", "storageclass", "-o", "name").stdout
    assert "kustodian-helm-test-" not in left


@pytest.mark.parametrize(("mode", "failure"), [
    ("enforce", "FAIL denial: a malformed schedule was not refused by Kustodian"),
    ("warn", "FAIL warning: a malformed schedule was admitted without Kustodian's warning"),
    ("audit", "FAIL audit: Kustodian did not answer"),
], ids=MODES)
def test_helm_test_fails_when_kustodian_does_not_answer(
        kube_api: KubeApi, mode: str, failure: str, namespace: str, tmp_path: Path) -> None:
    """The webhook configurations registered, no Kustodian behind them, failurePolicy Ignore (what
    warn and audit installs run with): every request goes through unjudged, and the test says so."""
    ignore = {"failurePolicy": "Ignore"}
    chart = render({"admission": {"reclaimValidation": {"mode": mode, **ignore}, "reclaimMutation": ignore,
                                  "reclaimConfigValidation": ignore, "deletionGuard": ignore}},
                   tmp_path, include_crds=False)
    register(kube_api, chart, f"https://127.0.0.1:{free_port()}", None)
    try:
        proc = run_test_pod(kube_api, chart, mode, namespace, tmp_path)
    finally:
        unregister(kube_api)
    assert proc.returncode != 0
    assert failure in proc.stderr


def test_helm_test_fails_when_only_a_replica_of_another_configuration_answers(
        kube_api: KubeApi, charts: dict[str, list[Doc]], namespace: str, tmp_path: Path) -> None:
    """A replica that refuses and mutates but runs another configuration (the pods an upgrade
    replaces): it never arms this one, so an enforce guard would fail open while Kustodian is down.
    The refusal alone would pass; the test says what is missing."""
    chart = charts["enforce"]
    other = [a if not a.startswith("--webhook-configuration-checksum=") else
             "--webhook-configuration-checksum=0000000000000000" for a in mode_flags(chart)]
    hook = start_webhook(kube_api, tmp_path / "webhook", *other)
    register(kube_api, chart, hook.url, hook.ca_bundle())
    try:
        proc = run_test_pod(kube_api, chart, "enforce", namespace, tmp_path)
        armed = policies(kube_api)
    finally:
        unregister(kube_api)
        stop_webhook(hook)
    assert proc.returncode != 0, proc.stdout
    assert proc.stdout.splitlines()[0].startswith("ok denial: ")
    assert "FAIL armed: no replica serving this release's configuration armed it" in proc.stderr, proc.stderr
    assert "kustodian.io/armed-for is None, not its kustodian.io/configuration-checksum" in proc.stderr
    assert armed[SCHEDULES] == "Ignore", armed
