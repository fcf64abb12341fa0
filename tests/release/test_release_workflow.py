"""The release workflow (``.github/workflows/release.yaml``) cannot run here; what it publishes is
held here instead:

- its release notes are the CHANGELOG's newest section: the workflow's own notes step (its
  ``run:`` text, read from the YAML and run with bash as the runner would, with the tag of the
  version this tree carries) prints exactly that section, read here independently of
  ``release/changelog.py``. Before a release is cut the newest section is ``[Unreleased]``; the
  step is then run on the tree as the release commit makes it (``release.changelog cut``), so
  what the tag would publish is what Unreleased holds today;
- the GitHub release takes that file, and the gate job refuses a tag that is not the version;
- the CHANGELOG keeps Keep a Changelog's shape (Unreleased with its three lists on top);
- actionlint finds nothing in the workflow.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from release.changelog import ChangelogError, cut, notes, sections
from release.version import REPO, project_version

WORKFLOW = REPO / ".github" / "workflows" / "release.yaml"
CHANGELOG = REPO / "CHANGELOG.md"


def workflow() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return data


def _steps() -> list[tuple[str, dict[str, Any]]]:
    return [(job, step) for job, spec in workflow()["jobs"].items() for step in spec.get("steps", [])]


def newest_section_by_hand(text: str) -> tuple[str, str]:
    """(name, body) of the topmost ``## [...]`` section: the lines after its heading up to the next
    ``## `` heading or the first link reference, trimmed (not release/changelog.py's code)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## ["))
    name = lines[start][4:lines[start].index("]")]
    body: list[str] = []
    for line in lines[start + 1:]:
        if line.startswith("## ") or re.match(r"^\[[^\]]+\]: ", line):
            break
        body.append(line)
    return name, "\n".join(body).strip() + "\n"


def notes_step() -> dict[str, Any]:
    (step,) = [step for job, step in _steps() if job == "gate" and "release.changelog notes" in step.get("run", "")]
    return step


def run_notes_step(tree: Path, tag: str, tmp: Path) -> str:
    """The gate job's notes step, run by bash in ``tree`` as the runner runs it."""
    out = tmp / "runner-temp"
    out.mkdir(exist_ok=True)
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "GITHUB_REF_NAME": tag,
           "RUNNER_TEMP": str(out), "HOME": str(tmp)}
    proc = subprocess.run(["bash", "-e", "-c", notes_step()["run"]], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return (out / "release-notes.md").read_text()


def _release_tree(tmp: Path, changelog: str) -> Path:
    """What a runner checks out, as far as the notes step reads it: release/ and CHANGELOG.md."""
    tree = tmp / "checkout"
    shutil.copytree(REPO / "release", tree / "release", ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "CHANGELOG.md").write_text(changelog)
    return tree


def test_the_newest_changelog_section_is_what_the_workflow_publishes(tmp_path: Path) -> None:
    text = CHANGELOG.read_text()
    name, body = newest_section_by_hand(text)
    version = project_version()
    if name == "Unreleased":  # the release commit cuts it as this version; the tag then publishes it
        text = cut(version, "2026-12-01", text)
    else:
        assert name == version, f"the newest section is {name}, the tree is {version}"
    published = run_notes_step(_release_tree(tmp_path, text), f"v{version}", tmp_path)
    assert published == body
    assert "### Changed" in published and published.count("\n- ") >= 5  # the real section, not a stub


def test_the_notes_step_refuses_a_tag_without_a_section(tmp_path: Path) -> None:
    tree = _release_tree(tmp_path, CHANGELOG.read_text())
    env = {"PATH": os.environ["PATH"], "GITHUB_REF_NAME": "v9.9.9", "RUNNER_TEMP": str(tmp_path)}
    proc = subprocess.run(["bash", "-e", "-c", notes_step()["run"]], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 1
    assert "CHANGELOG.md has no section '## [9.9.9]'" in proc.stderr


def test_the_release_publishes_the_notes_file_and_the_gate_checks_the_tag() -> None:
    runs = {job: "\n".join(step.get("run", "") for j, step in _steps() if j == job) for job in workflow()["jobs"]}
    assert 'python -m release.version check-tag "${GITHUB_REF_NAME}"' in runs["gate"]
    assert '> "${RUNNER_TEMP}/release-notes.md"' in notes_step()["run"]
    upload = [step for job, step in _steps() if job == "gate" and "upload-artifact" in step.get("uses", "")]
    assert upload and upload[0]["with"]["name"] == "release-notes"
    assert "--notes-file artifacts/release-notes/release-notes.md" in runs["github-release"]
    assert "python -m release.dist checksums dist" in runs["github-release"]
    every_other_job = set(workflow()["jobs"]) - {"gate"}
    assert all("gate" in (workflow()["jobs"][job].get("needs") or []) for job in every_other_job)
    trigger: Any = workflow().get(True)  # type: ignore[call-overload]  # PyYAML reads `on:` as True
    assert trigger == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}


def test_the_workflow_publishes_signs_and_attests_each_artifact() -> None:
    uses = [(job, step.get("uses", "")) for job, step in _steps()]
    runs = "\n".join(step.get("run", "") for _, step in _steps())
    assert ("pypi", "pypa/gh-action-pypi-publish@release/v1") in uses  # trusted publishing: no token
    assert workflow()["jobs"]["pypi"]["permissions"] == {"id-token": "write"}
    assert 'cosign sign --yes "${IMAGE}@${DIGEST}"' in runs
    assert 'cosign sign --yes "${REGISTRY}/kustodian/charts/kustodian@${DIGEST}"' in runs
    assert sum(u.startswith("actions/attest-build-provenance@") for _, u in uses) == 3
    build = next(step for _, step in _steps() if step.get("uses", "").startswith("docker/build-push-action@"))
    assert build["with"]["platforms"] == "linux/amd64,linux/arm64"
    assert "VERSION=${{ needs.gate.outputs.version }}" in build["with"]["build-args"]


def test_actionlint_finds_nothing() -> None:
    actionlint = Path(sys.executable).parent / "actionlint"
    assert actionlint.is_file(), "actionlint is in the dev extra (make venv)"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # + shellcheck
    proc = subprocess.run([str(actionlint), "-oneline", str(WORKFLOW)], capture_output=True, text=True, timeout=120,
                          check=False, env=env)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stdout + proc.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / ".github" / "workflows" / "release.yaml"
    broken.parent.mkdir(parents=True)
    broken.write_text(WORKFLOW.read_text().replace("${{ needs.gate.outputs.version }}",
                                                   "${{ needs.gaet.outputs.version }}", 1))
    proc = subprocess.run([str(Path(sys.executable).parent / "actionlint"), "-oneline", str(broken)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1 and "gaet" in proc.stdout, proc.stdout


# ---------------------------------------------------------------------------------- the changelog

def test_the_changelog_keeps_unreleased_with_its_three_lists_on_top() -> None:
    found = sections(CHANGELOG.read_text())
    assert [s.name for s in found][:1] == ["Unreleased"] or found[0].name == project_version()
    unreleased = next(s for s in found if s.name == "Unreleased")
    assert re.findall(r"^### (\w+)$", unreleased.body, re.MULTILINE) == ["Changed", "Added", "Fixed"]
    assert found[-1].name == "0.1.0" and found[-1].date == "2026-11-23"


@pytest.mark.parametrize(("text", "version", "expected"), [
    ("## [Unreleased]\n\n### Changed\n\n## [0.1.0] - 2026-11-23\n\n- x\n", "0.2.0", "no section '## [0.2.0]'"),
    ("## [0.2.0] - 2026-12-01\n\n### Changed\n\n### Added\n\n## [0.1.0]\n\n- x\n", "0.2.0", "has no entry"),
], ids=["no-section", "empty-section"])
def test_no_notes_for_a_version_without_entries(text: str, version: str, expected: str) -> None:
    with pytest.raises(ChangelogError, match=re.escape(expected)):
        notes(version, text)


def test_cut_releases_unreleased_and_opens_a_new_one() -> None:
    text = ("## [Unreleased]\n\n### Changed\n\n- renamed x\n\n### Added\n\n### Fixed\n\n"
            "## [0.1.0] - 2026-11-23\n\n- first\n\n"
            "[Unreleased]: https://github.com/kustodian/kustodian/compare/956b58b...HEAD\n"
            "[0.1.0]: https://github.com/kustodian/kustodian/tree/956b58b\n")
    after = cut("0.2.0", "2026-12-01", text)
    assert [s.name for s in sections(after)] == ["Unreleased", "0.2.0", "0.1.0"]
    assert notes("0.2.0", after) == "### Changed\n\n- renamed x\n\n### Added\n\n### Fixed\n"
    assert "[0.2.0]: https://github.com/kustodian/kustodian/compare/956b58b...v0.2.0" in after
    with pytest.raises(ChangelogError, match="has no entry"):
        notes("Unreleased", after)  # the new Unreleased is empty: nothing to release twice
    with pytest.raises(ChangelogError, match=r"nothing to cut|already"):
        cut("0.2.0", "2026-12-02", after)
