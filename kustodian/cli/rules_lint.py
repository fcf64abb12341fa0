"""``kustodian rules lint FILE...``: every problem of deletion rules files, each with its path.

The same loader the webhook and the other commands use (``policy.deletion.load_rules``), so
what lints clean loads clean; but where a loader stops at the first bad file, lint reads every
file and prints every problem, one line each, like ``kubectl apply --dry-run``.

A FILE is a rules file (a list of rules, or a mapping with a ``rules`` list) or Helm values
(``deletionGuard.rules``).  ``--builtin`` lints the built-in Rook rules too; ``--cluster`` asks
discovery whether the groups the rules name serve their kinds.  Exit codes follow the other
questions the command answers: 0 clean, 1 problems found, 2 a file that cannot be read.

Notes (not problems): a kind of a CRD group not served by the cluster (its CRD is not installed
yet: the guard follows it once served), or, offline, not among the kinds Kustodian knows of a
CRD group it knows (say it with ``--cluster``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Set
from pathlib import Path
from typing import Any

import yaml

from kustodian.cli.rules import yaml_problem
from kustodian.errors import EXIT_BLOCKED, EXIT_OK, ConfigError, FieldProblem
from kustodian.policy.deletion import ROOK_RULES, RuleError, load_rules
from kustodian.policy.kinds import KNOWN_CRD_KINDS, known_kind, suggestions

__all__ = ["lint", "lint_data"]

_KNOWN_CRD_GROUPS = frozenset(k.group for k in KNOWN_CRD_KINDS)


def _rules_of(path: str) -> tuple[str, Any]:
    """(source prefix, the rules list) of one file; ``ConfigError`` when it cannot be read."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError.at(path, (exc.strerror or str(exc)).lower()) from None
    except UnicodeDecodeError:
        raise ConfigError.at(path, "not a text file") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError.at(path, yaml_problem(exc)) from None
    if data is None:
        return path, []
    if isinstance(data, dict) and "rules" in data:
        return path, data["rules"]
    guard = data.get("deletionGuard") if isinstance(data, dict) else None
    if isinstance(guard, dict):
        return f"{path}:deletionGuard.rules", guard.get("rules") or []
    return path, data


def _notes(source: str, data: list[Any],
           served: Mapping[str, Set[str]] | None) -> list[str]:
    """Kinds that load but protect nothing yet: not served, or not known offline."""
    notes: list[str] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            continue
        named = [("provider", item.get("provider")), ("dependent", item.get("dependent"))]
        skip = item.get("skipIf")
        if isinstance(skip, dict):
            named.append(("skipIf.kind", skip.get("kind")))
        for field, key in named:
            if not isinstance(key, str) or "." not in key:
                continue
            group = key.partition(".")[2]
            if served is not None:
                if group not in served:
                    notes.append(f"{source}[{i}].{field}: {key} is not served by this cluster (no CRD): "
                                 "not guarded until it is")
                elif key.partition(".")[0] not in served[group]:
                    notes.append(f"{source}[{i}].{field}: {key} is not served by the {group} group of this "
                                 "cluster (a newer CRD?): not guarded until it is")
            elif group in _KNOWN_CRD_GROUPS and known_kind(key) is None:
                close = suggestions(key)
                hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
                notes.append(f"{source}[{i}].{field}: {key} is not a kind Kustodian knows in {group}{hint}; "
                             "check it against the cluster with --cluster")
    return notes


def lint_data(data: Any, source: str, served: Mapping[str, Set[str]] | None = None
              ) -> tuple[list[FieldProblem], list[str]]:
    """(problems, notes) of one rules list."""
    try:
        load_rules(data, source=source, served=served)
    except RuleError as exc:
        return list(exc.problems), []
    return [], _notes(source, data, served)


def _served(args: argparse.Namespace, lists: list[Any]) -> dict[str, set[str]]:
    from kustodian.cli.cluster import connect
    from kustodian.kube.discovery import served_kinds
    from kustodian.settings import ToolSettings, settings_from_args

    groups: set[str] = set()
    for data in lists:
        for item in data if isinstance(data, list) else []:
            if not isinstance(item, dict):
                continue
            skip = item.get("skipIf")
            for key in (item.get("provider"), item.get("dependent"),
                        skip.get("kind") if isinstance(skip, dict) else None):
                if isinstance(key, str):
                    groups.add(key.partition(".")[2])
    client = connect(settings_from_args(ToolSettings, args).kube)
    try:
        return served_kinds(client, groups)
    finally:
        client.close()


def lint(args: argparse.Namespace) -> int:
    if not args.files and not args.builtin:
        raise ConfigError("name at least one rules FILE (or --builtin for the built-in rules)")
    sources = [_rules_of(path) for path in args.files]  # an unreadable file: exit 2 before any output
    if args.builtin:
        sources.insert(0, ("builtin", list(ROOK_RULES)))
    served = _served(args, [data for _, data in sources]) if args.cluster else None
    problems = 0
    for source, data in sources:
        found, notes = lint_data(data, source, served)
        for problem in found:
            print(f"{problem.path}: {problem.message}")
        for note in notes:
            print(f"note: {note}")
        problems += len(found)
        if not found:
            count = len(data) if isinstance(data, list) else 0
            print(f"{source}: {count} rule{'s' if count != 1 else ''}, no problems")
    return EXIT_BLOCKED if problems else EXIT_OK
