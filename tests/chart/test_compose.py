"""docker-compose.yaml and the Dockerfile reference only what the repository holds."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.conftest import KubeApi

from .conftest import REPO


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yaml").read_text())
    return data


def test_compose_parses_and_builds_from_files_that_exist() -> None:
    services = compose()["services"]
    assert {"k3s", "certs", "kustodian"} <= set(services)
    assert services["k3s"]["image"].startswith("rancher/k3s:")
    built = [s["build"] for s in services.values() if "build" in s]
    assert built
    for build in built:
        context = REPO / build["context"]
        assert context.is_dir()
        assert (context / build.get("dockerfile", "Dockerfile")).is_file()
    named = set(compose().get("volumes") or {})
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith((".", "/")):
                assert (REPO / source).exists(), f"{name}: {source}"
            else:
                assert source in named, f"{name}: {source}"
    assert "certs" in services["kustodian"]["depends_on"]
    assert services["certs"]["command"][:2] == ["certs", "issue"]


def test_the_playground_registers_rook_kinds_before_and_the_webhooks_after_the_webhook_starts() -> None:
    services = compose()["services"]

    def after(name: str) -> dict[str, str]:
        return {dep: cond["condition"] for dep, cond in services[name]["depends_on"].items()}

    assert after("kustodian") == {"crds": "service_completed_successfully",
                                  "certs": "service_completed_successfully"}
    assert after("webhooks") == {"kustodian": "service_healthy"}
    assert after("register") == {"webhooks": "service_completed_successfully"}
    assert services["crds"]["command"][-1] == "/playground/rook-crds.yaml"
    assert services["webhooks"]["command"][-1] == "/playground/webhooks.yaml"
    assert services["register"]["command"][:2] == ["certs", "inject"]
    assert "--ca-file" in services["register"]["command"]
    # the header tells users to export the kubeconfig's path, not its contents
    header = (REPO / "docker-compose.yaml").read_text().split("\nname:")[0]
    assert "export KUBECONFIG=$PWD/kubeconfig.yaml" in header
    assert "KUBECONFIG=$(" not in header


def test_the_playground_manifests_are_what_the_code_generates() -> None:
    from kustodian.testing.playground import DIR, files

    for name, text in files().items():
        assert (DIR / name).read_text() == text, f"playground/{name} is stale: python -m kustodian.testing.playground"


def test_the_dockerfile_copies_only_existing_paths_and_runs_as_non_root() -> None:
    text = (REPO / "Dockerfile").read_text()
    for sources in re.findall(r"^COPY (?!--)(.+) \S+$", text, flags=re.M):
        for src in sources.split():
            assert (REPO / src).exists(), src
    # the base is a build argument (CI builds on a Debian rootfs); users get the public image.
    # The final stage holds only what docker/runtime_rootfs.py collects from it.
    assert "ARG BASE=python:3.11-slim" in text
    assert re.findall(r"^FROM (\S+)", text, flags=re.M) == ["${BASE}", "scratch"]
    assert "USER 65532:65532" in text
    assert 'ENTRYPOINT ["kustodian"]' in text
    ignore = (REPO / ".dockerignore").read_text().split()
    assert "*" in ignore and "!kustodian/" in ignore


@pytest.mark.api
def test_the_playground_manifests_apply_to_a_real_api_server(kube_api: KubeApi) -> None:
    from kustodian.testing.playground import DIR

    for name in ("rook-crds.yaml", "webhooks.yaml"):
        proc = kube_api.kubectl("apply", "--dry-run=server", "-f", str(DIR / name))
        assert "(server dry run)" in proc.stdout
    hooks = [w for d in yaml.safe_load_all((DIR / "webhooks.yaml").read_text()) if d for w in d["webhooks"]]
    assert {w["clientConfig"]["url"].rsplit("/", 1)[0] for w in hooks} == {"https://kustodian:8443"}
