"""``kustodian report``: every protected object in the cluster and what protects it.

One consistent read of the live cluster (or ``--from DIR``), the built-in and admin rules,
and for each provider the very decision the webhook would make.  ``-o json|yaml`` for
scripts, a table for people.
"""

from __future__ import annotations

import argparse

from kustodian.cli.explain import load_view, print_table
from kustodian.cli.output import dump
from kustodian.cli.rules import load_rules
from kustodian.policy.deletion.message import short_kind
from kustodian.policy.deletion.report import protections


def report(args: argparse.Namespace) -> int:
    rules = load_rules(args.rules)
    view = load_view(args, rules)
    found = [p for p in protections(view, rules)
             if not args.object_namespace or p.provider.namespace == args.object_namespace]
    if args.output != "table":
        dump({"protected": [p.as_dict() for p in found]}, args.output)
        return 0
    if not found:
        print("no protected objects: every provider could be deleted now")
        return 0
    rows = []
    for p in found:
        summary = ", ".join(f"{plural}: {len(refs)}" for plural, refs in p.dependents.items())
        rows.append((f"{short_kind(p.provider.kind)}/{p.provider.name}", p.provider.namespace or "-",
                     summary + (" (override annotation: deletable)" if p.overridden else "")))
    print_table(rows, ("PROVIDER", "NAMESPACE", "PROTECTED BY"))
    return 0
