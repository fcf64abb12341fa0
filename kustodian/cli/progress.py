"""Progress on stderr for commands that may take a while (reading a big cluster, issuing keys).

Shown when stderr is a terminal, or always with ``--progress``; never with ``--no-progress``.
On a terminal the line is rewritten in place and cleared when done, so stdout (a table, JSON)
stays clean for pipes either way.
"""

from __future__ import annotations

import argparse
import sys
from types import TracebackType
from typing import TextIO

__all__ = ["Progress", "add_progress_flag"]


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="Show progress on stderr (default: only when stderr is a terminal)")


class Progress:
    def __init__(self, enabled: bool | None, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.enabled = self.tty if enabled is None else enabled
        self._shown = False

    @classmethod
    def of(cls, args: argparse.Namespace) -> Progress:
        return cls(getattr(args, "progress", None))

    def step(self, message: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write(f"\r\033[K{message}")
        else:
            self.stream.write(f"{message}\n")
        self.stream.flush()
        self._shown = True

    def done(self) -> None:
        if self.enabled and self.tty and self._shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
        self._shown = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.done()
