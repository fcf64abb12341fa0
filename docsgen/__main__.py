"""``python -m docsgen`` (``make docs``): write the committed reference pages into docs/ (the
configuration reference from the settings tree, the chart values from values.yaml's comments).
``--check``: write nothing, list the stale ones and exit 1 if any. ``python -m docsgen DIR``: write
every generated page (the architecture picture too) into DIR, for reading them without mkdocs."""

from __future__ import annotations

import sys
from pathlib import Path

from docsgen.hook import COMMITTED, DOCS, GENERATED, stale


def main(argv: list[str]) -> int:
    if argv[:1] == ["--check"]:
        problems = stale()
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    out = Path(argv[0]) if argv else DOCS
    pages = {**COMMITTED, **GENERATED} if argv else COMMITTED
    for path, render in pages.items():
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        text = render()
        if not target.is_file() or target.read_text() != text:
            target.write_text(text)
            print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
