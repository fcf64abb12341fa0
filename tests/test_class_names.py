"""One class per name across the package: a name says what a thing is, so two classes that
share one (two ``Decision``s, two ``ConfigError``s) make a reader ask which is meant."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import kustodian

PACKAGE = Path(kustodian.__file__).parent

# Duplicates the other streams of issue 31 are renaming (name -> where each is defined).
# Delete an entry once its duplicate is gone (the test fails until then), and this dict when
# it is empty.
BEING_RENAMED: dict[str, set[str]] = {}

_CYTHON_CLASS = re.compile(r"^\s*(?:cdef\s+)?class\s+([A-Za-z_]\w*)", re.MULTILINE)


def class_definitions() -> dict[str, set[str]]:
    """``class name -> {"module/path.py:line", ...}`` over every ``.py`` and ``.pyx`` source
    (nested classes included; ``.pyi`` stubs restate their module's classes, so not them)."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ClassDef):
                found[node.name].add(f"{where}:{node.lineno}")
    for path in sorted(PACKAGE.rglob("*.pyx")):
        where = path.relative_to(PACKAGE.parent).as_posix()
        text = path.read_text()
        for m in _CYTHON_CLASS.finditer(text):
            found[m[1]].add(f"{where}:{text.count(chr(10), 0, m.start()) + 1}")
    return found


def test_every_class_name_is_defined_once() -> None:
    defined = class_definitions()
    assert "ReservationDecision" in defined and "OrphanReason" in defined  # the walk sees the package
    twice = {name: sorted(places) for name, places in defined.items()
             if len(places) > 1 and name not in BEING_RENAMED}
    assert not twice, f"class names defined more than once: {twice}"


def test_the_renames_still_pending_are_still_duplicates() -> None:
    defined = class_definitions()
    done = sorted(name for name in BEING_RENAMED if len(defined.get(name, ())) < 2)
    assert not done, f"no longer duplicated: delete them from BEING_RENAMED: {done}"
