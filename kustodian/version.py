"""Which Kustodian this is: its version and the git commit it was built from.

One source for the version: ``[project] version`` in ``pyproject.toml``. Imported from a source
tree (``pyproject.toml`` beside the package: a checkout, an editable install), Kustodian reads that
line itself, so a bumped version shows without a reinstall; installed from a wheel, it reads its
package metadata, which the build wrote from that line. The chart's ``version`` and
``appVersion``, the image's tag and ``org.opencontainers.image.version`` label repeat it, and
``tests/test_version.py`` fails when one of them disagrees.

The commit: a build records it (``setup.py`` writes it into the package as ``COMMIT``, from git or
from ``KUSTODIAN_BUILD_COMMIT``, the image build's way, since the image's build context holds no
``.git``); a package imported from a git checkout (an editable install, ``make venv``) asks git.
A wheel built from an sdist keeps the commit the sdist recorded. Neither: no commit is claimed.

Shown by ``kustodian version`` / ``--version`` and sent in every request's ``User-Agent``
(:func:`user_agent`), client-go's form, so an API server's audit log names the build that wrote.
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

__all__ = ["BuildInfo", "build_info", "user_agent"]

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


def _commit() -> str | None:
    try:
        recorded = resources.files(PACKAGE).joinpath(COMMIT_FILE).read_text().strip()
    except (OSError, FileNotFoundError):
        recorded = ""
    if _COMMIT.match(recorded):
        return recorded
    return git_commit(_package_dir().parent)


@cache
def build_info() -> BuildInfo:
    """Read once per process: the version and commit cannot change under a running process."""
    return BuildInfo(version=_version(), commit=_commit(), python=platform.python_version(),
                     platform=f"{sys.platform}/{platform.machine()}")


def user_agent(component: str) -> str:
    """client-go's ``<command>/<version> (<os>/<arch>) kubernetes/<commit>`` for Kustodian:
    ``kustodian-webhook/0.2.0 (linux/x86_64) kustodian/1a2b3c4d5e6f``."""
    info = build_info()
    return f"{component}/{info.version} ({info.platform}) kustodian/{info.short_commit or 'unknown'}"
