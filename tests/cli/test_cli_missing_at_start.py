"""What a component needs from the cluster and does not find at start (issue 33), with the real
``kustodian`` command on the real API server: a namespace that does not exist is one line naming
the setting and exit 2 (node agent, webhook); a controllers replica that cannot create its
Lease is not ready, saying why; a CRD not served yet is a wait with a log line and a ``/readyz`` reason
naming the kind, and the component proceeds once the CRD is applied; never a traceback, never
unready in silence.  Capacity without csi-baremetal's CRDs is refused at start naming them."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import KubeApi
from tests.support import free_port, wait_while_running

pytestmark = pytest.mark.api

ROOT = Path(__file__).resolve().parents[2]
ORPHAN_CRD = ROOT / "charts" / "kustodian" / "crds" / "orphanedreplicadirs.kustodian.io.yaml"
NOT_SERVED = "OrphanedReplicaDir.kustodian.io (not served by the API server: is its CRD installed?)"
CAPACITY_CRDS = ("availablecapacities.csi-baremetal.dell.com", "availablecapacityreservations.csi-baremetal.dell.com")


def kustodian(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("w") as out:
        return subprocess.Popen([sys.executable, "-m", "kustodian", *args], stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})


def agent_args(kube_api: KubeApi, namespace: str, port: int, disk: Path) -> list[str]:
    return ["node-agent", "--kubeconfig", str(kube_api.kubeconfig), "--namespace", namespace,
            "--node-agent-node-name", "worker-1", "--node-agent-disks", str(disk),
            "--metrics-listen-address", f"127.0.0.1:{port}"]


def readyz(port: int) -> httpx.Response | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
    except httpx.TransportError:
        return None


def apply_orphan_crd(kube_api: KubeApi) -> None:
    kube_api.kubectl("apply", "-f", str(ORPHAN_CRD))
    kube_api.kubectl("wait", "--for", "condition=established", "--timeout=60s", "crd/orphanedreplicadirs.kustodian.io")


@pytest.fixture
def without_orphan_crd(kube_api: KubeApi) -> Iterator[None]:
    """The session's API server without Kustodian's CRD for the test, with it again afterwards."""
    kube_api.kubectl("delete", "-f", str(ORPHAN_CRD), "--wait=true", "--ignore-not-found")
    try:
        yield
    finally:
        apply_orphan_crd(kube_api)


def test_the_agent_without_its_namespace_is_one_line_naming_the_setting(kube_api: KubeApi, tmp_path: Path) -> None:
    apply_orphan_crd(kube_api)
    missing = f"kt-missing-{uuid.uuid4().hex[:8]}"
    proc = subprocess.run([sys.executable, "-m", "kustodian",
                           *agent_args(kube_api, missing, free_port(), tmp_path)],
                          capture_output=True, text=True, timeout=90, check=False,
                          env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("kustodian node-agent:")]
    assert errors == [f"kustodian node-agent: --namespace / KUSTODIAN_KUBE__NAMESPACE {missing}: no such namespace: "
                      "the node agent records its disks and orphans there; create it or name the one Kustodian "
                      "is installed in"], proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_agent_waits_for_its_crd_saying_so_then_runs(kube_api: KubeApi, namespace: str, without_orphan_crd: None,
                                                         tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "agent.log"
    proc = kustodian(*agent_args(kube_api, namespace, port, tmp_path), log=log)
    try:
        wait_while_running(proc, log, lambda: (r := readyz(port)) is not None and r.status_code == 503
                           and NOT_SERVED in r.text, "/readyz to name the CRD it waits for", 30, poll=0.2)
        assert "OrphanedReplicaDir.kustodian.io: not served by the API server: is its CRD installed?" in log.read_text()

        apply_orphan_crd(kube_api)
        wait_while_running(proc, log, lambda: (r := readyz(port)) is not None and r.status_code == 200,
                           "the agent to become ready once its CRD is served", 60, poll=0.2)
    finally:
        proc.terminate()
        rc = proc.wait(15)
    assert rc == 0, log.read_text()
    assert "Traceback" not in log.read_text()


def test_a_stop_while_waiting_for_a_crd_ends_the_process_at_once(kube_api: KubeApi, namespace: str,
                                                                 without_orphan_crd: None, tmp_path: Path) -> None:
    # the default sync timeout is two minutes; SIGTERM (the kubelet's, a rollout's) must not wait for it
    port, log = free_port(), tmp_path / "agent.log"
    proc = kustodian(*agent_args(kube_api, namespace, port, tmp_path), log=log)
    try:
        wait_while_running(proc, log, lambda: (r := readyz(port)) is not None and r.status_code == 503,
                           "the agent to wait for its CRD", 30, poll=0.2)
        proc.terminate()
        rc = proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 0, log.read_text()
    assert "Traceback" not in log.read_text() and "did not sync" not in log.read_text()


def test_capacity_without_csi_baremetals_crds_is_refused_naming_them_and_runs_once_applied(
        kube_api: KubeApi, namespace: str, upstream: Path, tmp_path: Path) -> None:
    crds = upstream / "csi-baremetal" / "crds"
    for name in CAPACITY_CRDS:
        kube_api.kubectl("delete", "crd", name, "--wait=true", "--ignore-not-found")
    args = ["controllers", "--kubeconfig", str(kube_api.kubeconfig), "--namespace", namespace, "--no-reclaim",
            "--capacity", "--no-leader-election"]
    try:
        proc = subprocess.run([sys.executable, "-m", "kustodian", *args,
                               f"--metrics-listen-address=127.0.0.1:{free_port()}"],
                              capture_output=True, text=True, timeout=90, check=False,
                              env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.splitlines()[-1] == (
            "kustodian controllers: the capacity controller needs the AvailableCapacity.csi-baremetal.dell.com, "
            "AvailableCapacityReservation.csi-baremetal.dell.com CRD(s): install csi-baremetal (its operator's chart "
            "carries them) or disable it (--no-capacity / KUSTODIAN_CAPACITY__ENABLED=false)"), proc.stderr
        assert "Traceback" not in proc.stderr
    finally:
        kube_api.kubectl("apply", "-f", str(crds))
    kube_api.kubectl("wait", "--for", "condition=established", "--timeout=60s", *(f"crd/{n}" for n in CAPACITY_CRDS))

    port, log = free_port(), tmp_path / "controllers.log"
    running = kustodian(*args, f"--metrics-listen-address=127.0.0.1:{port}", log=log)
    try:
        wait_while_running(running, log, lambda: (r := readyz(port)) is not None and r.status_code == 200,
                           "the capacity controller to become ready once the CRDs are served", 60, poll=0.2)
    finally:
        running.terminate()
        rc = running.wait(15)
    assert rc == 0, log.read_text()
    assert "Traceback" not in log.read_text()


def test_controllers_whose_lease_namespace_is_missing_are_not_ready_saying_why(kube_api: KubeApi,
                                                                                tmp_path: Path) -> None:
    # a standby is ready; a replica that can never lead is not, and /readyz says why
    missing = f"kt-lease-{uuid.uuid4().hex[:8]}"
    port, log = free_port(), tmp_path / "controllers.log"
    proc = kustodian("controllers", "--kubeconfig", str(kube_api.kubeconfig), "--namespace", missing,
                     f"--metrics-listen-address=127.0.0.1:{port}", log=log)
    try:
        reason = (f"leader-election: cannot create lease {missing}/kustodian-controllers: 404 NotFound: "
                  f'namespaces "{missing}" not found')
        wait_while_running(proc, log, lambda: (r := readyz(port)) is not None and r.status_code == 503
                           and reason in r.text, "/readyz to say the Lease cannot be created", 30, poll=0.2)
        assert "check the namespace exists" in log.read_text()

        kube_api.kubectl("create", "namespace", missing)
        wait_while_running(proc, log, lambda: (r := readyz(port)) is not None and r.status_code == 200,
                           "the controllers to lead once the namespace exists", 60, poll=0.2)
        assert f"became leader of lease {missing}/kustodian-controllers" in log.read_text()
    finally:
        proc.terminate()
        rc = proc.wait(15)
        kube_api.kubectl("delete", "namespace", missing, "--wait=false", "--ignore-not-found")
    assert rc == 0, log.read_text()
    assert "Traceback" not in log.read_text()


def test_the_webhook_without_its_namespace_is_one_line_naming_the_setting(kube_api: KubeApi, tmp_path: Path) -> None:
    # builtin TLS writes its Secret in the namespace it runs in: the first thing to find it missing
    missing = f"kt-missing-{uuid.uuid4().hex[:8]}"
    proc = subprocess.run([sys.executable, "-m", "kustodian", "webhook", "--kubeconfig", str(kube_api.kubeconfig),
                           "--namespace", missing, "--tls-mode", "builtin", "--tls-dir", str(tmp_path),
                           f"--webhook-port={free_port()}", f"--metrics-listen-address=127.0.0.1:{free_port()}"],
                          capture_output=True, text=True, timeout=90, check=False,
                          env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("kustodian webhook:")]
    assert errors == [f"kustodian webhook: --namespace / KUSTODIAN_KUBE__NAMESPACE {missing}: no such namespace: "
                      "create it or name the one Kustodian is installed in"], proc.stderr
    assert "Traceback" not in proc.stderr
