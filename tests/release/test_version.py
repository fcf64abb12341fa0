"""One version, everywhere: pyproject.toml's ``version`` is the chart's ``version`` and
``appVersion``, the Dockerfile's ``VERSION`` (the image's tag and ``org.opencontainers.image.version``
label), what ``kustodian version`` / ``--version`` print, what every request's ``User-Agent`` says,
and every versioned install command of the user pages. A disagreement anywhere fails here, named by
file and line; hand-broken trees show each kind of disagreement is caught.

The built artifacts are held to the same version by ``make dist-check`` (``release/verify.py``) and
the image's labels by ``tests/image/test_image_version.py``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from kustodian.kube.client import KubeClient
from kustodian.kube.config import ClusterConfig
from kustodian.version import build_info, git_commit, head_commit, user_agent
from release.changelog import cut
from release.version import REPO, check_tag, places, problems, project_version, set_version
from tests.cli.support import run

VERSION = project_version()


def test_every_place_names_pyprojects_version() -> None:
    assert problems() == []
    found = places()
    chart = yaml.safe_load((REPO / "charts" / "kustodian" / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == VERSION
    # each kind of place was read, not just the first file
    paths = {p.path for p in found}
    assert {"charts/kustodian/Chart.yaml", "Dockerfile", "README.md", "docs/getting-started.md",
            "deploy/kustodian.yaml"} <= paths, paths


def test_the_dockerfile_labels_the_image_with_the_build_arguments() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert f"ARG VERSION={VERSION}\n" in text
    labels = dict(re.findall(r'(org\.opencontainers\.image\.\w+)="([^"]*)"', text))
    assert labels["org.opencontainers.image.version"] == "${VERSION}"
    assert labels["org.opencontainers.image.revision"] == "${REVISION}"
    assert {"title", "source", "licenses"} <= {k.rpartition(".")[2] for k in labels}


def _short(commit: str | None) -> str:
    if commit is None:
        return "unknown"
    sha, _, dirty = commit.partition("-")
    return sha[:12] + (f"-{dirty}" if dirty else "")


def test_kustodian_version_and_dash_dash_version_say_the_version_and_the_commit(tmp_path: Path) -> None:
    commit = git_commit(REPO)  # this checkout (an editable install asks git)
    line = run(tmp_path, "--version")
    assert line.returncode == 0 and line.stderr == ""
    assert line.stdout.startswith(f"kustodian {VERSION} (commit {_short(commit)}, Python "), line.stdout
    same = run(tmp_path, "version")
    assert same.returncode == 0 and same.stdout == line.stdout
    as_json = run(tmp_path, "version", "-o", "json")
    assert as_json.returncode == 0, as_json.stderr
    info = json.loads(as_json.stdout)
    assert (info["version"], info["commit"]) == (VERSION, commit)
    assert set(info) == {"version", "commit", "python", "platform"}


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("User-Agent", ""))
        body = b'{"major": "1", "minor": "33"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[str]]]:
    _Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("component", ["kustodian-webhook", "kustodian"], ids=["component", "cli-default"])
def test_the_user_agent_names_the_version_and_the_commit(recorder: tuple[str, list[str]], component: str) -> None:
    """What leaves the process on the wire, read by a real HTTP server: client-go's form, so an API
    server's audit log names the build (``kustodian-webhook/0.2.0 (linux/x86_64) kustodian/<commit>``)."""
    url, seen = recorder
    client = KubeClient(ClusterConfig(server=url), user_agent=component) if component != "kustodian" else (
        KubeClient(ClusterConfig(server=url)))
    try:
        assert client.request("GET", "/version")["minor"] == "33"
    finally:
        client.close()
    info = build_info()
    head = _git(REPO, "rev-parse", "HEAD")  # the User-Agent reads HEAD without running git: no -dirty
    assert seen == [f"{component}/{VERSION} ({info.platform}) kustodian/{head[:12]}"]
    assert seen == [user_agent(component)]


def _git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, check=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(tree), "PATH": "/usr/bin:/bin"},
                          ).stdout.strip()


def test_head_is_read_from_the_checkouts_files_as_git_reads_it(tmp_path: Path) -> None:
    """head_commit (no git process, for every User-Agent) against git itself: this worktree, a loose
    ref, packed refs, a detached HEAD; nothing claimed outside a checkout."""
    assert head_commit(REPO) == _git(REPO, "rev-parse", "HEAD")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "f").write_text("1")
    _git(repo, "add", "f")
    _git(repo, "commit", "-q", "-m", "one")
    assert head_commit(repo) == _git(repo, "rev-parse", "HEAD")
    _git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert head_commit(repo) == _git(repo, "rev-parse", "HEAD")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "f").write_text("2")
    _git(repo, "commit", "-q", "-am", "two")
    _git(repo, "checkout", "-q", "--detach", first)
    assert head_commit(repo) == first
    assert head_commit(tmp_path) is None


# ---------------------------------------------------------------------------------- hand-broken trees

def _tree(tmp: Path) -> Path:
    """The files that name the version, copied: the real ones, so the checks read real shapes."""
    for rel in ("pyproject.toml", "Dockerfile", "README.md", "CHANGELOG.md", "charts/kustodian/Chart.yaml",
                "charts/kustodian/README.md", "docs/getting-started.md", "docs/install-without-helm.md",
                "deploy/kustodian.yaml"):
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, target)
    return tmp


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(("rel", "old", "new", "expected"), [
    ("charts/kustodian/Chart.yaml", f'appVersion: "{VERSION}"', 'appVersion: "9.9.9"', "charts/kustodian/Chart.yaml:"),
    ("charts/kustodian/Chart.yaml", f"version: {VERSION}", "version: 9.9.9", "charts/kustodian/Chart.yaml:"),
    ("Dockerfile", f"ARG VERSION={VERSION}", "ARG VERSION=9.9.9", "Dockerfile:"),
    ("README.md", f"--version {VERSION}", "--version 9.9.9", "README.md:"),
    ("docs/install-without-helm.md", f"newTag: {VERSION}", "newTag: 9.9.9", "docs/install-without-helm.md:"),
    ("deploy/kustodian.yaml", f"ghcr.io/kustodian/kustodian:{VERSION}", "ghcr.io/kustodian/kustodian:9.9.9",
     "deploy/kustodian.yaml:"),
], ids=["app-version", "chart-version", "dockerfile", "readme-install", "kustomize-tag", "rendered-manifests"])
def test_a_place_naming_another_version_is_caught(tmp_path: Path, rel: str, old: str, new: str,
                                                   expected: str) -> None:
    tree = _tree(tmp_path)
    assert problems(tree) == []
    _edit(tree / rel, old, new)
    found = problems(tree)
    assert len(found) == 1 and found[0].startswith(expected) and "9.9.9" in found[0], found


def test_set_version_writes_every_place_and_check_tag_gates_the_release(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    # today's tree is released as its version once its Unreleased section is cut as that version
    assert check_tag(f"v{VERSION}", tree) == [
        f"CHANGELOG.md has no section '## [{VERSION}]' (it has: Unreleased, 0.1.0)"]
    changelog = tree / "CHANGELOG.md"
    changelog.write_text(cut(VERSION, "2026-12-01", changelog.read_text()))
    assert check_tag(f"v{VERSION}", tree) == []
    assert check_tag("v9.9.9", tree) == [f"tag v9.9.9 is not v{VERSION}, pyproject.toml's version"]
    changed = set_version("9.9.9", tree)
    assert {"pyproject.toml", "charts/kustodian/Chart.yaml", "Dockerfile", "README.md"} <= set(changed)
    # deploy/ is the chart rendered: `make version` re-renders it (make manifests); until then it disagrees
    assert [p.split(":")[0] for p in problems(tree)] == ["deploy/kustodian.yaml"] * 3
    changelog.write_text(cut("9.9.9", "2026-12-02", changelog.read_text().replace(
        "### Changed\n\n### Added", "### Changed\n\n- something\n\n### Added", 1)))
    assert all(p.startswith("deploy/") for p in check_tag("v9.9.9", tree))
    with pytest.raises(ValueError, match=r"not X\.Y\.Z"):
        set_version("1.0", tree)


def test_the_release_gate_refuses_a_version_without_notes(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    set_version("9.9.9", tree)
    found = check_tag("v9.9.9", tree)
    assert "CHANGELOG.md has no section '## [9.9.9]' (it has: Unreleased, 0.1.0)" in found, found


def test_the_cli_of_release_version_prints_and_checks(tmp_path: Path) -> None:
    out = subprocess.run(["python", "-m", "release.version"], cwd=REPO, capture_output=True, text=True, check=False)
    assert (out.returncode, out.stdout) == (0, f"{VERSION}\n")
    out = subprocess.run(["python", "-m", "release.version", "check"], cwd=REPO, capture_output=True, text=True,
                         check=False)
    assert (out.returncode, out.stderr) == (0, "")
