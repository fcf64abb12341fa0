"""Which Kustodian this is: its version and the git commit it was built from.

One source for the version: ``[project] version`` in ``pyproject.toml``. Imported from a source
tree (``pyproject.toml`` beside the package: a checkout, an editable install), Kustodian reads that
line itself, so a bumped version shows without a reinstall; installed from a wheel, it reads its
package metadata, which the build wrote from that line. The chart's ``version`` and
``appVersion``, the image's tag and ``org.opencontainers.image.version`` label repeat it, and
``tests/test_version.py`` fails when one of them disagrees.

The commit: a build records it (``setup.py`` writes it into the package as ``COMMIT``, from git or
from ``KUSTODIAN_BUILD_COMMIT``, the image build's way, since the image's build context holds no
``.git``); a package imported from a git checkout (an editable install, ``make venv``) reads the
checkout's HEAD. A wheel built from an sdist keeps the commit the sdist recorded. Neither: no
commit is claimed.

Shown by ``kustodian version`` / ``--version`` (:func:`build_info`; in a checkout it also asks git
whether tracked files changed: "-dirty") and sent in every request's ``User-Agent``
(:func:`user_agent`, client-go's form, so an API server's audit log names the build that wrote). The
User-Agent is made for every client a process opens, the CLI's completion included: it reads HEAD
from the checkout's files and never runs git.
"""

from __future__ import annotations

import platform
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import metadata, resources
from pathlib import Path

__all__ = ["BuildInfo", "build_info", "git_commit", "head_commit", "user_agent"]

PACKAGE = "kustodian"
#: the file a build writes into the package (setup.py); absent in a source tree
COMMIT_FILE = "COMMIT"
_COMMIT = re.compile(r"^[0-9a-f]{40}(-dirty)?$")


@dataclass(frozen=True)
class BuildInfo:
    version: str
    commit: str | None  # 40 hex digits, "-dirty" when built from a tree with uncommitted changes
    python: str
    platform: str  # client-go's GOOS/GOARCH spelled with Python's names: linux/x86_64

    @property
    def short_commit(self) -> str | None:
        if self.commit is None:
            return None
        sha, _, dirty = self.commit.partition("-")
        return sha[:12] + (f"-{dirty}" if dirty else "")

    def line(self) -> str:
        """``kustodian --version``: one line."""
        commit = f"commit {self.short_commit}" if self.commit else "commit unknown"
        return f"kustodian {self.version} ({commit}, Python {self.python}, {self.platform})"

    def as_dict(self) -> dict[str, str | None]:
        return {"version": self.version, "commit": self.commit, "python": self.python,
                "platform": self.platform}


def _package_dir() -> Path:
    return Path(__file__).resolve().parent


def _source_tree_version() -> str | None:
    pyproject = _package_dir().parent / "pyproject.toml"
    try:
        with pyproject.open("rb") as f:
            project = tomllib.load(f).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return str(project["version"]) if project.get("name") == PACKAGE and "version" in project else None


def _version() -> str:
    found = _source_tree_version()
    if found is not None:
        return found
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "unknown"


def git_commit(tree: Path) -> str | None:
    """The commit checked out at ``tree`` (the top of a git work tree), "-dirty" appended when a
    tracked file differs from it; None when ``tree`` is no checkout or git is missing."""
    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True,
                                  timeout=5, check=False, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    if not (tree / ".git").exists():  # a directory, or a file for a worktree
        return None
    sha = git("rev-parse", "HEAD")
    if sha is None or not _COMMIT.match(sha):
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return sha + ("-dirty" if status else "")


def head_commit(tree: Path) -> str | None:
    """The commit checked out at ``tree``, read from its git files (no git process): ``.git`` (a
    directory, or a worktree's ``gitdir:`` file), ``HEAD``, the ref it names (loose, or in
    ``packed-refs`` of the common directory). None when anything is missing or unexpected."""
    try:
        dot_git = tree / ".git"
        gitdir = dot_git
        if dot_git.is_file():
            gitdir = (tree / dot_git.read_text().strip().removeprefix("gitdir: ")).resolve()
        common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve() if (
            gitdir / "commondir").is_file() else gitdir
        head = (gitdir / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head if _COMMIT.match(head) else None
        ref = head.removeprefix("ref: ")
        for place in (gitdir / ref, common / ref):
            if place.is_file():
                sha = place.read_text().strip()
                return sha if _COMMIT.match(sha) else None
        packed = common / "packed-refs"
        for line in packed.read_text().splitlines() if packed.is_file() else []:
            sha, _, name = line.partition(" ")
            if name == ref and _COMMIT.match(sha):
                return sha
    except (OSError, UnicodeDecodeError):
        return None
    return None


@cache
def _recorded() -> str | None:
    try:
        recorded = resources.files(PACKAGE).joinpath(COMMIT_FILE).read_text().strip()
    except (OSError, FileNotFoundError):
        return None
    return recorded if _COMMIT.match(recorded) else None


@cache
def build_info() -> BuildInfo:
    """Read once per process: the version and commit cannot change under a running process."""
    return BuildInfo(version=_version(), commit=_recorded() or git_commit(_package_dir().parent),
                     python=platform.python_version(), platform=f"{sys.platform}/{platform.machine()}")


@cache
def user_agent(component: str) -> str:
    """client-go's ``<command>/<version> (<os>/<arch>) kubernetes/<commit>`` for Kustodian:
    ``kustodian-webhook/0.2.0 (linux/x86_64) kustodian/1a2b3c4d5e6f`` (no git process: see above)."""
    commit = _recorded() or head_commit(_package_dir().parent)
    short = BuildInfo(_version(), commit, "", "").short_commit or "unknown"
    return f"{component}/{_version()} ({sys.platform}/{platform.machine()}) kustodian/{short}"
