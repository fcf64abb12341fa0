"""docs/install-without-helm.md works as written: its command blocks run in order against a real
API server of their own, and deploy/kustodian.yaml is what the chart renders today.

The page's steps install cluster-wide webhook configurations with ``failurePolicy: Fail`` that
point at a Service no Pod backs here, so they get a kube-testserver to themselves: the shared one
would refuse other tests' requests. Where the page waits for the webhook's Pod, the test runs
that Pod's command line (read back from the applied Deployment) on this machine, since the API
server runs no kubelet; what the steps promise is then checked by their effect on the API, by the
page's own verify block.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from docsgen import manifests
from kustodian.kube.resources import MUTATING_WEBHOOKS, SECRETS, VALIDATING_WEBHOOKS
from tests.chart.conftest import helm_binary, webhook_command
from tests.conftest import KubeApi, serve_api
from tests.docs.published import chart_version
from tests.support import wait_while_running

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "install-without-helm.md"
COMMENT = re.compile(r"<!-- (?P<what>[^>]+) -->\s*$")
NOT_RUN = "not run by the tests:"
LOCAL = "the tests run the Deployment's command line locally here"
# built-in kinds this test's API server does not serve (a real cluster does): `kubectl apply -k`
# creates everything else and names these; a kubectl shim lets exactly that pass
UNSERVED = {"PodDisruptionBudget": "policy/v1", "NetworkPolicy": "networking.k8s.io/v1"}
SHIM = """#!{python}
# kubectl, except that a `-k` apply/delete failing only on {unserved} (not served by this test's
# API server) succeeds, as it would on a cluster; every other error stays an error
import re, subprocess, sys
proc = subprocess.run([{kubectl!r}, *sys.argv[1:]], capture_output=True, text=True)
sys.stdout.write(proc.stdout)
sys.stderr.write(proc.stderr)
line = re.compile(r'resource mapping not found for name: "[^"]+" namespace: "[^"]*" from "[^"]+": '
                  r'no matches for kind "(\\w+)" in version "([^"]+)"$')
unserved = {unserved!r}
def tolerated(text):
    if "-k" not in sys.argv or not text.strip():
        return False
    for l in text.splitlines():
        m = line.match(l)
        if not (m and unserved.get(m[1]) == m[2]) and l.strip() not in ("", "ensure CRDs are installed first"):
            return False
    return True
sys.exit(0 if proc.returncode and tolerated(proc.stderr) else proc.returncode)
"""

pytestmark = pytest.mark.api


def blocks(text: str) -> list[tuple[str, str]]:
    """Every ```sh block in order: (its text, the HTML comment on the line before it or "")."""
    out: list[tuple[str, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            j = lines.index("```", i + 1)
            prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            m = COMMENT.search(prev)
            out.append(("\n".join(lines[i + 1:j]), m["what"] if m else ""))
            i = j
        i += 1
    return out


@pytest.fixture(scope="module")
def own_api(kube_tools: Path | None) -> Iterator[KubeApi]:
    yield from serve_api(kube_tools)


def test_the_committed_manifests_are_the_chart_rendered_today() -> None:
    committed = manifests.OUT.read_text()
    assert committed == manifests.render(helm_binary()), "deploy/kustodian.yaml is stale: run make manifests"
    assert "--deletion-guard-mode=warn" in committed and "--tls-mode=builtin" in committed


def published(api: KubeApi) -> bool:
    """Every webhook of both configurations carries a CA bundle."""
    for res in (VALIDATING_WEBHOOKS, MUTATING_WEBHOOKS):
        for hook in api.client.get(res, "kustodian")["webhooks"]:
            if b"BEGIN CERTIFICATE" not in base64.b64decode(hook.get("clientConfig", {}).get("caBundle", "")):
                return False
    return True


def test_the_steps_install_kustodian_as_written(own_api: KubeApi, tmp_path: Path) -> None:
    steps = blocks(PAGE.read_text())
    run = [(b, what) for b, what in steps if not what.startswith(NOT_RUN)]
    assert [what for _, what in steps if what.startswith(NOT_RUN)] == [
        "not run by the tests: needs a cluster with Rook and a reachable Service"]
    assert sum(what.startswith(LOCAL) for _, what in run) == 1
    assert len(run) == 7, [b.splitlines()[0] for b, _ in run]

    (tmp_path / "deploy").symlink_to(REPO / "deploy")  # the page runs from a clone's root
    assert own_api.tools is not None
    served = own_api.kubectl("api-resources", "-o", "name").stdout.split()
    assert not {"poddisruptionbudgets.policy", "networkpolicies.networking.k8s.io"} & set(served), served
    shim = tmp_path / "bin" / "kubectl"
    shim.parent.mkdir()
    shim.write_text(SHIM.format(python=sys.executable, kubectl=str(own_api.tools / "kubectl"), unserved=UNSERVED))
    shim.chmod(0o755)
    env = {**os.environ, "KUBECONFIG": str(own_api.kubeconfig), "HOME": str(tmp_path),
           "PATH": os.pathsep.join([str(shim.parent), os.environ["PATH"]])}
    webhook: subprocess.Popen[bytes] | None = None
    log = tmp_path / "webhook.log"
    try:
        for block, what in run:
            if what.startswith(LOCAL):
                assert "rollout status deployment/kustodian" in block
                with log.open("w") as out:
                    webhook = subprocess.Popen(
                        webhook_command(own_api, tmp_path, namespace="kustodian", name="kustodian",
                                        kubeconfig=own_api.kubeconfig, keep_port=False),
                        stdout=out, stderr=subprocess.STDOUT, env={**env, "KUSTODIAN_LOG__FORMAT": "text"})
                wait_while_running(webhook, log, lambda: published(own_api),
                                   "the webhook's CA published in both configurations", 60, poll=0.2)
                continue
            if "kubectl delete -k" in block:  # the uninstall: first, what the steps promised
                installed_as_promised(own_api)
                assert webhook is not None
                webhook.terminate()  # its Pod ends with its Deployment
                webhook.wait(15)
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=120, check=False)
            assert proc.returncode == 0, f"{block}\n{proc.stdout}\n{proc.stderr}"
    finally:
        if webhook is not None and webhook.poll() is None:
            webhook.terminate()
            webhook.wait(15)
    # uninstalled: nothing of the release is left, the CA's Secrets included
    left = own_api.kubectl("get", "validatingwebhookconfiguration,mutatingwebhookconfiguration,clusterrole,"
                           "clusterrolebinding,crd,validatingadmissionpolicy,namespace", "-o", "name").stdout
    assert "kustodian" not in left, left


def installed_as_promised(api: KubeApi) -> None:
    """The CA in the Secret is every webhook's caBundle; the image is the user's; both modes enforce."""
    secret = api.client.get(SECRETS, "kustodian-tls", "kustodian")
    ca = base64.b64decode(secret["data"]["ca.crt"])
    for res in (VALIDATING_WEBHOOKS, MUTATING_WEBHOOKS):
        for hook in api.client.get(res, "kustodian")["webhooks"]:
            assert base64.b64decode(hook["clientConfig"]["caBundle"]) == ca
    args = api.kubectl("-n", "kustodian", "get", "deployment", "kustodian", "-o",
                       "jsonpath={.spec.template.spec.containers[0].args}").stdout
    assert "--deletion-guard-mode=enforce" in args and "--reclaim-mode=enforce" in args
    # the configuration now intends Fail, and the Deployment's new pods would carry that; the
    # replica still running in warn does not, so it never arms it: nothing refuses yet
    guard = "deletion-guard.kustodian.io"
    config = api.client.get(VALIDATING_WEBHOOKS, "kustodian")
    assert f"{guard}=Fail" in config["metadata"]["annotations"]["kustodian.io/failure-policies"]
    assert f"--webhook-failure-policies={guard}=Fail" in args
    assert {h["failurePolicy"] for h in config["webhooks"]} == {"Ignore"}
    image = api.kubectl("-n", "kustodian", "get", "deployment", "kustodian", "-o",
                        "jsonpath={.spec.template.spec.containers[0].image}").stdout
    assert image == f"registry.example.com/kustodian:{chart_version()}"  # the page's newTag, the release's


def test_a_step_that_fails_fails_the_test(own_api: KubeApi, tmp_path: Path) -> None:
    """The runner sees a failing command inside a block (bash -e): the old page's `certs inject`
    before any configuration existed is such a step."""
    assert own_api.tools is not None
    env = {**os.environ, "KUBECONFIG": str(own_api.kubeconfig),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), str(own_api.tools), os.environ["PATH"]])}
    (tmp_path / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c",
                           "kustodian certs inject --ca-file ca.crt --validating never-created\necho after"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0 and "after" not in proc.stdout

