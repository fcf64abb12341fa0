"""``python -m docsgen DIR``: write the generated reference pages into DIR (default: print the
names and sizes only), for reading them without mkdocs."""

from __future__ import annotations

import sys
from pathlib import Path

from docsgen.hook import GENERATED


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else None
    for path, render in GENERATED.items():
        text = render()
        if out is None:
            print(f"{path}: {len(text)} characters")
            continue
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
