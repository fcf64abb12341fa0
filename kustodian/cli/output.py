"""``-o table|json|yaml``: one flag and one renderer for every command that reads.

A table is for people (aligned columns, ``-`` for empty); JSON and YAML are for scripts and
carry the same rows as objects, keys in Kubernetes' camelCase (``NEXT RUN`` -> ``nextRun``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import yaml

__all__ = ["FORMATS", "add_output_flag", "dump", "print_rows", "records"]

FORMATS = ("table", "json", "yaml")


def add_output_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", choices=FORMATS, default="table",
                        help="Output format: table (default), json or yaml")


def dump(document: Any, fmt: str) -> None:
    """``document`` as JSON or YAML on stdout."""
    if fmt == "json":
        json.dump(document, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        yaml.safe_dump(document, sys.stdout, sort_keys=False)


def print_rows(header: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    table = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _key(column: str) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", column) if w]
    return words[0].lower() + "".join(w.capitalize() for w in words[1:]) if words else column


def records(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """Table rows as objects keyed by the camelCased column names."""
    keys = [_key(h) for h in header]
    return [dict(zip(keys, row, strict=True)) for row in rows]
