"""``kustodian explain-delete``: which dependents block deleting an object.

Reads either the live cluster (one consistent list per kind, no watch) or a
directory of manifests (``--from DIR``, no cluster at all), then runs the same
policy function as the webhook.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from kustodian.policy.deletion import decide_delete, dependents_table
from kustodian.policy.store import ClusterView, ListView, kind_key
from kustodian.settings import ToolSettings, settings_from_args


def iter_manifests(directory: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(directory.rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict):
                continue
            if doc.get("kind", "").endswith("List") and isinstance(doc.get("items"), list):
                yield from (d for d in doc["items"] if isinstance(d, dict))
            else:
                yield doc


def view_from_manifests(docs: Iterable[dict[str, Any]], indexers: Any) -> ListView:
    objects: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        objects.setdefault(kind_key(str(doc.get("apiVersion", "")), str(doc.get("kind", ""))), []).append(doc)
    return ListView(objects, indexers)


def _resolve_kind(kind: str, known: Iterable[str]) -> str:
    if "." in kind:
        return kind
    matches = [k for k in known if k.split(".", 1)[0].lower() == kind.lower()]
    return matches[0] if matches else kind


def print_table(rows: list[tuple[str, str, str]], header: tuple[str, str, str]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    for row in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def explain_delete(args: argparse.Namespace) -> int:
    from kustodian.webhook.main import load_deletion_rules

    rules = load_deletion_rules(args.rules)
    key = _resolve_kind(args.kind, rules.provider_kinds() | rules.dependent_kinds() | {"Namespace"})
    view: ClusterView
    if args.from_dir:
        view = view_from_manifests(iter_manifests(Path(args.from_dir)), rules.indexers())
    else:
        from kustodian.cli.live_view import live_view

        view = live_view(settings_from_args(ToolSettings, args), rules)
    kind_name = key.split(".", 1)[0]
    provider = view.get(key, args.object_namespace, args.name)
    if provider is None:
        sys.stderr.write(f"{kind_name} {args.object_namespace + '/' if args.object_namespace else ''}"
                         f"{args.name} not found\n")
        return 1
    decision = decide_delete(key, provider, view, rules)
    rows = dependents_table(decision)
    # kinds a rule names that this cluster (or these manifests) does not have: not checked
    absent = sorted(k for k in rules.kinds_read(key) if not view.has_kind(k))
    where = "in the manifests" if args.from_dir else "served by this cluster (no CRD)"
    unserved = f"note: not {where}, so not checked: {', '.join(absent)}" if absent else ""
    if not rows:
        print(f"{kind_name} {args.name}: no dependents; deleting it would be allowed")
        if unserved:
            print(unserved)
        return 0
    print(decision.message)
    print()
    print_table(rows, ("KIND", "NAMESPACE", "NAME"))
    if unserved:
        print()
        print(unserved)
    return 0 if decision.allowed else 1
