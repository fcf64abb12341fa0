"""The one version and every place that names it.

The source is ``[project] version`` in pyproject.toml. These repeat it, and must say the same
(``problems()``; ``tests/release/test_version.py`` fails otherwise):

- the chart's ``version`` and ``appVersion`` (Chart.yaml): one number for the chart and the app,
  so ``helm install ... --version X`` installs image ``X``;
- the Dockerfile's ``ARG VERSION`` default (the image's ``org.opencontainers.image.version``
  label for a plain ``docker build .``; the image build passes it, and the builder refuses a
  VERSION the package does not have);
- every versioned install command in the user pages (README, the chart's README, docs/): the
  image ``...kustodian:X``, ``image.tag=X``, ``newTag: X``, ``kustodian==X``, ``--version X``;
- ``deploy/kustodian.yaml`` (the chart rendered, ``make manifests``): its chart label, version
  label and image.

``python -m release.version`` prints the version; ``check`` lists disagreements (exit 1);
``set X.Y.Z`` rewrites every place above but deploy/ (run ``make manifests`` after it: ``make
version VERSION=X.Y.Z`` does both); ``check-tag vX.Y.Z`` is the release workflow's gate: the tag
is the version, and CHANGELOG.md has an entry for it.

Standard library only (the release workflow runs it before installing anything).
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from release.changelog import ChangelogError, notes

__all__ = ["REPO", "Place", "places", "problems", "project_version", "set_version"]

REPO = Path(__file__).resolve().parent.parent
SEMVER = re.compile(r"^\d+\.\d+\.\d+$")
#: a versioned install command in a user page: what precedes the version, and the version
_IN_PAGES = re.compile(
    r"(?P<before>kustodian:|kustodian==|image\.tag=|newTag: |--version )(?P<version>\d+\.\d+\.\d+)\b"
)
_CHART_KEYS = re.compile(r'^(?P<key>version|appVersion): *"?(?P<version>[^"\s]+)"?\s*$', re.MULTILINE)
_DOCKER_ARG = re.compile(r"^ARG VERSION=(?P<version>\S*)\s*$", re.MULTILINE)
_DEPLOY = re.compile(
    r'(?P<before>helm\.sh/chart: kustodian-|app\.kubernetes\.io/version: "|'
    r"ghcr\.io/kustodian/kustodian:)(?P<version>\d+\.\d+\.\d+)"
)


@dataclass(frozen=True)
class Place:
    path: str  # relative to the repository
    line: int
    what: str
    version: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} {self.version}"


def project_version(repo: Path = REPO) -> str:
    with (repo / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def user_pages(repo: Path = REPO) -> list[Path]:
    return [
        repo / "README.md",
        repo / "charts" / "kustodian" / "README.md",
        *sorted((repo / "docs").rglob("*.md")),
    ]


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def places(repo: Path = REPO) -> list[Place]:
    """Every place but pyproject.toml that names the version, with the version it names."""
    out = []
    chart = repo / "charts" / "kustodian" / "Chart.yaml"
    text = chart.read_text()
    found = {m["key"]: m for m in _CHART_KEYS.finditer(text)}
    for key in ("version", "appVersion"):
        m = found.get(key)
        out.append(
            Place(
                "charts/kustodian/Chart.yaml",
                _line(text, m.start()) if m else 0,
                key,
                m["version"] if m else "(missing)",
            )
        )
    text = (repo / "Dockerfile").read_text()
    m = _DOCKER_ARG.search(text)
    out.append(
        Place(
            "Dockerfile",
            _line(text, m.start()) if m else 0,
            "ARG VERSION=",
            m["version"] if m else "(missing)",
        )
    )
    for page in user_pages(repo):
        text = page.read_text()
        for m in _IN_PAGES.finditer(text):
            out.append(
                Place(str(page.relative_to(repo)), _line(text, m.start()), m["before"].strip(), m["version"])
            )
    deploy = repo / "deploy" / "kustodian.yaml"
    if deploy.is_file():
        text = deploy.read_text()
        for m in _DEPLOY.finditer(text):
            out.append(
                Place("deploy/kustodian.yaml", _line(text, m.start()), m["before"].rstrip('"'), m["version"])
            )
    return out


def problems(repo: Path = REPO) -> list[str]:
    """One line per file and wrong version named (the first place, and how many more)."""
    version = project_version(repo)
    out = (
        []
        if SEMVER.match(version)
        else [f"pyproject.toml: version {version} is not X.Y.Z (the chart needs SemVer)"]
    )
    wrong: dict[tuple[str, str, str], list[Place]] = {}
    for place in places(repo):
        if place.version != version:
            wrong.setdefault((place.path, place.what, place.version), []).append(place)
    for found in wrong.values():
        more = f" (and {len(found) - 1} more in that file)" if len(found) > 1 else ""
        out.append(f"{found[0]}{more}: pyproject.toml says {version}")
    return out


def set_version(version: str, repo: Path = REPO) -> list[str]:
    """Write ``version`` into pyproject.toml and every place but deploy/; returns the files changed."""
    if not SEMVER.match(version):
        raise ValueError(f"{version}: not X.Y.Z")
    edits: dict[Path, re.Pattern[str]] = {
        repo / "pyproject.toml": re.compile(r'^(?P<before>version = ")[^"]+(?=")', re.MULTILINE),
        repo / "charts" / "kustodian" / "Chart.yaml": re.compile(r"^(?P<before>version: )\S+$", re.MULTILINE),
        repo / "Dockerfile": re.compile(r"^(?P<before>ARG VERSION=)\S*$", re.MULTILINE),
    }
    changed = []
    for path, pattern in edits.items():
        text = path.read_text()
        out = pattern.sub(lambda m: m["before"] + version, text, count=1)
        if path.name == "Chart.yaml":
            out = re.sub(r"^appVersion: .*$", f'appVersion: "{version}"', out, count=1, flags=re.MULTILINE)
        if out != text:
            path.write_text(out)
            changed.append(str(path.relative_to(repo)))
    for page in user_pages(repo):
        text = page.read_text()
        out = _IN_PAGES.sub(lambda m: m["before"] + version, text)
        if out != text:
            page.write_text(out)
            changed.append(str(page.relative_to(repo)))
    return changed


def check_tag(tag: str, repo: Path = REPO) -> list[str]:
    """The release gate: ``tag`` is ``v`` + the version every place names, and CHANGELOG.md has a
    section with entries for it (the release notes)."""
    version = project_version(repo)
    out = [] if tag == f"v{version}" else [f"tag {tag} is not v{version}, pyproject.toml's version"]
    out += problems(repo)
    try:
        notes(version, (repo / "CHANGELOG.md").read_text())
    except ChangelogError as exc:
        out.append(str(exc))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m release.version", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("check", help="list every place that names another version (exit 1 if any)")
    p = sub.add_parser("set", help="write a new version into every place (then: make manifests)")
    p.add_argument("version", help="X.Y.Z")
    p = sub.add_parser("check-tag", help="the release workflow's gate for a tag")
    p.add_argument("tag", help="vX.Y.Z")
    args = parser.parse_args(argv)
    if args.command is None:
        sys.stdout.write(project_version() + "\n")
        return 0
    if args.command == "set":
        try:
            changed = set_version(args.version)
        except ValueError as exc:
            sys.stderr.write(f"release.version: {exc}\n")
            return 2
        sys.stdout.write("".join(f"{path}\n" for path in changed))
        return 0
    found = problems() if args.command == "check" else check_tag(args.tag)
    sys.stderr.write("".join(f"release.version: {line}\n" for line in found))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
