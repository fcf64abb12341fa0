"""A version's section of CHANGELOG.md (Keep a Changelog): the release notes a tag publishes.

``python -m release.changelog notes 0.2.0`` prints the body of ``## [0.2.0] - <date>`` (its
``###`` lists, without the heading and without the link references at the end of the file); the
release workflow publishes exactly that as the GitHub release's text. ``newest`` prints the name of
the newest section (``Unreleased`` until a release is cut). A version without a section, or with an
empty one, is an error (exit 1, one line): a release never goes out with no notes or with another
version's. ``cut 0.2.0`` makes the release commit's change: ``## [Unreleased]`` becomes
``## [0.2.0] - <today>`` (its entries untouched), a new empty ``## [Unreleased]`` with its three
lists goes above it, and the link references at the end follow.

Standard library only: the release workflow runs it with the runner's Python, before anything is
installed.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CHANGELOG", "ChangelogError", "Section", "notes", "sections"]

CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"
_HEADING = re.compile(r"^## \[(?P<name>[^\]]+)\](?:\s+-\s+(?P<date>\d{4}-\d{2}-\d{2}))?\s*$")
_LINK_REFERENCE = re.compile(r"^\[[^\]]+\]:\s+\S+")


class ChangelogError(Exception):
    """CHANGELOG.md has no usable section for the version asked for."""


@dataclass(frozen=True)
class Section:
    name: str  # "Unreleased" or a version
    date: str | None
    line: int  # of its heading
    body: str  # what follows the heading, up to the next section or the link references


def sections(text: str) -> list[Section]:
    """Every ``## [...]`` section, newest (topmost) first."""
    lines = text.splitlines()
    heads = [(n, m) for n, line in enumerate(lines) if (m := _HEADING.match(line))]
    out = []
    for k, (n, m) in enumerate(heads):
        end = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
        body = lines[n + 1 : end]
        while body and (not body[-1].strip() or _LINK_REFERENCE.match(body[-1])):
            body.pop()
        out.append(Section(m["name"], m["date"], n + 1, "\n".join(body).strip("\n") + "\n"))
    return out


def notes(version: str, text: str | None = None) -> str:
    """The release notes of ``version`` (``0.2.0``, or ``Unreleased``): its section's body."""
    text = CHANGELOG.read_text() if text is None else text
    found = [s for s in sections(text) if s.name == version.removeprefix("v")]
    if not found:
        names = ", ".join(s.name for s in sections(text)) or "none"
        raise ChangelogError(
            f"CHANGELOG.md has no section '## [{version.removeprefix('v')}]' (it has: {names})"
        )
    (section,) = found[:1]
    if not re.search(r"^\s*[-*] ", section.body, re.MULTILINE):
        raise ChangelogError(
            f"CHANGELOG.md: the section of {section.name} (line {section.line}) has no entry"
        )
    return section.body


UNRELEASED_LISTS = "### Changed\n\n### Added\n\n### Fixed\n"
_REPOSITORY = "https://github.com/kustodian/kustodian"


def cut(version: str, date: str, text: str) -> str:
    """``text`` with its Unreleased section released as ``version`` on ``date`` (YYYY-MM-DD)."""
    version = version.removeprefix("v")
    found = sections(text)
    if not found or found[0].name != "Unreleased":
        raise ChangelogError("CHANGELOG.md: the newest section is not '## [Unreleased]': nothing to cut")
    if any(s.name == version for s in found):
        raise ChangelogError(f"CHANGELOG.md already has a section for {version}")
    notes("Unreleased", text)  # refuses a release with no entry
    previous = next((s.name for s in found[1:]), None)
    lines = text.splitlines()
    head = found[0].line - 1
    lines[head : head + 1] = [
        "## [Unreleased]",
        "",
        *UNRELEASED_LISTS.splitlines(),
        "",
        f"## [{version}] - {date}",
    ]
    out = "\n".join(lines) + "\n"
    out = re.sub(
        r"^\[Unreleased\]: .*$",
        f"[Unreleased]: {_REPOSITORY}/compare/v{version}...HEAD\n"
        f"[{version}]: {_REPOSITORY}/"
        + (f"compare/{_ref(previous)}...v{version}" if previous else f"releases/tag/v{version}"),
        out,
        count=1,
        flags=re.MULTILINE,
    )
    return out


def _ref(version: str) -> str:
    """How the compare link names an earlier version: its tag (0.1.0 was never tagged: its commit)."""
    return "956b58b" if version == "0.1.0" else f"v{version}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m release.changelog", description=__doc__.split("\n")[0])
    parser.add_argument("--file", type=Path, default=CHANGELOG, help="the changelog (default: CHANGELOG.md)")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("notes", help="print a version's section (the release notes)")
    p.add_argument("version", help="X.Y.Z (a leading v is dropped: a tag works) or Unreleased")
    sub.add_parser("newest", help="print the newest section's name")
    p = sub.add_parser("cut", help="release the Unreleased section as VERSION (rewrites the file)")
    p.add_argument("version", help="X.Y.Z")
    p.add_argument("--date", default=None, help="YYYY-MM-DD (default: today, UTC)")
    args = parser.parse_args(argv)
    text = args.file.read_text()
    try:
        if args.command == "cut":
            from datetime import UTC, datetime

            date = args.date or datetime.now(UTC).strftime("%Y-%m-%d")
            args.file.write_text(cut(args.version, date, text))
            sys.stdout.write(f"{args.file}: Unreleased is now {args.version} - {date}\n")
        elif args.command == "newest":
            found = sections(text)
            if not found:
                raise ChangelogError(f"{args.file}: no '## [...]' section")
            sys.stdout.write(found[0].name + "\n")
        else:
            sys.stdout.write(notes(args.version, text))
    except ChangelogError as exc:
        sys.stderr.write(f"release.changelog: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
