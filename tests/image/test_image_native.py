"""The image ships the capacity planner's compiled extension, and not the compiler that built it.

``kustodian.policy.capacity._native`` is optional to pip (setup.py): a builder without gcc would
install the pure-Python planner without a word. The image has no shell, so its Python runs the
checks (``--entrypoint``), as the chart's user on a read-only root filesystem.
"""

from __future__ import annotations

import json

from tests.image.conftest import podman

UID = 65532


def image_python(image: str, code: str) -> str:
    proc = podman("run", "--rm", f"--user={UID}:{UID}", "--read-only", "--network=none",
                  "--entrypoint=/opt/kustodian/bin/python", image, "-c", code, check=False)
    assert proc.returncode == 0, f"python in {image} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_the_compiled_extension_is_in_the_image(built_image: str) -> None:
    out = image_python(built_image, "import json, kustodian.policy.capacity._native as m; "
                                    "print(json.dumps([m.compiled(), m.__file__]))")
    compiled, path = json.loads(out)
    assert compiled is True
    assert path.startswith("/opt/kustodian/lib/python3") and path.endswith(".so"), path


def test_the_compiler_stayed_in_the_builder(built_image: str) -> None:
    out = image_python(built_image, "import glob, json; print(json.dumps(sorted(glob.glob('/usr/bin/*gcc*') "
                                    "+ glob.glob('/usr/bin/cc') + glob.glob('/usr/lib/gcc') "
                                    "+ glob.glob('/usr/include'))))")
    assert json.loads(out) == []


def test_the_kubectl_plugin_is_in_the_image(built_image: str) -> None:
    # pip installs every console script into the virtualenv the image keeps whole: copied out of
    # the image onto a PATH, kubectl-kustodian is `kubectl kustodian`
    proc = podman("run", "--rm", f"--user={UID}:{UID}", "--read-only", "--network=none",
                  "--entrypoint=/opt/kustodian/bin/kubectl-kustodian", built_image, "report", "--help", check=False)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.startswith("usage: kubectl kustodian report"), proc.stdout
