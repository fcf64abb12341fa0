"""What a page's helm command installs, as this tree has it.

A page names the chart two ways: ``charts/kustodian`` (a clone) and the published reference
``oci://ghcr.io/kustodian/charts/kustodian --version X`` (what a release pushes). The published one
cannot be pulled here (no network, and before the first release nothing is there), and it need not
be: the release workflow pushes exactly ``charts/kustodian`` of the tagged tree, packaged as the
version ``Chart.yaml`` (= pyproject.toml, ``tests/release/test_version.py``) says. So a published
reference pinned to this tree's version *is* this directory, and the docs tests render and run it
from here; one pinned to another version, or not pinned, is a mistake they report, never a thing
they skip.
"""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "kustodian"
PUBLISHED_CHART = "oci://ghcr.io/kustodian/charts/kustodian"


def chart_version() -> str:
    return str(yaml.safe_load((CHART / "Chart.yaml").read_text())["version"])


def local_chart(ref: str, version: str | None) -> Path | str:
    """The directory ``ref`` (at ``--version``) stands for, or why it stands for none."""
    if ref.rstrip("/") in ("charts/kustodian", "./charts/kustodian"):
        return CHART
    if ref == PUBLISHED_CHART:
        if version is None:
            return f"{ref} without --version installs whatever is newest: pin {chart_version()}"
        if version != chart_version():
            return f"{ref} --version {version}: this tree publishes {chart_version()}"
        return CHART
    return f"{ref}: neither charts/kustodian nor {PUBLISHED_CHART}"
