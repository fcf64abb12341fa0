"""mkdocs hook (``mkdocs.yml`` ``hooks:``): adds the pages drawn at build time to the site and fails
the build when a reference page in docs/ is not what the code says, or when a setting, a chart
value or an alert is undocumented.

Two kinds of generated pages:

- **committed** (``COMMITTED``): the configuration and chart-values references are written into
  ``docs/reference/`` by ``make docs`` (``python -m docsgen``) and committed, so that links to them
  resolve in the repository (the README's, GitHub's view of docs/) as well as on the site; the
  build fails when one is stale, naming the command that rewrites it;
- **drawn at build time** (``GENERATED``): the architecture picture; and files kept outside docs/
  that the site publishes under a name of its own (``PUBLISHED``): the chart's README as the
  site's page on the chart, CHANGELOG.md as its changelog.

A link is written as it resolves in the repository (``../CHANGELOG.md`` from a page in docs/,
``docs/operations.md`` in CHANGELOG.md), so it works on GitHub; ``site_links`` rewrites it to the
page the site has for that file when the site is built, so it works there too.
"""

from __future__ import annotations

import posixpath
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

# mkdocs loads this file by path: the repository root must be importable for ``docsgen``
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from docsgen import alerts, architecture, chart, settings

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
COMMITTED: dict[str, Callable[[], str]] = {
    "reference/configuration.md": settings.render,
    "reference/chart-values.md": chart.render,
}
GENERATED: dict[str, Callable[[], str]] = {
    "assets/architecture.svg": architecture.svg,
}
#: files outside docs/ the site publishes, by their path in the repository -> their page on the site
PUBLISHED = {
    "charts/kustodian/README.md": "reference/chart.md",
    "CHANGELOG.md": "changelog.md",
}
_LINK = re.compile(r"(?P<open>\]\()(?P<target>[^)\s#]+\.md)(?P<anchor>#[^)\s]*)?(?P<close>\))")


def site_links(markdown: str, source: str, page: str) -> str:
    """``markdown``, read from ``source`` (a path in the repository) and published as ``page`` (a
    path on the site), with every relative link to a Markdown file rewritten to that file's page on
    the site: a file under docs/ is its own page, a file in ``PUBLISHED`` its page there. Links to
    anything else are left as they are (mkdocs --strict reports those that do not resolve)."""
    def rewrite(m: re.Match[str]) -> str:
        target = m["target"]
        if "://" in target:
            return m[0]
        in_repo = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
        if in_repo in PUBLISHED:
            on_site = PUBLISHED[in_repo]
        elif in_repo.startswith("docs/"):
            on_site = in_repo.removeprefix("docs/")
        else:
            return m[0]
        link = posixpath.relpath(on_site, posixpath.dirname(page) or ".")
        return f"{m['open']}{link}{m['anchor'] or ''}{m['close']}"

    return _LINK.sub(rewrite, markdown)


def stale() -> list[str]:
    """The committed reference pages that differ from what the code renders now."""
    out = []
    for path, render in COMMITTED.items():
        page = DOCS / path
        if not page.is_file() or page.read_text() != render():
            out.append(f"docs/{path} is not what the code renders: run `make docs` and commit it")
    return out


def on_files(files: Files, config: Any) -> Files:
    for path, render in GENERATED.items():
        files.append(File.generated(config, path, content=render()))
    # the chart's own README, as the chart ships it, is the site's page on the chart; CHANGELOG.md
    # is its changelog
    for source, page in PUBLISHED.items():
        content = site_links((ROOT / source).read_text(), source, page)
        files.append(File.generated(config, page, content=content))
    # the performance plots stay where `python -m bench` writes them
    for plot in ("bench/latency.png", "bench/scale.png", "bench/growth.png"):
        files.append(File(plot, src_dir=str(ROOT), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    source = page.file.src_uri
    if source in PUBLISHED.values():
        return markdown  # rewritten when generated
    return site_links(markdown, f"docs/{source}", source)


def on_pre_build(config: Any) -> None:
    problems = (alerts.problems()
                + [f"settings field without description: {f}" for f in settings.undocumented()]
                + chart.problems() + stale())
    if problems:
        raise PluginError("undocumented or stale:\n" + "\n".join(problems))
