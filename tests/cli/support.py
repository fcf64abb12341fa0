"""Run the installed ``kustodian`` console script (the entry point users run), with a clean
environment: no KUBECONFIG, a HOME without ~/.kube, not in a pod."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ENTRY_POINT = Path(sys.executable).parent / "kustodian"


def command() -> list[str]:
    if ENTRY_POINT.is_file():
        return [str(ENTRY_POINT)]
    found = shutil.which("kustodian")
    assert found, "the kustodian console script is not installed (pip install -e .)"
    return [found]


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")
           and not (k.startswith("KUSTODIAN_") and "__" in k)}  # no settings from the caller's env
    env["HOME"] = str(home)
    env.update(extra)
    return env


def run(home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60,
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*command(), *args], capture_output=True, text=True, check=False, timeout=timeout,
                          env=env if env is not None else clean_env(home))
