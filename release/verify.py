"""``make dist-check`` (``.ci/run`` after ``make dist``): prove the artifacts in ``dist/`` are what a
release would publish, each by the tool its users run, one line per check:

- ``SHA256SUMS`` covers every other file and each digest matches;
- ``twine check --strict`` on the wheel and the sdist (what PyPI would refuse or render badly);
- one version everywhere: the wheel's and sdist's metadata, the chart package's ``version`` and
  ``appVersion``, the OCI archive's name and ``org.opencontainers.image.version`` label, the
  SBOM's root component: all pyproject.toml's; the commit the wheel, the sdist and the image's
  ``revision`` label recorded is this checkout's;
- the wheel holds the package and nothing of the repository's (tests, bench, docsgen, release),
  with the compiled planner;
- ``helm lint --strict`` of the packaged chart (its ``helm install`` on a real API server is
  ``tests/chart/test_chart_package_api.py``, which takes this ``.tgz`` when ``KUSTODIAN_TEST_DIST`` names
  the folder);
- with ``--clean-checkout`` (CI): the artifacts come from a clean checkout, the commit they
  recorded without ``-dirty`` and no file in the tree that git does not track or ignore (an
  untracked module would be packaged into the sdist and the wheel, a modified one is "-dirty");
- the wheel alone in a fresh virtualenv (no editable install, the repository not on ``sys.path``,
  run from an empty directory, dependencies offline from the wheel cache): ``kustodian --version``
  is the chart's appVersion and this commit, and the real kubectl runs ``kubectl kustodian --help``
  through its plugin mechanism (``kubectl-kustodian`` on the PATH).
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import venv
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from release.dist import SUMS, image_archive_name, offline_env
from release.version import REPO, project_version

__all__ = ["Check", "checks", "main"]

Check = Callable[[Path], str]  # returns what it proved; raises AssertionError with why not
_FOREIGN = ("tests/", "bench/", "docsgen/", "release/", "docs/", "charts/")


def _one(dist: Path, pattern: str) -> Path:
    found = sorted(dist.glob(pattern))
    assert len(found) == 1, f"{pattern}: {len(found)} files in {dist} ({[p.name for p in found]})"
    return found[0]


def _commit() -> str | None:
    from kustodian.version import git_commit

    return git_commit(REPO)


def check_sums(dist: Path) -> str:
    listed = {}
    for line in (dist / SUMS).read_text().splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    files = sorted(p.name for p in dist.iterdir() if p.is_file() and p.name != SUMS)
    assert sorted(listed) == files, f"{SUMS} lists {sorted(listed)}, the folder holds {files}"
    for name, digest in listed.items():
        assert hashlib.sha256((dist / name).read_bytes()).hexdigest() == digest, f"{name}: digest differs"
    return f"{SUMS} matches all {len(files)} files"


def check_twine(dist: Path) -> str:
    wheel, sdist = _one(dist, "kustodian-*.whl"), _one(dist, "kustodian-*.tar.gz")
    out = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return f"twine check --strict: {wheel.name}, {sdist.name} PASSED"


def _wheel_metadata(wheel: Path) -> tuple[dict[str, str], list[str]]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        headers = email.parser.Parser().parsestr(zf.read(meta).decode())
        commit = next((zf.read(n).decode().strip() for n in names if n == "kustodian/COMMIT"), "")
    return {"Version": str(headers["Version"]), "Name": str(headers["Name"]), "COMMIT": commit}, names


def check_wheel(dist: Path) -> str:
    version, commit = project_version(), _commit()
    wheel = _one(dist, "kustodian-*.whl")
    meta, names = _wheel_metadata(wheel)
    assert meta["Version"] == version, f"{wheel.name}: Version {meta['Version']}, pyproject.toml {version}"
    assert commit is None or meta["COMMIT"] == commit, (
        f"{wheel.name}: kustodian/COMMIT {meta['COMMIT']!r}, HEAD {commit}"
    )
    foreign = sorted({n.split("/")[0] for n in names if n.startswith(_FOREIGN)})
    assert not foreign, f"{wheel.name} holds {foreign}"
    assert any(n.startswith("kustodian/policy/capacity/_native") and n.endswith(".so") for n in names), (
        f"{wheel.name}: no compiled kustodian.policy.capacity._native"
    )
    with tarfile.open(_one(dist, "kustodian-*.tar.gz")) as tar:
        root = f"kustodian-{version}"
        members = set(tar.getnames())
        for needed in (
            "pyproject.toml",
            "setup.py",
            "kustodian/policy/capacity/_native.pyx",
            "kustodian/COMMIT",
        ):
            assert f"{root}/{needed}" in members, f"sdist: no {needed}"
        extracted = tar.extractfile(f"{root}/kustodian/COMMIT")
        assert extracted is not None
        sdist_commit = extracted.read().decode().strip()
    assert commit is None or sdist_commit == commit, f"sdist: COMMIT {sdist_commit}, HEAD {commit}"
    return f"{wheel.name}: version {version}, commit {meta['COMMIT'][:12] or 'none'}, the package only"


def _chart(dist: Path) -> tuple[Path, dict[str, Any]]:
    tgz = dist / f"kustodian-{project_version()}.tgz"
    with tarfile.open(tgz) as tar:
        member = tar.extractfile("kustodian/Chart.yaml")
        assert member is not None, f"{tgz.name}: no Chart.yaml"
        chart: dict[str, Any] = yaml.safe_load(member.read())
    return tgz, chart


def check_chart(dist: Path) -> str:
    from kustodian.testing.tools import ensure_tools

    version = project_version()
    tgz, chart = _chart(dist)
    assert (chart["version"], chart["appVersion"]) == (version, version), (
        f"{tgz.name}: version {chart['version']}, appVersion {chart['appVersion']}, pyproject.toml {version}"
    )
    out = subprocess.run(
        [str(ensure_tools() / "helm"), "lint", "--strict", str(tgz)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0 and "0 chart(s) failed" in out.stdout, out.stdout + out.stderr
    return f"{tgz.name}: version and appVersion {version}, helm lint --strict clean"


def _oci_blob(tar: tarfile.TarFile, digest: str) -> Any:
    algorithm, _, hexdigest = digest.partition(":")
    member = tar.extractfile(f"blobs/{algorithm}/{hexdigest}")
    assert member is not None, digest
    return json.loads(member.read())


def check_image(dist: Path) -> str:
    version, commit = project_version(), _commit()
    archive = dist / image_archive_name(version)
    with tarfile.open(archive) as tar:
        layout = tar.extractfile("oci-layout")
        assert layout is not None and json.loads(layout.read())["imageLayoutVersion"] == "1.0.0"
        index = tar.extractfile("index.json")
        assert index is not None
        (manifest_ref,) = json.loads(index.read())["manifests"]
        name = manifest_ref.get("annotations", {}).get("org.opencontainers.image.ref.name", "")
        assert name.endswith(f":{version}") or name == version, f"{archive.name}: named {name!r}"
        manifest = _oci_blob(tar, manifest_ref["digest"])
        labels = _oci_blob(tar, manifest["config"]["digest"])["config"].get("Labels") or {}
    assert labels.get("org.opencontainers.image.version") == version, labels
    assert commit is None or labels.get("org.opencontainers.image.revision") == commit, labels
    return f"{archive.name}: OCI layout, {name}, labels version {version}, revision {commit or '-'}"


def check_sbom(dist: Path) -> str:
    version = project_version()
    bom = json.loads((dist / f"kustodian-{version}.cdx.json").read_text())
    assert bom["bomFormat"] == "CycloneDX", bom.get("bomFormat")
    root = bom["metadata"]["component"]
    assert (root["name"], root["version"]) == ("kustodian", version), root
    names = {c["name"].lower() for c in bom.get("components", [])}
    for needed in ("fastapi", "httpx", "pydantic", "kubernetes", "cryptography"):
        assert needed in names, f"SBOM: no {needed} among {len(names)} components"
    return f"CycloneDX {bom['specVersion']}: kustodian {version} and {len(names)} components"


def check_fresh_venv(dist: Path) -> str:
    from kustodian.testing.image import CACHE
    from kustodian.testing.tools import ensure_tools

    version, commit = project_version(), _commit()
    wheel = _one(dist, "kustodian-*.whl")
    tools = ensure_tools()
    with tempfile.TemporaryDirectory(prefix="kustodian-fresh-") as tmp:
        env_dir, cwd, home = Path(tmp) / "venv", Path(tmp) / "empty", Path(tmp) / "home"
        cwd.mkdir()
        home.mkdir()
        venv.create(env_dir, with_pip=True)  # no system site-packages, nothing of this repository
        bin_dir = env_dir / "bin"
        install = subprocess.run(
            [str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-compile", str(wheel)],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            cwd=cwd,
            env=offline_env([CACHE / "wheels"]),
        )
        assert install.returncode == 0, install.stdout + install.stderr
        env = {
            "PATH": os.pathsep.join([str(bin_dir), str(tools), "/usr/bin", "/bin"]),
            "HOME": str(home),
            "LANG": "C.UTF-8",
        }

        def run(*cmd: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                list(cmd), capture_output=True, text=True, timeout=120, check=False, cwd=cwd, env=env
            )

        where = run("python", "-c", "import kustodian, sys; print(kustodian.__file__); print(sys.path)")
        assert where.returncode == 0, where.stderr
        assert where.stdout.startswith(str(env_dir)), (
            f"kustodian imported from {where.stdout.splitlines()[0]}"
        )
        assert str(REPO) not in where.stdout, f"the repository is on sys.path: {where.stdout}"
        line = run("kustodian", "--version")
        short = (
            commit.partition("-")[0][:12] + ("-dirty" if commit.endswith("-dirty") else "")
            if commit
            else "unknown"
        )
        assert line.returncode == 0 and line.stdout.startswith(f"kustodian {version} (commit {short},"), (
            line.stdout + line.stderr
        )
        _, chart = _chart(dist)
        assert line.stdout.split()[1] == chart["appVersion"], (line.stdout, chart["appVersion"])
        plugins = run("kubectl", "plugin", "list")
        assert str(bin_dir / "kubectl-kustodian") in plugins.stdout, plugins.stdout + plugins.stderr
        helped = run("kubectl", "kustodian", "--help")
        assert helped.returncode == 0 and helped.stdout.startswith("usage: kubectl kustodian"), (
            helped.stdout[:300] + helped.stderr
        )
    return f"fresh venv from {wheel.name} alone: {line.stdout.strip()}; kubectl kustodian --help answers"


def check_clean_checkout(dist: Path, repo: Path = REPO) -> str:
    meta, _ = _wheel_metadata(_one(dist, "kustodian-*.whl"))
    assert meta["COMMIT"] and not meta["COMMIT"].endswith("-dirty"), (
        f"the wheel recorded commit {meta['COMMIT']!r}: built from a tree with uncommitted changes"
    )
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=repo,
    ).stdout.splitlines()
    assert not status, f"the checkout is not clean: {', '.join(line[3:] for line in status[:10])}"
    return f"built from a clean checkout of {meta['COMMIT'][:12]}"


def checks(with_image: bool = True, clean_checkout: bool = False) -> list[tuple[str, Check]]:
    found: list[tuple[str, Check]] = [
        ("checksums", check_sums),
        ("twine", check_twine),
        ("wheel and sdist", check_wheel),
        ("chart", check_chart),
        ("sbom", check_sbom),
        ("fresh venv", check_fresh_venv),
    ]
    if with_image:
        found.insert(4, ("image", check_image))
    if clean_checkout:
        found.insert(0, ("clean checkout", check_clean_checkout))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m release.verify", description=__doc__.split("\n")[0])
    parser.add_argument("dist", nargs="?", type=Path, default=REPO / "dist")
    parser.add_argument("--no-image", action="store_true", help="a dist built without the image")
    parser.add_argument(
        "--clean-checkout",
        action="store_true",
        help="also prove the artifacts come from a clean checkout (CI; a release)",
    )
    args = parser.parse_args(argv)
    failed = 0
    for name, check in checks(with_image=not args.no_image, clean_checkout=args.clean_checkout):
        started = time.monotonic()
        try:
            said = check(args.dist.resolve())
        except (AssertionError, OSError, KeyError, subprocess.TimeoutExpired) as exc:
            failed += 1
            sys.stdout.write(f"FAIL {name}: {exc}\n")
            continue
        sys.stdout.write(f"ok   {name} ({time.monotonic() - started:.0f}s): {said}\n")
    sys.stdout.write(f"dist-check: {'all passed' if not failed else f'{failed} failed'}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
