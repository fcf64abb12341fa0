"""`kustodian node-agent` as a process on the Manager: probes and metrics on their own port (issue 13's
one Manager, issue 22's probes), and a start that cannot sync exits non-zero instead of idling."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import KubeApi, serve_api
from tests.controllers.orphans.test_node_agent import crds as _crds
from tests.support import eventually, free_port, wait_while_running

pytestmark = pytest.mark.api


def agent(kube_api: KubeApi, namespace: str, port: int, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    with log.open("w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "kustodian", "node-agent", "--kubeconfig", str(kube_api.kubeconfig),
             "--namespace", namespace, "--node-agent-node-name", "worker-1",
             "--node-agent-longhorn-namespace", namespace, "--metrics-listen-address", f"127.0.0.1:{port}",
             # a disk: an agent without one refuses to start (issue 33)
             f"--node-agent-disks={log.parent}", *extra], stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})


def get(port: int, path: str) -> httpx.Response | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=2)
    except httpx.TransportError:
        return None


crds = _crds  # the module-scoped fixture: Longhorn's CRDs and Kustodian's


@pytest.fixture
def bare_api(kube_tools: Path | None) -> Iterator[KubeApi]:
    """An API server of this test's own, with no CRD at all: on a shared one, another test file
    run earlier in the same worker may have installed Longhorn's."""
    yield from serve_api(kube_tools)


def test_the_agent_serves_probes_and_metrics_on_its_own_port(kube_api: KubeApi, namespace: str, crds: None,
                                                             tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "agent.log"
    proc = agent(kube_api, namespace, port, log)
    try:
        wait_while_running(proc, log, lambda: (ready := get(port, "/readyz")) is not None
                           and ready.status_code == 200, "the agent to be ready", 30, poll=0.2)
        health = get(port, "/healthz")
        assert health is not None and health.status_code == 200
        metrics = get(port, "/metrics")
        assert metrics is not None and "process_resident_memory_bytes" in metrics.text
        assert "rest_client_requests_total" in metrics.text
    finally:
        proc.terminate()
        assert proc.wait(15) == 0, log.read_text()
    assert "Traceback" not in log.read_text()


def test_an_agent_whose_caches_cannot_sync_exits_non_zero(bare_api: KubeApi, tmp_path: Path) -> None:
    """A cluster without the CRDs: the caches never sync, the agent is not ready, then exits 1 (its
    restart retries) instead of idling."""
    port, log = free_port(), tmp_path / "agent.log"
    proc = agent(bare_api, "default", port, log, "--controllers-sync-timeout=2s")
    try:
        answers: list[int] = []

        def answered_or_exited() -> bool:
            if (answer := get(port, "/readyz")) is not None:
                answers.append(answer.status_code)
            return bool(answers) or proc.poll() is not None

        eventually(answered_or_exited, 10, poll=0.1)
        not_ready = answers[0] if answers else None
        rc = proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    if rc == 0:
        pytest.fail(f"exited 0 without ever syncing:\n{text}")
    assert rc == 1, text
    assert not_ready in (None, 503), "ready before the caches synced"
    assert "Traceback" not in text and "caches did not sync" in text
