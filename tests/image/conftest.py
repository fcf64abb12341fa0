"""The image built from ``Dockerfile`` (``python -m kustodian.testing.image``) and podman to run it."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from kustodian.testing import image as image_build
from tests.conftest import unavailable


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["podman", "--runtime", "runc", *args], capture_output=True, text=True,
                          env=image_build.podman_env(), timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def built_image() -> str:
    """The CI image (``.ci/run`` built it), or built now when podman is here but the image is not."""
    ref = os.environ.get("KUSTODIAN_TEST_IMAGE", image_build.IMAGE)
    if not shutil.which("podman"):
        unavailable("podman missing (`python -m kustodian.testing.image` installs it)")
    if not image_build.image_exists(ref):
        try:
            image_build.build(ref)
        except image_build.ImageError as exc:
            unavailable(f"the image could not be built: {exc}")
    return ref
