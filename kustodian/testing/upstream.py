"""The upstream kit in ``../shared/upstream``: real CRDs, examples and buildable upstream tools.

The kit is the test oracle (Rook, csi-addons, csi-baremetal, Longhorn, local-static-provisioner at
pinned commits). Nothing from it is copied into this repository: tests read it where it lies and
build its tools with its own ``build.sh``, which caches the binaries in
``${XDG_CACHE_HOME:-~/.cache}/kustodian-upstream/<project>/bin`` and returns at once when they are
already built, so a warm CI run pays nothing.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["UpstreamMissing", "build", "upstream_dir"]


class UpstreamMissing(RuntimeError):
    """The kit or one of its tools is not there; the real-API tier cannot run without it."""


def upstream_dir() -> Path:
    """``$KUSTODIAN_UPSTREAM_DIR`` or the first ``shared/upstream`` beside a parent of this file."""
    env = os.environ.get("KUSTODIAN_UPSTREAM_DIR")
    candidates = [Path(env)] if env else []
    candidates += [p.parent / "shared" / "upstream" for p in Path(__file__).resolve().parents]
    for cand in candidates:
        if (cand / "README.md").is_file():
            return cand
    raise UpstreamMissing("../shared/upstream not found (set KUSTODIAN_UPSTREAM_DIR)")


def build(project: str, *, timeout: float = 1800.0) -> Path:
    """Run ``<project>/build.sh`` and return the binary path it prints as its last line.

    The scripts serialise parallel callers with flock and reuse a binary built from the same
    tarballs, so calling this from every test session is cheap once the cache is warm.
    """
    script = upstream_dir() / project / "build.sh"
    if not script.is_file():
        raise UpstreamMissing(f"{script} not found")
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=timeout, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-20:])
        raise UpstreamMissing(f"{script} failed (exit {proc.returncode}):\n{tail}")
    binary = Path(lines[-1].strip())
    if not binary.is_file():
        raise UpstreamMissing(f"{script} printed {binary}, which is not a file")
    return binary


def binary_dir(project: str) -> Path:
    """Where ``build.sh`` puts a project's binaries (``…/kustodian-upstream/<project>/bin``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "kustodian-upstream" / project / "bin"
