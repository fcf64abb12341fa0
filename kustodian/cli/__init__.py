"""The ``kustodian`` command: the outermost layer, the only one that may import every other."""

from kustodian.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
