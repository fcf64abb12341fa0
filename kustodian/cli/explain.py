"""``kustodian explain-delete``: which dependents block deleting an object.

Reads either the live cluster (one consistent list per kind, no watch) or a
directory of manifests (``--from DIR``, no cluster at all), then runs the same
policy function as the webhook.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kustodian.cli.guard import guard_installed
from kustodian.cli.manifests import read_manifests
from kustodian.cli.output import dump, print_rows, records
from kustodian.cli.progress import Progress
from kustodian.cli.rules import load_rules
from kustodian.cli.tree import print_tree, wants_tree
from kustodian.errors import EXIT_BLOCKED, EXIT_OK, ConfigError, NotFoundError
from kustodian.policy.deletion import ObjectRef, RuleSet, decide_delete, dependents_table
from kustodian.policy.deletion.verdict import Override, read_override
from kustodian.policy.store import ClusterView, ListView, kind_key
from kustodian.settings import ToolSettings, settings_from_args


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
    print_rows(header, rows)


def load_view(args: argparse.Namespace, rules: RuleSet) -> ClusterView:
    """The manifests of ``--from DIR`` or one consistent read of the live cluster."""
    if args.from_dir:
        manifests = read_manifests(Path(args.from_dir), args.object_namespace)
        manifests.warn(args.command)  # every file and document not used, one line each on stderr
        return view_from_manifests(manifests.objects, rules.indexers())
    from kustodian.cli.live_view import live_view

    return live_view(settings_from_args(ToolSettings, args), rules, Progress.of(args))


def override_line(override: Override, now: datetime) -> str:
    """How ``explain-delete`` shows the object's override: which, until when, whether it applies."""
    if not override.annotation:
        return f"override: none ({override.problem})" if override.problem else ""
    if override.until is None:
        return f"override: {override.shown()} (no deadline)"
    if override.applies(now):
        return f"override: {override.shown()} (applies for {override.until - now} more)"
    return f"override: {override.annotation}=true expired at {override.until.isoformat()}: no longer applies"


def explain_delete(args: argparse.Namespace) -> int:
    tree = wants_tree(args)  # with -o json|yaml: one line, before anything is read
    rules = load_rules(args.rules)
    known = rules.provider_kinds() | rules.dependent_kinds() | {"Namespace"}
    key = _resolve_kind(args.kind, known)
    if key not in known:
        guarded = ", ".join(sorted(k.split(".", 1)[0] for k in rules.provider_kinds()))
        raise ConfigError.at(f"KIND {args.kind}", "no deletion rule names this kind, so the deletion guard "
                             f"never blocks deleting one (guarded kinds: {guarded})")
    view = load_view(args, rules)
    kind_name = key.split(".", 1)[0]
    namespace = args.object_namespace
    provider = view.get(key, namespace, args.name)
    if provider is None and not args.from_dir and not view.has_kind(key):
        # a rule names it but the cluster has no such resource yet (its CRD is not installed)
        raise NotFoundError(f"{kind_name} {args.name} not found: this cluster does not serve {key} (no CRD "
                            "installed); the deletion guard guards it once it is served")
    if provider is None and args.from_dir and not view.has_kind(key):
        raise NotFoundError(f"{kind_name} {args.name} not found: the manifests of --from {args.from_dir} "
                            f"hold no {key} at all")
    if provider is None:
        where = f" in namespace {namespace}" if namespace else " (no -n NAMESPACE given)"
        raise NotFoundError(f"{kind_name} {args.name} not found{where}")
    now = datetime.now(UTC)
    decision = decide_delete(key, provider, view, rules, now=now)
    override = read_override(key, provider)
    rows = dependents_table(decision)
    # kinds a rule names that this cluster (or these manifests) does not have: not checked
    absent = sorted(k for k in rules.kinds_read(key) if not view.has_kind(k))
    code = EXIT_OK if decision.allowed else EXIT_BLOCKED
    guard = "" if args.from_dir else guard_installed(args, "this is what it would decide")[0]
    if args.output != "table":
        dump({"kind": key, "namespace": namespace, "name": args.name, "allowed": decision.allowed,
              "overridden": decision.overridden, "message": decision.message,
              "override": {"annotation": override.annotation or None,
                           "until": override.until.isoformat() if override.until else None,
                           "applies": override.applies(now), "problem": override.problem or None},
              "dependents": records(("kind", "namespace", "name"), rows), "notChecked": absent,
              **({"notes": [guard]} if guard else {})}, args.output)
        return code
    where = "in the manifests" if args.from_dir else "served by this cluster (no CRD)"
    unserved = f"note: not {where}, so not checked: {', '.join(absent)}" if absent else ""
    shown = override_line(override, now)
    if not rows:
        print(f"{kind_name} {args.name}: no dependents; deleting it would be allowed")
        if shown:
            print(shown)
        if unserved:
            print(unserved)
        if guard:
            print(guard)
        return code
    print(decision.message)
    if shown:
        print(shown)
    print()
    if tree:
        print_tree(ObjectRef(key, namespace or "", args.name), decision, view, rules, now)
    else:
        print_table(rows, ("KIND", "NAMESPACE", "NAME"))
    if unserved:
        print()
        print(unserved)
    if guard:
        print(guard)
    return code
