"""``kustodian rules test DIR``: examples of deletion rules with objects that must be refused or
allowed, as ``kyverno test`` does for policies.

Every ``kustodian-test.yaml`` under DIR is one test::

    rules: rules.yaml             # optional: the admin's rules file (the built-in rules always apply)
    resources: [cluster.yaml]     # the objects the cluster holds (YAML/JSON, multi-document, Lists)
    results:
      - kind: StorageClass        # a kind key, or a kind the rules name without its group
        name: rook-ceph-block
        namespace: ""             # optional
        result: refused           # or: allowed

Paths are relative to the test file.  The decision is the webhook's own (``decide_delete``) over
the resources, exactly as ``explain-delete --from`` makes it.  One line per result (``PASS``/
``FAIL``); exit 0 when all pass, 1 when one fails, 2 for a test file that cannot be used.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

from kustodian.cli.explain import view_from_manifests
from kustodian.cli.rules import load_rules, yaml_problem
from kustodian.errors import EXIT_BLOCKED, EXIT_OK, ConfigError, FieldProblem
from kustodian.policy.deletion import decide_delete

__all__ = ["TEST_FILE", "rules_test"]

TEST_FILE = "kustodian-test.yaml"
_RESULTS = ("refused", "allowed")


def _yaml_docs(path: Path, where: str) -> list[Any]:
    try:
        return list(yaml.safe_load_all(path.read_text()))
    except OSError as exc:
        raise ConfigError.at(where, (exc.strerror or str(exc)).lower()) from None
    except UnicodeDecodeError:
        raise ConfigError.at(where, "not a text file") from None
    except yaml.YAMLError as exc:
        raise ConfigError.at(where, yaml_problem(exc)) from None


def _objects(docs: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            out += [d for d in doc["items"] if isinstance(d, dict)]
        else:
            out.append(doc)
    return out


def _resolve(kind: str, known: set[str]) -> str:
    if "." in kind or kind in known:
        return kind
    matches = sorted(k for k in known if k.split(".", 1)[0] == kind)
    return matches[0] if len(matches) == 1 else kind


def _run_one(test: Path) -> tuple[list[str], int]:
    """The result lines of one test file and how many failed."""
    docs = _yaml_docs(test, str(test))
    spec = docs[0] if len(docs) == 1 else None
    if not isinstance(spec, dict):
        raise ConfigError.at(str(test), "must be one mapping with rules, resources and results")
    problems: list[FieldProblem] = []
    unknown = sorted(set(spec) - {"rules", "resources", "results"})
    problems += [FieldProblem(f"{test}: {key}", "unknown field") for key in unknown]
    resources = spec.get("resources") or []
    results = spec.get("results")
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        problems.append(FieldProblem(f"{test}: resources", "must be a list of file paths"))
    if not isinstance(results, list) or not results:
        problems.append(FieldProblem(f"{test}: results", "must be a non-empty list"))
    if problems:
        raise ConfigError("", problems)
    assert isinstance(results, list)
    rules_path = spec.get("rules")
    if rules_path is not None and not isinstance(rules_path, str):
        raise ConfigError.at(f"{test}: rules", "must be a file path")
    rules = load_rules(str(test.parent / rules_path) if rules_path else None, flag=f"{test}: rules")
    objects: list[dict[str, Any]] = []
    for i, name in enumerate(resources):
        objects += _objects(_yaml_docs(test.parent / name, f"{test}: resources[{i}] {name}"))
    view = view_from_manifests(objects, rules.indexers())
    known = set(rules.provider_kinds()) | {"Namespace"}
    lines: list[str] = []
    failed = 0
    for i, item in enumerate(results):
        where = f"{test}: results[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("kind"), str) or not isinstance(
                item.get("name"), str):
            raise ConfigError.at(where, "needs kind and name")
        expected = item.get("result")
        if expected not in _RESULTS:
            raise ConfigError.at(f"{where}.result", f"must be one of {', '.join(_RESULTS)}, not {expected!r}")
        key = _resolve(item["kind"], known)
        namespace = str(item.get("namespace") or "")
        label = f"{item['kind']} {namespace + '/' if namespace else ''}{item['name']}"
        provider = view.get(key, namespace, item["name"])
        if provider is None:
            raise ConfigError.at(where, f"{label} is not among the resources")
        decision = decide_delete(key, provider, view, rules)
        got = "allowed" if decision.allowed else "refused"
        if got == expected:
            lines.append(f"PASS {label}: {got}")
        else:
            failed += 1
            why = f": {decision.message}" if decision.message else ""
            lines.append(f"FAIL {label}: expected {expected}, got {got}{why}")
    return lines, failed


def rules_test(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    if directory.is_file():
        tests = [directory]
    elif directory.is_dir():
        tests = sorted(directory.rglob(TEST_FILE))
    else:
        raise ConfigError.at(f"DIR {args.dir}", "no such directory")
    if not tests:
        raise ConfigError.at(f"DIR {args.dir}", f"holds no {TEST_FILE}")
    failed = 0
    total = 0
    for test in tests:
        lines, bad = _run_one(test)
        for line in lines:
            print(line)
        failed += bad
        total += len(lines)
    print(f"{total - failed} passed, {failed} failed")
    return EXIT_BLOCKED if failed else EXIT_OK
