"""The chart's alerts and their runbooks: every ``alert:`` of the PrometheusRule template links
(``runbook_url``) to a section of its own name in ``docs/operations.md``."""

from __future__ import annotations

import re
from pathlib import Path

from docsgen.chart import CHART

__all__ = ["DOCS", "RUNBOOK_BASE", "alerts", "problems", "runbook_urls"]

DOCS = Path(__file__).resolve().parent.parent / "docs"
RULE = CHART / "templates" / "prometheusrule.yaml"
RUNBOOK_BASE = "https://github.com/kustodian/kustodian/blob/main/docs/operations.md#"
_ALERT = re.compile(r"^\s*- alert: (\w+)\s*$", re.M)


def alerts(template: Path = RULE) -> list[str]:
    return _ALERT.findall(template.read_text())


def runbook_urls(template: Path = RULE) -> dict[str, str]:
    """alert -> the runbook_url annotation of its rule ("" if none)."""
    text = template.read_text()
    starts = [(m.start(), m[1]) for m in _ALERT.finditer(text)]
    out: dict[str, str] = {}
    for i, (start, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        url = re.search(r"runbook_url:\s*\"?([^\s\"]+)", text[start:end])
        out[name] = url[1] if url else ""
    return out


def problems(template: Path = RULE, page: Path | None = None) -> list[str]:
    """Alerts without a ``### <Alert>`` runbook section, or whose runbook_url is not that section."""
    page = page or DOCS / "operations.md"
    headings = set(re.findall(r"^### (\w+)\s*$", page.read_text(), re.M))
    out = []
    for name, url in runbook_urls(template).items():
        if name not in headings:
            out.append(f"{name}: no '### {name}' section in docs/{page.name}")
        if url != RUNBOOK_BASE + name.lower():
            out.append(f"{name}: runbook_url is {url or 'missing'!r}, not {RUNBOOK_BASE + name.lower()}")
    return out
