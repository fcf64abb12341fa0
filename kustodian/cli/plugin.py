"""``kubectl kustodian ...``: the same commands as a kubectl plugin.

kubectl runs any ``kubectl-<name>`` on the PATH for ``kubectl <name>`` (as ``kubectl rook-ceph``
is run).  The plugin is the ``kustodian`` command under another name: help, usage and error
lines say ``kubectl kustodian`` so that what a user reads is what they typed.

kubectl hands a plugin nothing but its own arguments and its environment: its global flags
(``--kubeconfig``, ``--context``, ``-n``) are not forwarded, and placed before the plugin's name
they are refused by kubectl itself.  ``$KUBECONFIG`` is inherited, and the plugin takes the same
flags as ``kustodian`` after its name (``kubectl kustodian report --context prod``).
"""

from __future__ import annotations

from collections.abc import Sequence

from kustodian.cli.main import main as kustodian_main

PROG = "kubectl kustodian"


def main(argv: Sequence[str] | None = None) -> int:
    return kustodian_main(argv, prog=PROG)


if __name__ == "__main__":
    raise SystemExit(main())
