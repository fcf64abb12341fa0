"""The report APIs' real CRDs (``../shared/upstream/policy-reports``) on the session's API server.

A test that needs them serves them and, when done, takes them away again, so other modules'
webhooks (policy reports are on by default) find the server as they expect it.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import KubeApi
from tests.support import wait_for

OPENREPORTS_CRDS = ("reports.openreports.io", "clusterreports.openreports.io")
WGPOLICY_CRDS = ("policyreports.wgpolicyk8s.io", "clusterpolicyreports.wgpolicyk8s.io")


def crd_files(upstream: Path, project: str) -> list[Path]:
    """``openreports`` or ``wgpolicyk8s``: the project's two CRD files, verbatim from upstream."""
    return sorted((upstream / "policy-reports" / project).glob("*.io_*.yaml"))


def serve(kube_api: KubeApi, upstream: Path, project: str) -> None:
    """Apply ``project``'s CRDs (server-side, as the kit says) and wait until they are Established."""
    files = crd_files(upstream, project)
    kube_api.kubectl("apply", "--server-side", *[a for f in files for a in ("-f", str(f))])
    names = [yaml.safe_load(f.read_text())["metadata"]["name"] for f in files]
    kube_api.kubectl("wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{n}" for n in names])
    # Established is not yet listable: the API server answers 429 while the kind's storage starts
    for name in names:
        wait_for(lambda n=name: kube_api.kubectl("get", n, "-A", check=False).returncode == 0,  # type: ignore[misc]
                 f"{name} to be listable", timeout=60, poll=0.2)


def unserve(kube_api: KubeApi) -> None:
    """Neither API served (their CRDs deleted, with every report)."""
    kube_api.kubectl("delete", "crd", *OPENREPORTS_CRDS, *WGPOLICY_CRDS, "--ignore-not-found", timeout=120)
