"""Every link of the README resolves where the README is read: in the repository tree (GitHub, a
clone) and, for a page of the docs, on the site too.

Links are read by a Markdown parser (markdown-it-py, CommonMark), not by a pattern, so a link in
a code span is not one and a reference-style link is. For each relative link:

- the file exists in the repository (a reference page only on the built site would 404 here);
- its ``#anchor``, if any, is a heading of that file, slugged as GitHub slugs it;
- a target under docs/ is a page of the site: in ``mkdocs.yml``'s nav (the site has no page for a
  Markdown file left out of it).

Links to other sites are listed, not fetched (no network here).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def links(markdown: str) -> list[tuple[int, str]]:
    """(line, href) of every link and image of a Markdown text."""
    out: list[tuple[int, str]] = []
    for token in MarkdownIt("commonmark").parse(markdown):
        for child in token.children or []:
            href = child.attrGet("href") or child.attrGet("src")
            if child.type in ("link_open", "image") and isinstance(href, str):
                out.append(((token.map[0] + 1) if token.map else 0, href))
    return out


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, code and link markup dropped, punctuation but
    ``-`` and ``_`` removed, spaces to ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    out: set[str] = set()
    in_fence = False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and (m := re.match(r"^#{1,6}\s+(?P<text>.+?)\s*#*$", line)):
            slug = github_slug(m["text"])
            n = 1
            while slug in out:  # GitHub numbers repeated headings: -1, -2, ...
                slug = f"{github_slug(m['text'])}-{n}"
                n += 1
            out.add(slug)
    return out


def _nav_pages(nav: Any) -> set[str]:
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, list):
        return {page for item in nav for page in _nav_pages(item)}
    if isinstance(nav, dict):
        return {page for value in nav.values() for page in _nav_pages(value)}
    return set()


def site_pages() -> set[str]:
    """The Markdown files of docs/ the site has a page for (mkdocs.yml's nav)."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())  # plain YAML: no !!python tags in it
    return {f"docs/{page}" for page in _nav_pages(config["nav"])}


def link_problem(source: Path, href: str, pages: set[str]) -> str | None:
    """Why ``href`` (in ``source``) does not resolve in the repository, or None."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc:
        return None  # another site: listed by the test, not fetched
    path = unquote(parts.path)
    target = (source.parent / path).resolve() if path else source
    try:
        relative = target.relative_to(REPO).as_posix()
    except ValueError:
        return f"{href}: outside the repository"
    if not target.exists():
        return f"{href}: no {relative} in the repository"
    if parts.fragment and target.suffix == ".md" and parts.fragment not in anchors(target):
        return f"{href}: {relative} has no heading #{parts.fragment}"
    if relative.startswith("docs/") and target.suffix == ".md" and relative not in pages:
        return f"{href}: {relative} is not a page of the site (not in mkdocs.yml's nav)"
    return None


def test_every_readme_link_resolves_in_the_repository_and_on_the_site() -> None:
    found = links(README.read_text())
    pages = site_pages()
    problems = [f"README.md:{line}: {why}" for line, href in found if (why := link_problem(README, href, pages))]
    assert problems == []
    local = [href for _, href in found if not urlsplit(href).scheme]
    assert len(local) >= 15, local  # the README's links were read, not skipped
    # the two reference pages that once existed only on the built site
    assert {"docs/reference/chart-values.md", "docs/reference/configuration.md"} <= set(local)


@pytest.mark.parametrize(("markdown", "expected"), [
    ("Every value: [Chart values](docs/reference/chart-valuez.md).\n", "no docs/reference/chart-valuez.md"),
    ("[Upgrades](docs/operations.md#upgradez)\n", "has no heading #upgradez"),
    ("[Old notes](docs/notes.md)\n", "no docs/notes.md"),
    ("[x][ref]\n\n[ref]: CHANGELOG.md#nothing-here\n", "has no heading #nothing-here"),
], ids=["missing-file", "missing-anchor", "page-not-there", "reference-style-link"])
def test_a_broken_readme_link_is_caught(markdown: str, expected: str) -> None:
    problems = [why for _, href in links(markdown) if (why := link_problem(README, href, site_pages()))]
    assert any(expected in p for p in problems), problems


def test_a_docs_file_left_out_of_the_site_is_caught() -> None:
    """A Markdown file under docs/ that the nav leaves out resolves on GitHub but not on the site."""
    assert link_problem(README, "docs/index.md", {"docs/getting-started.md"}) == (
        "docs/index.md: docs/index.md is not a page of the site (not in mkdocs.yml's nav)")
    assert link_problem(README, "docs/index.md", site_pages()) is None


def test_github_slugs() -> None:
    assert github_slug("What is guarded: the built-in rules") == "what-is-guarded-the-built-in-rules"
    assert github_slug("1. Install in `warn` mode") == "1-install-in-warn-mode"
    assert github_slug("Renamed values (deprecated, removed in the next release)") == (
        "renamed-values-deprecated-removed-in-the-next-release")
