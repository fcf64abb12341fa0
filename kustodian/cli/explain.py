"""``kustodian explain-delete``: which dependents block deleting an object.

Reads either the live cluster (one consistent list per kind, no watch) or a
directory of manifests (``--from DIR``, no cluster at all), then runs the same
policy function as the webhook.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kustodian.cli.backstop import BackstopStatus, backstop_status
from kustodian.cli.cluster import context_namespace
from kustodian.cli.guard import guard_installed
from kustodian.cli.manifests import read_manifests
from kustodian.cli.output import dump, print_names, print_rows
from kustodian.cli.progress import Progress
from kustodian.cli.rules import load_rules
from kustodian.cli.tree import print_tree, wants_tree
from kustodian.errors import EXIT_BLOCKED, EXIT_OK, ConfigError, NotFoundError
from kustodian.kube.view import CacheView
from kustodian.policy.deletion import (
    ObjectRef,
    Override,
    RuleSet,
    decide_delete,
    dependents_table,
    namespace_key,
    provider_dict,
    read_override,
    record_key,
)
from kustodian.policy.kinds import (
    BUILTIN_GROUPS,
    BUILTIN_KINDS,
    KNOWN_CRD_KINDS,
    KnownKind,
    close_kinds,
    known_kind,
    match_kind,
)
from kustodian.policy.store import ClusterView, ListView, kind_key
from kustodian.settings import ToolSettings, settings_from_args


def view_from_manifests(docs: Iterable[dict[str, Any]], indexers: Any) -> ListView:
    objects: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        objects.setdefault(kind_key(str(doc.get("apiVersion", "")), str(doc.get("kind", ""))), []).append(doc)
    return ListView(objects, indexers)


def _kind_candidates(keys: Iterable[str], view: ClusterView | None = None) -> list[KnownKind]:
    """The kinds ``keys`` name, with the resources and short names kubectl accepts for them: from the
    offline table, else from discovery (a live view's resources), else the kind's own name only.
    Core and built-in groups first, so ``nodes`` is the core Node as in kubectl."""
    caches = view.caches if isinstance(view, CacheView) else {}
    out: list[KnownKind] = []
    for key in keys:
        known = known_kind(key)
        if known is None and key in caches:
            res = caches[key].resource
            known = KnownKind(res.group, res.kind, res.plural, res.namespaced, res.short_names)
        if known is None:
            kind, _, group = key.partition(".")
            known = KnownKind(group, kind, "", True)
        out.append(known)
    return sorted(out, key=lambda k: (k.group not in BUILTIN_GROUPS, k.group, k.kind))


def split_type_name(text: str, name: str | None) -> tuple[str, str]:
    """kubectl's ``TYPE NAME`` or ``TYPE/NAME`` (not both, not neither), as ``(type, name)``."""
    kind, slash, inline = text.partition("/")
    if slash and name:
        raise ConfigError.at(f"KIND {text} {name}", "give the object as TYPE NAME or TYPE/NAME, not both")
    if slash and not (kind and inline):
        raise ConfigError.at(f"KIND {text}", "expected TYPE/NAME, e.g. CephBlockPool/replicapool")
    if not slash and not name:
        raise ConfigError.at(f"KIND {text}", "no object named: give TYPE NAME or TYPE/NAME "
                             f"(e.g. {text} replicapool or {text}/replicapool)")
    return kind, inline or str(name)


def _no_such_kind(text: str, candidates: list[KnownKind], guarded: Iterable[str]) -> ConfigError:
    everything = [*BUILTIN_KINDS, *KNOWN_CRD_KINDS]
    listed = ", ".join(sorted(k.split(".", 1)[0] for k in guarded))
    known = match_kind(text, everything)
    if known is not None:  # a real kind, but no rule guards it
        return ConfigError.at(f"KIND {text}", f"no deletion rule names {known.kind}, so the deletion guard "
                              f"never blocks deleting one (guarded kinds: {listed})")
    close = close_kinds(text, candidates) or close_kinds(text, everything)
    if close:
        meant = " or ".join(k.kind if k in candidates else k.key for k in close)
        return ConfigError.at(f"KIND {text}", f"no such kind (did you mean {meant}?)")
    return ConfigError.at(f"KIND {text}", "no deletion rule names this kind, so the deletion guard never "
                          f"blocks deleting one (guarded kinds: {listed})")


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


def backstop_lines(backstop: BackstopStatus | None, guard_installed: bool | None, kind: KnownKind,
                   namespace: str, name: str) -> list[str]:
    """The backstop's line, and whether its record lists this object (nothing when neither the
    guard nor the backstop is installed: the guard's note says nothing is refused)."""
    if backstop is None or (backstop.installed is False and guard_installed is False):
        return []
    lines = [backstop.line()]
    if backstop.installed and backstop.record is not None and not backstop.missing:
        recorded = backstop.protects(_record_key(kind, namespace, name))
        lines.append(f"deletion backstop: its record lists this {kind.kind} with {recorded} dependents"
                     if recorded else f"deletion backstop: its record does not list this {kind.kind} (while "
                     "no webhook replica answers, the policy lets its DELETE through)")
    return lines


def _record_key(kind: KnownKind, namespace: str, name: str) -> str | None:
    if kind.key == "Namespace":
        return namespace_key(name)
    return record_key(kind.group, kind.plural, namespace, name) if kind.plural else None


def _namespaced(kind: KnownKind, view: ClusterView) -> bool | None:
    """Whether objects of ``kind`` live in a namespace; None when neither the table, discovery nor
    the manifests tell (an admin's CRD read from --from with no object of it)."""
    if known_kind(kind.key) is not None:
        return kind.namespaced
    if isinstance(view, CacheView) and kind.key in view.caches:
        return view.caches[kind.key].resource.namespaced
    objects = view.list(kind.key) if view.has_kind(kind.key) else []
    if objects:
        return any((o.get("metadata") or {}).get("namespace") for o in objects)
    return None


def explain_delete(args: argparse.Namespace) -> int:
    tree = wants_tree(args)  # with -o json|yaml: one line, before anything is read
    rules = load_rules(args.rules)
    text, name = split_type_name(args.kind, args.name)
    known = rules.provider_kinds() | rules.dependent_kinds() | {"Namespace"}
    candidates = _kind_candidates(known)
    found = match_kind(text, candidates)
    view: ClusterView | None = None
    if found is None and not args.from_dir:  # discovery may know the resource or short name of an admin's CRD
        view = load_view(args, rules)
        candidates = _kind_candidates(known, view)
        found = match_kind(text, candidates)
    if found is None:
        raise _no_such_kind(text, candidates, rules.provider_kinds())
    key = found.key
    view = view or load_view(args, rules)
    kind_name = found.kind
    scoped = _namespaced(found, view)
    given = args.object_namespace
    if scoped is False:
        namespace = ""  # kubectl ignores -n for a cluster-scoped kind
    else:
        namespace = given or context_namespace(settings_from_args(ToolSettings, args).kube)
    provider = view.get(key, namespace, name)
    if provider is None and scoped is None and not given:
        namespace = ""
        provider = view.get(key, namespace, name)
    if provider is None and not args.from_dir and not view.has_kind(key):
        # a rule names it but the cluster has no such resource yet (its CRD is not installed)
        raise NotFoundError(f"{kind_name} {name} not found: this cluster does not serve {key} (no CRD "
                            "installed); the deletion guard guards it once it is served")
    if provider is None and args.from_dir and not view.has_kind(key):
        raise NotFoundError(f"{kind_name} {name} not found: the manifests of --from {args.from_dir} "
                            f"hold no {key} at all")
    if provider is None:
        where = f" in namespace {namespace}" if namespace else ""
        elsewhere = sorted({str((o.get("metadata") or {}).get("namespace") or "") for o in view.list(key)
                            if (o.get("metadata") or {}).get("name") == name} - {"", namespace})
        if elsewhere:  # the likely mistake: say where it is
            where += f" (there is one in namespace {' and '.join(elsewhere)}: pass -n {elsewhere[0]})"
        elif namespace and not given:
            where += " (the kubeconfig context's namespace; pass -n NAMESPACE)"
        raise NotFoundError(f"{kind_name} {name} not found{where}")
    now = datetime.now(UTC)
    decision = decide_delete(key, provider, view, rules, now=now, question=True)
    override = read_override(key, provider)
    rows = dependents_table(decision)
    # kinds a rule names that this cluster (or these manifests) does not have: not checked
    absent = sorted(k for k in rules.kinds_read(key) if not view.has_kind(k))
    code = EXIT_OK if decision.allowed else EXIT_BLOCKED
    guard, installed = ("", None) if args.from_dir else guard_installed(args, "this is what it would decide")
    backstop = None if args.from_dir else backstop_status(args, now)
    if args.output == "name":  # what blocks the delete, as kubectl names objects
        named = print_names((ref.kind, ref.namespace, ref.name)
                            for refs in decision.dependents.values() for ref in refs)
        if not named:  # the reason on stderr, as kubectl's "No resources found"
            print(f"{kind_name} {name}: no dependents; deleting it would be allowed", file=sys.stderr)
        return code
    if args.output != "table":
        ref = ObjectRef(key, namespace, name)
        document = provider_dict(ref, decision.dependents, allowed=decision.allowed,
                                 overridden=decision.overridden, message=decision.message)
        document["override"] = {"annotation": override.annotation or None,
                                "until": override.until.isoformat() if override.until else None,
                                "applies": override.applies(now), "problem": override.problem or None}
        document["notChecked"] = absent
        if backstop is not None:
            recorded = backstop.protects(_record_key(found, namespace, name))
            document["backstop"] = {**backstop.as_dict(),
                                    "recorded": int(recorded) if recorded and recorded.isdigit() else None}
        if guard:
            document["notes"] = [guard]
        dump(document, args.output)
        return code
    where = "in the manifests" if args.from_dir else "served by this cluster (no CRD)"
    unserved = f"note: not {where}, so not checked: {', '.join(absent)}" if absent else ""
    shown = override_line(override, now)
    backstopped = backstop_lines(backstop, installed, found, namespace, name)
    if not rows:
        print(f"{kind_name} {name}: no dependents; deleting it would be allowed")
        if shown:
            print(shown)
        if unserved:
            print(unserved)
        for line in backstopped:
            print(line)
        if guard:
            print(guard)
        return code
    print(decision.message)
    if shown:
        print(shown)
    print()
    if tree:
        print_tree(ObjectRef(key, namespace or "", name), decision, view, rules, now)
    else:
        print_table(rows, ("KIND", "NAMESPACE", "NAME"))
    if unserved:
        print()
        print(unserved)
    for line in backstopped:
        print(line)
    if guard:
        print(guard)
    return code
