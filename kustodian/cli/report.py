"""``kustodian report``: every protected object in the cluster and what protects it.

One consistent read of the live cluster (or ``--from DIR``), the built-in and admin rules,
and for each provider the very decision the webhook would make.  ``-o json|yaml`` for
scripts, a table for people.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from kustodian.cli.explain import iter_manifests, print_table, view_from_manifests
from kustodian.policy.deletion.message import short_kind
from kustodian.policy.deletion.report import protections
from kustodian.policy.store import ClusterView
from kustodian.settings import ToolSettings, settings_from_args


def report(args: argparse.Namespace) -> int:
    from kustodian.webhook.main import load_deletion_rules

    rules = load_deletion_rules(args.rules)
    view: ClusterView
    if args.from_dir:
        view = view_from_manifests(iter_manifests(Path(args.from_dir)), rules.indexers())
    else:
        from kustodian.cli.live_view import live_view

        view = live_view(settings_from_args(ToolSettings, args), rules)
    found = protections(view, rules)
    if args.output == "json":
        json.dump({"protected": [p.as_dict() for p in found]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if args.output == "yaml":
        yaml.safe_dump({"protected": [p.as_dict() for p in found]}, sys.stdout, sort_keys=False)
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
