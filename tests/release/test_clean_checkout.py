"""``release.verify --clean-checkout`` (CI) refuses artifacts built from a tree with uncommitted
changes, and a checkout holding a file git neither tracks nor ignores (the sdist would package it),
on a real git repository and a wheel shaped as ``make dist`` writes it."""

from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from release.verify import check_clean_checkout

SHA = "0123456789abcdef0123456789abcdef01234567"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo, check=True,
                   capture_output=True, timeout=60)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "checkout"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".gitignore").write_text("dist/\n.venv/\n")
    (repo / "setup.py").write_text("# the project\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    (repo / ".venv").mkdir()  # ignored: never a reason to refuse
    return repo


def _dist(repo: Path, commit: str) -> Path:
    dist = repo / "dist"
    dist.mkdir(exist_ok=True)
    with zipfile.ZipFile(dist / "kustodian-0.2.0-py3-none-any.whl", "w") as whl:
        whl.writestr("kustodian-0.2.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: kustodian\nVersion: 0.2.0\n")
        whl.writestr("kustodian/COMMIT", commit + "\n")
    return dist


def test_a_clean_checkout_passes(repo: Path) -> None:
    assert check_clean_checkout(_dist(repo, SHA), repo) == f"built from a clean checkout of {SHA[:12]}"


def test_a_dirty_build_is_refused(repo: Path) -> None:
    with pytest.raises(AssertionError, match="uncommitted changes"):
        check_clean_checkout(_dist(repo, SHA + "-dirty"), repo)


def test_no_recorded_commit_is_refused(repo: Path) -> None:
    with pytest.raises(AssertionError, match="recorded commit ''"):
        check_clean_checkout(_dist(repo, ""), repo)


@pytest.mark.parametrize("path", ["stray.py", "kustodian/new_module.py"])
def test_an_untracked_file_is_refused_by_name(repo: Path, path: str) -> None:
    (repo / path).parent.mkdir(exist_ok=True)
    (repo / path).write_text("x = 1\n")
    with pytest.raises(AssertionError, match=re.escape(f"not clean: {path}")):
        check_clean_checkout(_dist(repo, SHA), repo)


def test_a_modified_tracked_file_is_refused(repo: Path) -> None:
    (repo / "setup.py").write_text("# changed\n")
    with pytest.raises(AssertionError, match=re.escape("not clean: setup.py")):
        check_clean_checkout(_dist(repo, SHA), repo)
