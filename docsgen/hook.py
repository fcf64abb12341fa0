"""mkdocs hook (``mkdocs.yml`` ``hooks:``): adds the generated reference pages to the build and
fails it when an alert has no runbook section."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

# mkdocs loads this file by path: the repository root must be importable for ``docsgen``
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from docsgen import alerts, architecture, chart, settings

ROOT = Path(__file__).resolve().parent.parent
GENERATED = {
    "reference/configuration.md": settings.render,
    "reference/chart-values.md": chart.render,
    "assets/architecture.svg": architecture.svg,
}


def on_files(files: Files, config: Any) -> Files:
    for path, render in GENERATED.items():
        files.append(File.generated(config, path, content=render()))
    # the chart's own README, as the chart ships it, is the site's page on the chart
    files.append(File.generated(config, "reference/chart.md",
                                content=(chart.CHART / "README.md").read_text()))
    # the performance plot stays where `python -m bench` writes it
    files.append(File("bench/latency.png", src_dir=str(ROOT), dest_dir=config["site_dir"],
                      use_directory_urls=config["use_directory_urls"]))
    return files


def on_pre_build(config: Any) -> None:
    problems = alerts.problems() + [f"settings field without description: {f}" for f in
                                    settings.undocumented()] + [f"chart value without comment: {v}"
                                                                for v in chart.undocumented()]
    if problems:
        raise PluginError("undocumented:\n" + "\n".join(problems))
