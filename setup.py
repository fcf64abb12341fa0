"""The compiled extension; everything else about the build is in pyproject.toml.

``kustodian.policy.capacity._native`` (``_native.pyx``) is where the capacity planner's hot
loops are to move: Cython, so that they stay Python-like code next to the pure-Python planner,
which imports the module with a fallback when it is missing. setuptools' ``build_ext`` is
Cython's own when Cython is installed (``[build-system] requires``): it turns the ``.pyx``
into C first.

Declared here, not in pyproject.toml's ``[tool.setuptools] ext-modules``: that table works, but
setuptools calls it experimental ("likely to change") and warns about it on every build.

The build also records the git commit it was built from as ``kustodian/COMMIT`` (read by
``kustodian.version``): from ``KUSTODIAN_BUILD_COMMIT`` when set (the image build: its context
holds no ``.git``), else from git when this directory is a checkout, else the ``COMMIT`` an sdist
carries (a wheel built from an sdist keeps the sdist's). The file is written into the build and
the sdist, never into the source tree; an editable install asks git at run time instead.
"""

import os
import re
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
COMMIT = re.compile(r"^[0-9a-f]{40}(-dirty)?$")


def _git(*args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(HERE), *args], capture_output=True, text=True, timeout=10,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def build_commit() -> str | None:
    """The commit to record (see the module docstring), or None: nothing is claimed."""
    given = os.environ.get("KUSTODIAN_BUILD_COMMIT", "").strip()
    if given:
        if not COMMIT.match(given):
            raise SystemExit(f"KUSTODIAN_BUILD_COMMIT={given!r}: not a 40-hex git commit (optionally -dirty)")
        return given
    if (HERE / ".git").exists():
        sha = _git("rev-parse", "HEAD")
        if sha and COMMIT.match(sha):
            dirty = _git("status", "--porcelain", "--untracked-files=no")
            return sha + ("-dirty" if dirty else "")
    recorded = HERE / "kustodian" / "COMMIT"  # an sdist's
    if recorded.is_file() and COMMIT.match(recorded.read_text().strip()):
        return recorded.read_text().strip()
    return None


class BuildPyWithCommit(build_py):
    def run(self) -> None:
        super().run()
        commit = build_commit()
        if commit and not getattr(self, "editable_mode", False):
            target = Path(self.build_lib) / "kustodian" / "COMMIT"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(commit + "\n")


class SdistWithCommit(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        commit = build_commit()
        if commit:
            target = Path(base_dir) / "kustodian" / "COMMIT"
            target.unlink(missing_ok=True)  # a hard link into the tree, never written through
            target.write_text(commit + "\n")


setup(
    cmdclass={"build_py": BuildPyWithCommit, "sdist": SdistWithCommit},
    ext_modules=[
        Extension(
            "kustodian.policy.capacity._native",
            ["kustodian/policy/capacity/_native.pyx"],
            # included by ``_native.pyx`` (the one AC parse, compiled in): a change rebuilds
            depends=["kustodian/policy/capacity/reading.py"],
            # optional: a machine without a C compiler or Python's headers still installs
            # (setuptools warns and goes on), with the pure-Python planner.
            optional=True,
            # after the interpreter's own flags, so it wins: Debian's python3 says -O2, a
            # pyenv build -O3; one level everywhere, with gcc's loop vectorisation.
            extra_compile_args=["-O3"],
        ),
    ],
)
