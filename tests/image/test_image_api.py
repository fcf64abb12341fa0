"""The image as users run it: ``kustodian webhook`` inside the container built from ``Dockerfile``.

The container gets what the chart gives the pod, read from the rendered Deployment: the webhook
container's arguments, its user and group, a read-only root filesystem, every capability
dropped, no privilege escalation, an emptyDir at /tmp and the TLS Secret at /tls. It serves TLS
to the real API server on the host (host network), and the README's deletion-guard and
PVC-mutation stories pass through it. ``.ci/run`` builds the image first
(``python -m kustodian.testing.image``); without podman the test is skipped (failed in CI).
"""

from __future__ import annotations

import base64
import os
import ssl
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml

from kustodian.testing.webhooks import webhook_configurations
from tests.chart.conftest import FULLNAME, NAMESPACE, one, render
from tests.conftest import KubeApi
from tests.e2e.conftest import rook_crds_installed
from tests.e2e.stories import deletion_guard_story, pvc_mutation_story
from tests.image.conftest import podman
from tests.support import free_port, wait_for

__all__ = ["rook_crds_installed"]

pytestmark = pytest.mark.api

UID = 65532
# the chart with a user-provided TLS Secret: the pod serves /tls/tls.crt and /tls/tls.key
CHART_VALUES: dict[str, Any] = {"tls": {"mode": "secret", "secret": {"name": "kustodian-tls", "caBundle": "Zm9v"}}}


def pod_spec(tmp: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    deploy = one(render(CHART_VALUES, tmp, include_crds=False), "Deployment", FULLNAME)
    spec = deploy["spec"]["template"]["spec"]
    (webhook,) = [c for c in spec["containers"] if c["name"] == "webhook"]
    return spec, webhook


def run_flags(spec: dict[str, Any], container: dict[str, Any], tls_dir: Path) -> list[str]:
    """podman flags for what the kubelet would do with this pod spec (security and volumes)."""
    pod_sc, sc = spec["securityContext"], container["securityContext"]
    flags = [f"--user={pod_sc['runAsUser']}:{pod_sc['runAsGroup']}"]
    assert pod_sc["runAsNonRoot"] and pod_sc["runAsUser"] != 0
    if sc.get("readOnlyRootFilesystem"):
        flags += ["--read-only", "--read-only-tmpfs=false"]  # only the volumes the pod mounts
    if sc.get("allowPrivilegeEscalation") is False:
        flags.append("--security-opt=no-new-privileges")
    flags += [f"--cap-drop={c}" for c in sc["capabilities"]["drop"]]
    volumes = {v["name"]: v for v in spec["volumes"]}
    for mount in container["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "emptyDir" in volume:
            flags.append(f"--tmpfs={mount['mountPath']}:rw,size=64m,mode=1777")
        elif "secret" in volume:
            flags.append(f"--volume={tls_dir}:{mount['mountPath']}:ro")
        else:
            raise AssertionError(f"volume {mount['name']}: not mapped for the container test")
    return flags


@dataclass
class Container:
    name: str
    url: str
    metrics_url: str
    ca_file: Path
    pre_stop: list[str]  # the chart's preStop hook command

    def logs(self) -> str:
        proc = podman("logs", self.name, check=False)
        return proc.stdout + proc.stderr

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, verify=ssl.create_default_context(cafile=str(self.ca_file)))


def issue_certs_in_the_image(ref: str, out: Path) -> None:
    """``kustodian certs issue`` inside the image as the chart's user, into a host directory."""
    out.mkdir()
    os.chmod(out, 0o777)  # the container's user (65532) writes here
    podman("run", "--rm", f"--user={UID}:{UID}", "--read-only", f"--volume={out}:/out", ref,
           "certs", "issue", "--service", "kustodian", "--namespace", "kustodian", "--out", "/out",
           "--ip", "127.0.0.1", "--dns", "localhost",
           # the name the chart's --tls-server-name requires, as cert-manager's Certificate carries it
           "--dns", f"{FULLNAME}.{NAMESPACE}.svc")
    assert {p.name for p in out.iterdir()} >= {"ca.crt", "tls.crt", "tls.key"}


@pytest.fixture(scope="module")
def container(built_image: str, kube_api: KubeApi, rook_crds_installed: None,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Container]:
    tmp = tmp_path_factory.mktemp("image")
    spec, webhook = pod_spec(tmp)
    tls_dir = tmp / "tls"
    issue_certs_in_the_image(built_image, tls_dir)
    kubeconfig = tmp / "kubeconfig"  # certificates embedded: one file to mount
    kubeconfig.write_text(kube_api.kubectl("config", "view", "--flatten", "--minify").stdout)
    os.chmod(kubeconfig, 0o644)
    port, metrics_port = free_port(), free_port()
    name = f"kustodian-webhook-{uuid.uuid4().hex[:8]}"
    args = [*webhook["args"],
            # outside a cluster: a kubeconfig instead of the service account, host-network ports
            "--kubeconfig=/kube/config", "--webhook-host=127.0.0.1", f"--webhook-port={port}",
            f"--metrics-listen-address=127.0.0.1:{metrics_port}"]
    assert args[0] == "webhook" and "--tls-cert-file=/tls/tls.crt" in args and "--log-format=json" in args
    podman("run", "--detach", f"--name={name}", "--network=host",
           *run_flags(spec, webhook, tls_dir), f"--volume={kubeconfig}:/kube/config:ro",
           built_image, *args)
    box = Container(name, f"https://127.0.0.1:{port}", f"http://127.0.0.1:{metrics_port}", tls_dir / "ca.crt",
                    webhook["lifecycle"]["preStop"]["exec"]["command"])
    config_name = f"kustodian-image-{uuid.uuid4().hex[:6]}"
    try:
        with box.http() as http:
            def ready() -> bool:
                try:
                    if http.get("/readyz").status_code == 200:
                        return True
                except httpx.TransportError:
                    pass
                state = podman("inspect", "--format", "{{.State.Status}}", name, check=False).stdout.strip()
                assert state == "running", f"the container stopped ({state}):\n{box.logs()}"
                return False

            wait_for(ready, lambda: f"the container to become ready:\n{box.logs()}", 90, poll=0.3)
        ca_bundle = base64.b64encode(box.ca_file.read_bytes()).decode()
        kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(
            webhook_configurations(box.url, ca_bundle, name=config_name)))
        yield box
    finally:
        kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", config_name,
                         "--ignore-not-found")
        podman("rm", "--force", "--time=5", name, check=False)


def in_container(container: Container, code: str) -> subprocess.CompletedProcess[str]:
    """Python inside the running container (the image has no shell)."""
    return podman("exec", container.name, "python3", "-c", code, check=False)


def test_the_container_runs_as_the_chart_runs_it(container: Container) -> None:
    assert in_container(container, "import os; print(os.getuid(), os.getgid())").stdout.split() == [
        str(UID), str(UID)]
    write = in_container(container, "open('/opt/kustodian/x', 'w')")
    assert write.returncode != 0 and "Read-only file system" in write.stderr
    # nothing but the interpreter and the virtualenv: no shell, no package manager; but the
    # chart's preStop hook (`sleep N`, so Endpoints drain first) runs
    assert podman("exec", container.name, "sh", "-c", "true", check=False).returncode != 0
    assert container.pre_stop[0] == "sleep"
    assert podman("exec", container.name, container.pre_stop[0], "0", check=False).returncode == 0
    # bench/, tests/ and the test tier stayed out of the image
    found = in_container(container, "import glob; print(glob.glob('/opt/kustodian/lib/python3*/site-packages/"
                                    "kustodian/testing') + glob.glob('/opt/kustodian/lib/python3*/site-packages/"
                                    "bench') + glob.glob('/opt/kustodian/lib/python3*/site-packages/tests') "
                                    "+ glob.glob('/src'))")
    assert found.stdout.strip() == "[]", found.stdout + found.stderr


def test_the_container_serves_the_deletion_guard_and_the_pvc_mutation(
        container: Container, kube_api: KubeApi, namespace: str, capsys: pytest.CaptureFixture[str]) -> None:
    deletion_guard_story(kube_api, namespace)
    pvc_mutation_story(kube_api, namespace)

    metrics = httpx.get(f"{container.metrics_url}/metrics", timeout=5).text
    denied = [line for line in metrics.splitlines() if line.startswith("kustodian_admission_requests_total")
              and 'decision="denied"' in line and "CephBlockPool" in line]
    patched = [line for line in metrics.splitlines() if line.startswith("kustodian_admission_requests_total")
               and 'decision="patched"' in line and "PersistentVolumeClaim" in line]
    assert denied and patched, metrics
    # JSON logs: the denial carries the object as fields, not only inside the message
    lines = [orjson.loads(line) for line in container.logs().splitlines() if line.startswith("{")]
    denial = [d for d in lines if d.get("decision") == "denied"]
    assert denial, container.logs()
    assert denial[0]["kind"] == "CephBlockPool.ceph.rook.io"
    assert denial[0]["namespace"] == namespace and denial[0]["name"] == "replicapool"
    with capsys.disabled():
        print(f"\nci: image {podman('inspect', '--format', '{{.ImageName}}', container.name).stdout.strip()}: "
              f"the container served a denial: {denial[0]['msg'][:160]}")
        print(f"ci: the container served a mutation: {patched[0]}")
