"""``kubectl kustodian ...``: the same commands as a kubectl plugin.

kubectl runs any ``kubectl-<name>`` on the PATH for ``kubectl <name>`` (as ``kubectl rook-ceph``
is run).  The plugin is the ``kustodian`` command under another name: help, usage and error
lines say ``kubectl kustodian`` so that what a user reads is what they typed.

kubectl hands a plugin nothing but its own arguments and its environment: its global flags
(``--kubeconfig``, ``--context``, ``-n``) are not forwarded, and placed before the plugin's name
they are refused by kubectl itself.  ``$KUBECONFIG`` is inherited, and the plugin takes the same
flags as ``kustodian`` after its name (``kubectl kustodian report --context prod``).
Completion of ``kubectl kustodian <TAB>`` goes through ``kubectl_complete-kustodian``
(:func:`complete`), kubectl's convention.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from kustodian.cli.main import build_parser
from kustodian.cli.main import main as kustodian_main

PROG = "kubectl kustodian"


def main(argv: Sequence[str] | None = None) -> int:
    return kustodian_main(argv, prog=PROG)


def complete(argv: Sequence[str] | None = None) -> int:
    """``kubectl_complete-kustodian WORDS...``: kubectl (1.26 and later) runs it on <TAB> after
    ``kubectl kustodian``, with the words typed after the plugin's name, the last one being
    completed, and reads cobra's answer: one candidate a line, then ``:<directive>``.  It never
    fails aloud: whatever goes wrong, nothing is offered."""
    from kustodian.cli.completion import DIRECTIVE_NO_FILE, complete_words

    words = list(sys.argv[1:] if argv is None else argv)
    try:
        found, directive = complete_words(build_parser(PROG), words)
    except Exception:  # a completion never speaks
        found, directive = [], DIRECTIVE_NO_FILE
    sys.stdout.write("".join(f"{w}\n" for w in found) + f":{directive}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
