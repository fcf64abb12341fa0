"""The deletion rules a CLI command or the webhook starts with: built-in Rook rules plus the
admin's file, a missing or malformed file named by its flag in one line."""

from __future__ import annotations

from pathlib import Path

import yaml

from kustodian.errors import ConfigError, FieldProblem
from kustodian.policy.deletion import RuleError, RuleSet

__all__ = ["check_rules_file", "load_rules", "yaml_problem"]


def yaml_problem(exc: yaml.YAMLError) -> str:
    """``not valid YAML at line 3, column 2: <why>``: where the parser stopped, and why."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or "cannot parse"
    return f"not valid YAML{where}: {problem}"


def check_rules_file(path: str | None, flag: str) -> None:
    """``ConfigError`` naming ``flag`` when ``path`` cannot be read or is not YAML/JSON."""
    if not path:
        return
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError.at(f"{flag} {path}", (exc.strerror or str(exc)).lower()) from None
    except UnicodeDecodeError:
        raise ConfigError.at(f"{flag} {path}", "not a text file") from None
    try:
        yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError.at(f"{flag} {path}", yaml_problem(exc)) from None


def load_rules(path: str | None, flag: str = "--rules") -> RuleSet:
    from kustodian.webhook.main import load_deletion_rules

    check_rules_file(path, flag)
    try:
        return load_deletion_rules(path)
    except RuleError:
        raise  # rule errors name the file and the rule: rules.yaml[2].kind
    except ConfigError as exc:  # "<path>: expected a list of rules"
        raise ConfigError("", [FieldProblem(f"{flag} {p.path}", p.message) for p in exc.problems]) from None
