"""docker-compose.yaml and the Dockerfile reference only what the repository holds."""

from __future__ import annotations

import re
from typing import Any

import yaml

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


def test_the_dockerfile_copies_only_existing_paths_and_runs_as_non_root() -> None:
    text = (REPO / "Dockerfile").read_text()
    for sources in re.findall(r"^COPY (?!--)(.+) \S+$", text, flags=re.M):
        for src in sources.split():
            assert (REPO / src).exists(), src
    assert "FROM python:3.11-slim" in text
    assert "USER 65532:65532" in text
    assert 'ENTRYPOINT ["kustodian"]' in text
    ignore = (REPO / ".dockerignore").read_text().split()
    assert "*" in ignore and "!kustodian/" in ignore
