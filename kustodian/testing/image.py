"""Build the ``Dockerfile`` with podman, without Docker and without network in the build.

``python -m kustodian.testing.image`` (run by ``.ci/run``) does, each step cached:

1. installs ``podman``, ``runc``, ``mmdebstrap`` (and ``promtool`` for the chart's rules) with
   apt-get when they are missing (root only);
2. builds a Debian bookworm root filesystem with python3 (``mmdebstrap``, ~1 min) once, kept in
   ``~/.cache/kustodian-image/base-<hash>.tar`` and imported into podman as
   ``localhost/kustodian-base:<hash>``: the public ``python:3.11-slim`` the Dockerfile defaults to
   cannot be pulled here, and the Dockerfile takes its base as a build argument for this;
3. builds the project's wheels and their dependencies on the host (``pip wheel``, which reaches
   the package index the host is configured for) into ``~/.cache/kustodian-image/wheels``, with
   those of its build requirements (setuptools, Cython);
4. ``podman build`` with those wheels bind-mounted and ``PIP_NO_INDEX=1``, the version
   (pyproject.toml's) and the git commit as build arguments (the image's
   ``org.opencontainers.image.*`` labels and ``kustodian version``), tagged ``localhost/kustodian:ci``
   and ``localhost/kustodian:<version>``;
5. reports the image size (budget :data:`SIZE_BUDGET_MB`) and the build time.

``--oci-archive FILE`` then writes the image as an OCI archive (``podman save --format oci-archive``,
named ``ghcr.io/kustodian/kustodian:<version>`` inside): ``make dist``'s image artifact.

podman runs with ``--runtime runc`` (crun fails on hybrid cgroup hosts) and a
``containers.conf`` of its own with ``default_ulimits = []`` (the default raises nofile above
what a nested container may set). Both are passed per command: nothing in /etc is changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("KUSTODIAN_IMAGE_CACHE", Path.home() / ".cache" / "kustodian-image"))
IMAGE = "localhost/kustodian:ci"
#: where a release publishes the image (the chart's image.repository default)
PUBLISHED = "ghcr.io/kustodian/kustodian"
SIZE_BUDGET_MB = 150.0
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# python3 + venv for the builder stage; ca-certificates for TLS to the API server; gcc, libc6-dev
# and Python's headers (libpython3-dev, not python3-dev's extra tools) to compile setup.py's
# extension. The final stage is FROM scratch: none of the compiler reaches the image.
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates", "gcc", "libc6-dev", "libpython3-dev")
# no documentation, manual pages or translations in an image nobody logs into
_DPKG_EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*",
                  "/usr/share/lintian/*")
# The essential set of a bookworm rootfs pulls usrmerge, and with it perl (~50 MB); mmdebstrap's
# merged-usr hook lays out the merged /usr itself and installs usr-is-merged instead.
_HOOKS = "/usr/share/mmdebstrap/hooks/merged-usr"
# command -> the Debian package that has it (promtool checks the chart's alerting rules)
TOOLS = {"podman": "podman", "runc": "runc", "mmdebstrap": "mmdebstrap", "promtool": "prometheus"}


class ImageError(RuntimeError):
    """A step of the image build failed; the message names the step and its output."""


@dataclass(frozen=True)
class Built:
    image: str
    size_bytes: int
    seconds: float
    base: str
    #: what this build made, whatever the tag names later (podman's store is per machine: another
    #: checkout's build may retag ``image``)
    image_id: str = ""

    @property
    def size_mb(self) -> float:
        return self.size_bytes / 1e6

    @property
    def within_budget(self) -> bool:
        return self.size_mb <= SIZE_BUDGET_MB


def _run(cmd: list[str], what: str, *, env: dict[str, str] | None = None,
         timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        raise ImageError(f"{what} failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc


def containers_conf() -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / "containers.conf"
    text = "[containers]\ndefault_ulimits = []\n"
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(containers_conf())}


def podman(*args: str, what: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return _run(["podman", "--runtime", "runc", *args], what, env=podman_env(), timeout=timeout)


def have_tools() -> bool:
    return all(shutil.which(t) for t in TOOLS)


def ensure_tools() -> None:
    """podman, runc, mmdebstrap and promtool from Debian's packages (about a minute, once per machine)."""
    if have_tools():
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        missing = [t for t in TOOLS if not shutil.which(t)]
        raise ImageError(f"{', '.join(missing)} missing and cannot be installed here (needs root and apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-q"], "apt-get update", env=env)
    _run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *sorted(set(TOOLS.values())),
          # podman's own recommends that make rootful builds work: overlay mounts, networking
          "fuse-overlayfs", "slirp4netns", "uidmap", "containernetworking-plugins"],
         "apt-get install", env=env)


def base_recipe() -> str:
    return "\n".join([SUITE, *BASE_PACKAGES, *_DPKG_EXCLUDES, _HOOKS])


def base_tag() -> str:
    return "localhost/kustodian-base:" + hashlib.sha256(base_recipe().encode()).hexdigest()[:12]


def image_exists(ref: str) -> bool:
    return subprocess.run(["podman", "image", "exists", ref], env=podman_env(), check=False).returncode == 0


def ensure_base() -> str:
    """The Debian base image, built once per recipe (tarball cached, then imported)."""
    tag = base_tag()
    if image_exists(tag):
        return tag
    tar = CACHE / f"base-{tag.rsplit(':', 1)[1]}.tar"
    if not tar.is_file():
        partial = tar.with_suffix(".partial.tar")
        cmd = ["mmdebstrap", "--variant=essential", "--include=" + ",".join(BASE_PACKAGES)]
        cmd += [f"--dpkgopt=path-exclude={p}" for p in _DPKG_EXCLUDES]
        cmd += ["--dpkgopt=path-include=/usr/share/doc/*/copyright", f"--hook-dir={_HOOKS}",
                SUITE, str(partial), MIRROR]
        _run(cmd, "mmdebstrap (the Debian base)")
        partial.rename(tar)
    podman("import", "--change", "CMD [\"/usr/bin/python3\"]", str(tar), tag, what="podman import (base)")
    return tag


def project_version() -> str:
    """``[project] version`` of pyproject.toml: the one version (kustodian/version.py)."""
    with (REPO / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def source_commit() -> str:
    """The checkout's commit for the image's revision label ("" outside a checkout: none claimed)."""
    from kustodian.version import git_commit

    return git_commit(REPO) or ""


def build_requires() -> list[str]:
    """``[build-system] requires`` of pyproject.toml: setuptools and Cython."""
    with (REPO / "pyproject.toml").open("rb") as f:
        return list(tomllib.load(f)["build-system"]["requires"])


def dependencies() -> list[str]:
    """``[project] dependencies`` of pyproject.toml."""
    with (REPO / "pyproject.toml").open("rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def ensure_wheels() -> Path:
    """Wheels of the project's dependencies and of its build requirements, on the host.

    The build requirements are no dependency of anything, so they are asked for by name; the
    image's build (no index) installs them into pip's isolated build environment from here. The
    dependencies are asked for as pyproject.toml lists them, not through the project, so that
    resolving them does not compile the project (its wheel is built by make dist and in the image).
    """
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(wheels), *dependencies(),
          *build_requires()], "pip wheel (the project's dependencies)")
    for own in wheels.glob("kustodian-*.whl"):  # built from source inside the image, never reused
        own.unlink()
    return wheels


def image_size(ref: str) -> int:
    out = podman("image", "inspect", "--format", "{{.Size}}", ref, what="podman image inspect").stdout
    return int(out.strip())


def build(image: str = IMAGE, base: str | None = None) -> Built:
    started = time.monotonic()
    ensure_tools()
    base = base or ensure_base()
    wheels = ensure_wheels()
    version = project_version()
    iidfile = CACHE / f"iid-{os.getpid()}"
    podman("build", "--pull=never", "--layers", "-f", str(REPO / "Dockerfile"), "-t", image,
           "-t", f"localhost/kustodian:{version}", "--iidfile", str(iidfile),
           "--build-arg", f"BASE={base}", "--build-arg", "PIP_NO_INDEX=1",
           "--build-arg", "PIP_FIND_LINKS=/wheels", "-v", f"{wheels}:/wheels:ro",
           "--build-arg", f"VERSION={version}", "--build-arg", f"REVISION={source_commit()}",
           str(REPO), what="podman build")
    image_id = iidfile.read_text().strip()
    iidfile.unlink()
    return Built(image, image_size(image_id), time.monotonic() - started, base, image_id)


def save_oci_archive(image: str, target: Path) -> Path:
    """``image`` (a name or, better, the ID a build made) as an OCI archive at ``target``, named as a
    release publishes it
    (``ghcr.io/kustodian/kustodian:<version>``): what ``podman load`` / ``skopeo copy oci-archive:``
    take, and what the release workflow's registry gets."""
    name = f"{PUBLISHED}:{project_version()}"
    podman("tag", image, name, what="podman tag")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    podman("save", "--format", "oci-archive", "-o", str(target), name, what="podman save")
    return target


def labels(image: str) -> dict[str, str]:
    out = podman("image", "inspect", "--format", "{{json .Labels}}", image, what="podman image inspect").stdout
    found: dict[str, str] = json.loads(out) or {}
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kustodian.testing.image", description=__doc__.split("\n")[0])
    parser.add_argument("--image", default=IMAGE)
    parser.add_argument("--enforce-budget", action="store_true",
                        help=f"exit 1 when the image is larger than {SIZE_BUDGET_MB:.0f} MB")
    parser.add_argument("--oci-archive", metavar="FILE", type=Path,
                        help="also write the image to FILE as an OCI archive (make dist)")
    args = parser.parse_args(argv)
    try:
        built = build(args.image)
        archive = save_oci_archive(built.image_id, args.oci_archive) if args.oci_archive else None
    except (ImageError, subprocess.TimeoutExpired) as exc:
        sys.stderr.write(f"image: {exc}\n")
        return 1
    verdict = "within" if built.within_budget else "OVER"
    sys.stdout.write(f"image: built {built.image} (base {built.base}) in {built.seconds:.0f}s; "
                     f"size {built.size_mb:.1f} MB, {verdict} the {SIZE_BUDGET_MB:.0f} MB budget\n")
    if archive is not None:
        sys.stdout.write(f"image: saved as {archive} ({archive.stat().st_size / 1e6:.1f} MB)\n")
    return 1 if args.enforce_budget and not built.within_budget else 0


if __name__ == "__main__":
    sys.exit(main())
