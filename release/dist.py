"""``make dist``: every release artifact of this tree, built here, into one folder (``dist/``).

- ``kustodian-<v>.tar.gz`` and ``kustodian-<v>-<tags>.whl``: ``python -m build`` (the sdist, then
  the wheel built from the sdist, which proves the sdist is complete), offline: build requirements
  from the image build's wheel cache (``PIP_NO_INDEX``). The release workflow builds the wheels it
  publishes with cibuildwheel instead (manylinux, two architectures); this one is the host's;
- ``kustodian-<v>.tgz``: ``helm package charts/kustodian``;
- ``kustodian-image-<v>-linux-<arch>.oci.tar``: the image (``kustodian.testing.image``: podman,
  Debian base, no network in the build), saved as an OCI archive named
  ``ghcr.io/kustodian/kustodian:<v>``;
- ``kustodian-<v>.cdx.json``: a CycloneDX SBOM of what the wheel installs, made by CycloneDX's own
  tool (``cyclonedx-py environment``, from PyPI: the format's reference implementation for Python,
  kept by the CycloneDX project) over a throwaway virtualenv holding the wheel and its
  dependencies, so it lists what a ``pip install kustodian`` gets, with versions and hashes;
- ``SHA256SUMS``: ``sha256sum -c`` checks every file above.

``python -m release.dist all`` builds everything (``--no-image`` leaves the image out); ``sbom DIR``
and ``checksums DIR`` are the two last steps alone, which the release workflow runs over the wheels
and chart it built itself. ``python -m release.verify DIR`` proves the folder (``make dist-check``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from collections.abc import Sequence
from pathlib import Path

from release.version import REPO, project_version

__all__ = ["ARCH", "DistError", "build_all", "checksums", "image_archive_name", "sbom"]

#: OCI's names for the host's architecture
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
SUMS = "SHA256SUMS"


class DistError(RuntimeError):
    """A step of make dist failed; the message names the step and the end of its output."""


def run(
    cmd: Sequence[str],
    what: str,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 1800,
) -> str:
    proc = subprocess.run(
        list(cmd),
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise DistError(f"{what} failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc.stdout


def image_archive_name(version: str) -> str:
    return f"kustodian-image-{version}-linux-{ARCH}.oci.tar"


def offline_env(find_links: Sequence[Path]) -> dict[str, str]:
    """pip with no index: every package from these folders (the image build's wheel cache)."""
    env = {
        **os.environ,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": " ".join(str(p) for p in find_links),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    env.pop("PYTHONPATH", None)
    return env


def python_dists(out: Path, wheels: Path) -> list[Path]:
    """sdist, then the wheel from the sdist (``python -m build``), offline."""
    run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        "python -m build (sdist, wheel)",
        env=offline_env([wheels]),
    )
    return sorted([*out.glob("kustodian-*.tar.gz"), *out.glob("kustodian-*.whl")])


def chart_package(out: Path) -> Path:
    from kustodian.testing.tools import ensure_tools

    helm = ensure_tools() / "helm"
    run([str(helm), "package", str(REPO / "charts" / "kustodian"), "--destination", str(out)], "helm package")
    return out / f"kustodian-{project_version()}.tgz"


def image(out: Path, *, enforce_budget: bool) -> Path:
    from kustodian.testing import image as image_build

    built = image_build.build()
    sys.stdout.write(
        f"dist: image {built.image} built in {built.seconds:.0f}s, {built.size_mb:.1f} MB "
        f"(budget {image_build.SIZE_BUDGET_MB:.0f} MB)\n"
    )
    if enforce_budget and not built.within_budget:
        raise DistError(
            f"the image is {built.size_mb:.1f} MB, over the {image_build.SIZE_BUDGET_MB:.0f} MB budget"
        )
    return image_build.save_oci_archive(built.image_id, out / image_archive_name(project_version()))


def sbom(out: Path, find_links: Sequence[Path] = ()) -> Path:
    """A CycloneDX SBOM (JSON) of a fresh virtualenv holding the wheel in ``out`` for this Python,
    and its dependencies: from ``find_links`` only when given (offline), else from the index."""
    version = project_version()
    target = out / f"kustodian-{version}.cdx.json"
    with tempfile.TemporaryDirectory(prefix="kustodian-sbom-") as tmp:
        env_dir = Path(tmp) / "venv"
        venv.create(env_dir, with_pip=True)
        python = env_dir / "bin" / "python"
        env = offline_env([out, *find_links]) if find_links else {**os.environ, "PIP_FIND_LINKS": str(out)}
        run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "--only-binary",
                "kustodian",
                f"kustodian=={version}",
            ],
            "pip install (the wheel, for the SBOM)",
            env=env,
        )
        run(
            [str(python), "-m", "pip", "uninstall", "-q", "-y", "pip"], "pip uninstall pip (not a dependency)"
        )
        run(
            [
                sys.executable,
                "-m",
                "cyclonedx_py",
                "environment",
                "--pyproject",
                str(REPO / "pyproject.toml"),
                "--mc-type",
                "application",
                "--output-reproducible",
                "--of",
                "JSON",
                "-o",
                str(target),
                str(python),
            ],
            "cyclonedx-py environment",
        )
    return target


def checksums(out: Path) -> Path:
    """``SHA256SUMS`` over every other file of ``out``, as ``sha256sum`` writes it."""
    lines = []
    for path in sorted(p for p in out.iterdir() if p.is_file() and p.name != SUMS):
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        lines.append(f"{digest.hexdigest()}  {path.name}\n")
    target = out / SUMS
    target.write_text("".join(lines))
    return target


def build_all(out: Path, *, with_image: bool = True, enforce_budget: bool = False) -> list[Path]:
    from kustodian.testing.image import ensure_wheels

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    steps: list[tuple[str, float]] = []
    started = time.monotonic()
    wheels = ensure_wheels()  # the dependencies' and build requirements' wheels (the image uses them too)
    steps.append(("wheel cache", time.monotonic() - started))
    for name, step in (
        ("sdist and wheel", lambda: python_dists(out, wheels)),
        ("chart", lambda: chart_package(out)),
        *((("image", lambda: image(out, enforce_budget=enforce_budget)),) if with_image else ()),
        ("sbom", lambda: sbom(out, [wheels])),
        ("checksums", lambda: checksums(out)),
    ):
        t = time.monotonic()
        step()
        steps.append((name, time.monotonic() - t))
    sys.stdout.write("dist: " + ", ".join(f"{name} {seconds:.0f}s" for name, seconds in steps) + "\n")
    return sorted(out.iterdir())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m release.dist", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("all", help="every artifact into DIR (default dist)")
    p.add_argument("out", nargs="?", type=Path, default=REPO / "dist")
    p.add_argument("--no-image", action="store_true", help="leave the image out (no podman)")
    p.add_argument(
        "--enforce-image-budget", action="store_true", help="fail when the image is over its budget"
    )
    p = sub.add_parser("sbom", help="the SBOM of the wheel in DIR (dependencies from the index)")
    p.add_argument("out", type=Path)
    p = sub.add_parser("checksums", help="SHA256SUMS of DIR")
    p.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "all":
            built = build_all(
                args.out, with_image=not args.no_image, enforce_budget=args.enforce_image_budget
            )
        elif args.command == "sbom":
            built = [sbom(args.out)]
        else:
            built = [checksums(args.out)]
    except (DistError, subprocess.TimeoutExpired) as exc:
        sys.stderr.write(f"dist: {exc}\n")
        return 1
    except Exception as exc:  # kustodian.testing.image's own error, without importing it up front
        if type(exc).__name__ != "ImageError":
            raise
        sys.stderr.write(f"dist: image: {exc}\n")
        return 1
    for path in built:
        sys.stdout.write(f"{path.stat().st_size:>12,}  {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
