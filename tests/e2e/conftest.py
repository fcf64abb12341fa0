"""End-to-end fixtures: Kustodian's own processes, started exactly as a user starts them."""

from __future__ import annotations

import base64
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kustodian.testing.crds import rook_crds
from kustodian.testing.webhooks import webhook_configurations
from tests.conftest import KubeApi
from tests.support import eventually, free_port


@pytest.fixture(scope="session")
def rook_crds_installed(kube_api: KubeApi) -> None:
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(rook_crds()))
    kube_api.kubectl("wait", "--for=condition=Established", "--timeout=30s",
                     *[f"crd/{d['metadata']['name']}" for d in rook_crds()])


@dataclass
class WebhookProcess:
    url: str
    ca_file: Path
    proc: subprocess.Popen[str]
    log_file: Path

    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca_file.read_bytes()).decode()

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, verify=ssl.create_default_context(cafile=str(self.ca_file)))

    def logs(self) -> str:
        return self.log_file.read_text()


def kustodian(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kustodian", *args], capture_output=True, text=True,
                          check=False, **kw)


def start_webhook(kube_api: KubeApi, workdir: Path, *extra: str, kubeconfig: Path | None = None,
                  certs_dir: Path | None = None) -> WebhookProcess:
    """``kustodian webhook`` as a process; its pair issued by ``kustodian certs issue`` into
    ``workdir``, or ``certs_dir``'s (``ca.crt``, ``tls.crt``, ``tls.key`` for kustodian.kustodian.svc,
    localhost and 127.0.0.1: the session's ``tls_dir``, one CLI process less)."""
    if certs_dir is None:
        certs_dir = workdir / "certs"
        issued = kustodian("certs", "issue", "--service", "kustodian", "--namespace", "kustodian",
                           "--out", str(certs_dir), "--ip", "127.0.0.1", "--dns", "localhost")
        assert issued.returncode == 0, issued.stderr
    port = free_port()
    log_file = workdir / "webhook.log"
    env = {**os.environ, "KUSTODIAN_LOG__FORMAT": "text"}
    with log_file.open("w") as log_out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kustodian", "webhook", "--kubeconfig", str(kubeconfig or kube_api.kubeconfig),
             "--webhook-host", "127.0.0.1", "--webhook-port", str(port), "--tls-cert-file", str(certs_dir / "tls.crt"),
             "--tls-key-file", str(certs_dir / "tls.key"), *extra],
            stdout=log_out, stderr=subprocess.STDOUT, text=True, env=env)
    hook = WebhookProcess(f"https://127.0.0.1:{port}", certs_dir / "ca.crt", proc, log_file)
    with hook.http() as http:
        answers: list[bool] = []

        def ready_or_exited() -> bool:
            try:
                answers.append(http.get("/readyz").status_code == 200)
            except httpx.TransportError:
                answers.append(False)
            return answers[-1] or proc.poll() is not None

        if not eventually(ready_or_exited, timeout=60, poll=0.1) or not answers[-1]:
            proc.kill()
            raise AssertionError(f"webhook did not become ready:\n{hook.logs()}")
    return hook


def stop_webhook(hook: WebhookProcess) -> None:
    hook.proc.terminate()
    try:
        hook.proc.wait(15)
    except subprocess.TimeoutExpired:
        hook.proc.kill()


def unregister_and_stop(kube_api: KubeApi, hook: WebhookProcess, configurations: str,
                        storageclass: str, pv: str) -> None:
    """A test's own webhook gone: its configurations (by name) first, so nothing calls a stopped
    server, then the process; then the StorageClass and PV the test made."""
    kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", configurations,
                     "--ignore-not-found")
    stop_webhook(hook)
    kube_api.kubectl("delete", "storageclass", storageclass, "--ignore-not-found")
    kube_api.kubectl("delete", "pv", pv, "--ignore-not-found")


@pytest.fixture(scope="module")
def webhook(kube_api: KubeApi, rook_crds_installed: None,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    hook = start_webhook(kube_api, tmp_path_factory.mktemp("webhook"))
    configs = webhook_configurations(hook.url, hook.ca_bundle())
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(configs))
    try:
        yield hook
    finally:
        kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", "kustodian",
                         "--ignore-not-found")
        stop_webhook(hook)


@pytest.fixture(scope="module")
def rook_upstream(kube_api: KubeApi, rook_crds_installed: None, upstream: Path) -> Iterator[Path]:
    """Rook's real CRDs (``../shared/upstream/rook/crds.yaml``) in place of the test tier's
    schemaless ones, for one module; the stand-ins are put back afterwards."""
    crds = upstream / "rook" / "crds.yaml"
    kube_api.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crds), timeout=120)
    names = [f"crd/{d['metadata']['name']}" for d in yaml.safe_load_all(crds.read_text()) if d]
    kube_api.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
    try:
        yield upstream
    finally:
        kube_api.kubectl("replace", "-f", "-", input=yaml.safe_dump_all(rook_crds()), check=False)
