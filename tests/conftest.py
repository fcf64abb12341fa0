"""Shared fixtures: the real-API tier, per-test namespaces, kubectl.

``kube_api`` uses ``$KUSTODIAN_TEST_KUBECONFIG`` when set (any real cluster),
otherwise starts ``../shared/kube-testserver`` on free ports for the session.
With ``KUSTODIAN_REQUIRE_API=1`` (CI) a missing API server fails the run instead
of skipping the tests that need it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kustodian.certs import issue_ca, issue_serving, write_bundle
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import NAMESPACES
from kustodian.testing.testserver import TestServer, find_script
from kustodian.testing.tools import ensure_tools


@dataclass
class KubeApi:
    kubeconfig: Path
    client: KubeClient
    server: TestServer | None  # None when an external cluster is used
    tools: Path | None

    def kubectl(self, *args: str, check: bool = True, input: str | None = None,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
        if self.tools is None:
            pytest.fail("kubectl is not available")
        proc = subprocess.run([str(self.tools / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
                              capture_output=True, text=True, input=input, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}\n{proc.stderr}")
        return proc

    def require_server(self) -> TestServer:
        if self.server is None:
            pytest.skip("needs the bundled kube-testserver (restarts, etcd access); "
                        "KUSTODIAN_TEST_KUBECONFIG points at an external cluster")
        return self.server

    def install_backstop_crd(self) -> None:
        """The chart's BackstopRecord CRD (the deletion backstop's record), applied and served."""
        crd = Path(__file__).resolve().parents[1] / "charts" / "kustodian" / "crds" / "backstoprecords.kustodian.io.yaml"
        self.kubectl("apply", "--server-side", "-f", str(crd))
        self.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/backstoprecords.kustodian.io")


def unavailable(reason: str) -> None:
    if os.environ.get("KUSTODIAN_REQUIRE_API") == "1":
        pytest.fail(f"KUSTODIAN_REQUIRE_API=1 but the real API tier is unavailable: {reason}")
    pytest.skip(f"real API tier unavailable: {reason}")


@pytest.fixture(scope="session")
def kube_tools() -> Path | None:
    try:
        return ensure_tools()
    except Exception as exc:
        unavailable(f"kubectl/helm could not be fetched: {exc}")
        return None


@pytest.fixture(scope="session")
def kube_api(kube_tools: Path | None) -> Iterator[KubeApi]:
    external = os.environ.get("KUSTODIAN_TEST_KUBECONFIG")
    if external:
        client = KubeClient(load_config(external))
        yield KubeApi(Path(external), client, None, kube_tools)
        client.close()
        return
    yield from serve_api(kube_tools)


def serve_api(kube_tools: Path | None, authorization: str = "AlwaysAllow") -> Iterator[KubeApi]:
    """Start a kube-testserver on free ports for the session and yield its KubeApi."""
    script = find_script()
    if script is None:
        unavailable("../shared/kube-testserver/kube-testserver.sh not found")
        return
    server = TestServer(script, authorization=authorization)
    try:
        server.start()
    except Exception as exc:
        server.destroy()
        unavailable(f"kube-testserver ({authorization}) did not start: {exc}")
        return
    client = KubeClient(load_config(str(server.kubeconfig)))
    try:
        yield KubeApi(server.kubeconfig, client, server, kube_tools)
    finally:
        client.close()
        server.destroy()


@pytest.fixture(scope="session")
def kube_api_rbac(kube_tools: Path | None) -> Iterator[KubeApi]:
    """A second kube-testserver that enforces RBAC (``KTS_AUTHORIZATION=RBAC``); its ``server``
    mints kubeconfigs for ServiceAccounts (``server.kubeconfig_for(...)``), so a component runs
    under its real identity and least privilege is proven, not read."""
    yield from serve_api(kube_tools, "RBAC")


@pytest.fixture
def namespace(kube_api: KubeApi) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards."""
    name = f"kt-{uuid.uuid4().hex[:10]}"
    kube_api.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    with contextlib.suppress(NotFound):
        kube_api.client.delete(NAMESPACES, name)


@pytest.fixture(scope="session")
def tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tls")
    now = datetime.now(UTC)
    ca = issue_ca(now=now)
    write_bundle(out, ca, issue_serving(ca, service="kustodian", namespace="kustodian", dns=["localhost"],
                                        ips=["127.0.0.1"], now=now))
    return out


@pytest.fixture(scope="session")
def upstream() -> Path:
    """``../shared/upstream``: the real upstream CRDs, examples and build scripts (the test oracle)."""
    from kustodian.testing.upstream import UpstreamMissing, upstream_dir
    try:
        return upstream_dir()
    except UpstreamMissing as exc:
        unavailable(str(exc))
        raise
