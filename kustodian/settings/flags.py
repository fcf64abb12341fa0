"""Flags generated from a command's settings tree, and settings errors that name them.

Every field of every group becomes ``--<group>-<field>`` (``--node-cleanup-delay``,
``--capacity-sequential-lvg``), with the field's description, its real default (durations in
Go form: ``1m0s``) and its env variable in the help.  A bool is ``--x/--no-x``; a group's
``enabled`` switch is ``--<group>/--no-<group>``; a list flag may be repeated and each value may
be comma-separated (``--a x --a y,z`` -> ``[x, y, z]``).  A command's ``flag_aliases`` renames
or hides single flags (``kustodian node-cleanup`` takes upstream's names).

Only flags the user gave reach the model, as init arguments, which rank above ``KUSTODIAN_*``
variables: flags override env, env overrides defaults.  A validation error becomes a
``ConfigError`` with one ``FieldProblem`` per defect, its path naming the flag and the env
variable (``--node-cleanup-delay / KUSTODIAN_NODE_CLEANUP__DELAY``).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, TypeVar, get_origin

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from kustodian.errors import ConfigError, FieldProblem
from kustodian.settings.commands import (
    ControllersSettings,
    NodeAgentSettings,
    NodeCleanupSettings,
    Settings,
    ToolSettings,
    WebhookSettings,
)
from kustodian.settings.common import Group
from kustodian.settings.types import format_go_duration

__all__ = [
    "ENV_PREFIX",
    "NOT_SETTINGS",
    "Flag",
    "add_settings_flags",
    "env_for",
    "flag_table",
    "flags_for",
    "idle_problems",
    "load_settings",
    "problems_of",
    "settings_from_args",
    "unknown_env",
]

S = TypeVar("S", bound=Settings)

ENV_PREFIX = "KUSTODIAN_"
INVALID = "invalid settings, refusing to start"
# KUSTODIAN_* variables that are not settings (the test kit and CI read them; setup.py reads
# KUSTODIAN_BUILD_COMMIT at build time)
NOT_SETTINGS = ("KUSTODIAN_KTS_", "KUSTODIAN_UPSTREAM_", "KUSTODIAN_TOOLS_", "KUSTODIAN_TEST_",
                "KUSTODIAN_REQUIRE_", "KUSTODIAN_BUILD_")
# Kubernetes' Docker-link variables for a Service named kustodian[-...] (KUSTODIAN_PORT=tcp://...,
# KUSTODIAN_SERVICE_HOST): not settings, and never spelled with the groups' double underscore
_SERVICE_LINK = re.compile(r"[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_\d+_(TCP|UDP|SCTP)"
                           r"(_(PROTO|PORT|ADDR))?)?)")
_REQUIRED: Any = object()
_DEST = "settings:"


@dataclass(frozen=True)
class Flag:
    """One field of one group, as the command line and the environment see it."""

    group: str
    field: str
    flag: str | None  # None: no flag for this command (env only)
    env: str
    info: FieldInfo
    default: Any  # the command's effective default, or _REQUIRED
    kind: Literal["bool", "list", "value"]

    @property
    def dest(self) -> str:
        return f"{_DEST}{self.group}.{self.field}"

    @property
    def default_text(self) -> str | None:
        """What an unset field stands for, in words (``json_schema_extra``'s ``default_text``):
        ``--context`` unset means the kubeconfig's current-context, which "unset" would not say."""
        extra = self.info.json_schema_extra
        text = extra.get("default_text") if isinstance(extra, dict) else None
        return str(text) if text else None

    @property
    def where(self) -> str:
        return f"{self.flag} / {self.env}" if self.flag else self.env


def _flag_name(group: str, group_cls: type[Group], field: str, kind: str) -> str:
    prefix = group_cls.flag_prefix if group_cls.flag_prefix is not None else group.replace("_", "-")
    if field == "enabled" and kind == "bool" and prefix:
        return f"--{prefix}"
    return "--" + "-".join(part for part in (prefix, field.replace("_", "-")) if part)


def _default(info: FieldInfo, override: Mapping[str, Any], field: str) -> Any:
    if field in override:
        return override[field]
    if info.default is not PydanticUndefined:
        return info.default
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return _REQUIRED


def flag_table(model: type[Settings]) -> list[Flag]:
    """Every field of ``model``'s groups, in declaration order."""
    table: list[Flag] = []
    for group in model.group_names():
        group_cls = model.model_fields[group].annotation
        assert isinstance(group_cls, type) and issubclass(group_cls, Group)
        for field, info in group_cls.model_fields.items():
            annotation = info.annotation
            kind: Literal["bool", "list", "value"] = (
                "bool" if annotation is bool else "list" if get_origin(annotation) is list else "value")
            key = f"{group}.{field}"
            flag = model.flag_aliases[key] if key in model.flag_aliases else _flag_name(group, group_cls,
                                                                                         field, kind)
            env = f"{ENV_PREFIX}{group.upper()}__{field.upper()}"
            default = _default(info, model.defaults.get(group, {}), field)
            table.append(Flag(group, field, flag, env, info, default, kind))
    return table


def _show(value: Any) -> str:
    if isinstance(value, timedelta):
        return format_go_duration(value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value) or "none"
    if value == "":
        return '""'
    return str(value)


def _help(f: Flag) -> str:
    text = (f.info.description or "").rstrip(".")
    if f.default_text:
        text += f" (default: {f.default_text}"
    elif f.default is _REQUIRED:
        text += " (required"
    elif f.default is None:
        text += " (default: unset"
    else:
        text += f" (default: {_show(f.default)}"
    text += f"; env {f.env})"
    if f.kind == "list":
        text += "; repeatable, comma-separated"
    return text.replace("%", "%%")


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def add_settings_flags(parser: argparse.ArgumentParser, model: type[Settings]) -> None:
    """One argument group per settings group; nothing is set on ``args`` unless given."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for f in flag_table(model):
        if f.flag is None:
            continue
        if f.group not in groups:
            description = model.model_fields[f.group].description or f.group
            groups[f.group] = parser.add_argument_group(
                f"{description} (flag > {ENV_PREFIX}{f.group.upper()}__<FIELD> > default)")
        group = groups[f.group]
        if f.kind == "bool":
            group.add_argument(f.flag, dest=f.dest, action=argparse.BooleanOptionalAction,
                               default=argparse.SUPPRESS, help=_help(f))
        elif f.kind == "list":
            group.add_argument(f.flag, dest=f.dest, action="append", type=_split, default=argparse.SUPPRESS,
                               metavar=f.field.upper(), help=_help(f))
        else:
            group.add_argument(f.flag, dest=f.dest, default=argparse.SUPPRESS, metavar=f.field.upper(),
                               type=model.flag_types.get(f"{f.group}.{f.field}", str), help=_help(f))


def _given(model: type[Settings], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    given: dict[str, dict[str, Any]] = {}
    for f in flag_table(model):
        if hasattr(args, f.dest):
            value = getattr(args, f.dest)
            if f.kind == "list":
                value = [item for chunk in value for item in chunk]
            given.setdefault(f.group, {})[f.field] = value
    return given


def _message(err: Mapping[str, Any]) -> str:
    msg = str(err["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    if err["type"] == "extra_forbidden":
        msg = "not a setting"
    return msg


def problems_of(model: type[Settings], exc: ValidationError) -> list[FieldProblem]:
    """One problem per pydantic error, its path the field's flag and env variable."""
    by_path = {(f.group, f.field): f for f in flag_table(model)}
    problems: list[FieldProblem] = []
    for err in exc.errors():
        loc = tuple(str(part) for part in err["loc"])
        f = by_path.get((loc[0], loc[1])) if len(loc) >= 2 else None
        if f is not None:
            where = f.where
        elif loc:
            where = ENV_PREFIX + "__".join(loc).upper()
        else:
            where = ""
        problems.append(FieldProblem(where, _message(err)))
    return problems


def _known_env() -> set[str]:
    return {f.env for model in (WebhookSettings, ControllersSettings, NodeCleanupSettings, NodeAgentSettings,
                                ToolSettings) for f in flag_table(model)}


def unknown_env(environ: Mapping[str, str] | None = None) -> list[FieldProblem]:
    """``KUSTODIAN_*`` variables that no command reads: a typo or a pre-grouping name
    (``KUSTODIAN_NODE_CLEANUP_DELAY`` for ``KUSTODIAN_NODE_CLEANUP__DELAY``) would otherwise be
    ignored silently and its default used; each is refused with the closest real name."""
    environ = os.environ if environ is None else environ
    known = _known_env()
    problems = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX) or upper in known or upper.startswith(NOT_SETTINGS):
            continue
        if "__" not in upper and _SERVICE_LINK.fullmatch(upper):
            continue
        close = difflib.get_close_matches(upper, known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(FieldProblem(name, f"not a setting{hint}"))
    return problems


def load_settings(model: type[S], given: Mapping[str, Any] | None = None, *, check_env: bool = False) -> S:
    """``model`` from ``given`` (flags), the environment and the defaults; ``ConfigError`` lists
    every problem, each naming its flag and env variable."""
    problems = unknown_env() if check_env else []
    try:
        settings = model(**dict(given or {}))
    except ValidationError as exc:
        named = {p.path for p in problems}  # an unknown variable is named once, with its hint
        problems += [p for p in problems_of(model, exc) if p.path not in named]
    else:
        if not problems:
            return settings
    raise ConfigError(INVALID, problems)


def _where(model: type[Settings], group: str, field: str) -> str:
    return next(f.where for f in flag_table(model) if (f.group, f.field) == (group, field))


def idle_problems(settings: Settings) -> list[FieldProblem]:
    """A component that is on with nothing to do, one problem each, naming the setting to give.

    Valid settings that would make a process run and do nothing (a node agent without disks,
    node cleanup without a StorageClass, a controllers sidecar with every controller off, a webhook
    with every admission feature off) look
    installed and protect nothing; the process refuses to start instead (``kustodian <command>``
    exits 2), as the chart refuses to render them.
    """
    model = type(settings)
    problems: list[FieldProblem] = []
    if isinstance(settings, NodeAgentSettings) and not settings.node_agent.disks:
        problems.append(FieldProblem(_where(model, "node_agent", "disks"),
                                     "no disk is configured: the node agent would scan nothing; name this "
                                     "node's Longhorn disk paths (e.g. /var/lib/longhorn)"))
    if isinstance(settings, NodeCleanupSettings | ControllersSettings):
        cleaning = settings.node_cleanup
        alone = isinstance(settings, NodeCleanupSettings)  # the command is the controller
        if (alone or cleaning.enabled) and not cleaning.storage_classes:
            off = "" if alone else ", or turn node cleanup off (--no-node-cleanup / " \
                                   "KUSTODIAN_NODE_CLEANUP__ENABLED=false)"
            problems.append(FieldProblem(
                _where(model, "node_cleanup", "storage_classes"),
                "no StorageClass is named: node cleanup would clean nothing; name the StorageClasses of your "
                f"local PVs{off}"))
    if isinstance(settings, ControllersSettings) and not (
            settings.reclaim.enabled or settings.node_cleanup.enabled or settings.capacity.enabled):
        switches = ", ".join(_where(model, group, "enabled").partition(" / ")[0]
                             for group in ("reclaim", "node_cleanup", "capacity"))
        problems.append(FieldProblem(switches, "every controller is off: kustodian controllers would run "
                                               "nothing; turn one on"))
    # every feature build_webhook installs (the guard, the reclaim policy, capacity's validation)
    if isinstance(settings, WebhookSettings) and not (
            settings.deletion_guard.enabled or settings.reclaim.enabled or settings.capacity.enabled):
        features = ", ".join(_where(model, group, "enabled")
                             for group in ("deletion_guard", "reclaim", "capacity"))
        problems.append(FieldProblem(features, "every admission feature is off: kustodian webhook would "
                                               "judge nothing; turn one on"))
    return problems


def settings_from_args(model: type[S], args: argparse.Namespace, *, check_env: bool = False) -> S:
    return load_settings(model, _given(model, args), check_env=check_env)


def flags_for(model: type[Settings], values: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The command line that gives ``values`` (``{"node_cleanup": {"delay": "60s"}}``); for tests
    and docs: the inverse of parsing."""
    out: list[str] = []
    for f in flag_table(model):
        if f.field not in values.get(f.group, {}):
            continue
        value = values[f.group][f.field]
        if f.flag is None:
            raise ValueError(f"{f.group}.{f.field} has no flag in {model.__name__}")
        if f.kind == "bool":
            out.append(f.flag if value else "--no-" + f.flag[2:])
        elif f.kind == "list":
            out += [f"{f.flag}={item}" for item in value]
        else:
            out.append(f"{f.flag}={_show(value) if isinstance(value, timedelta) else value}")
    return out


def env_for(model: type[Settings], values: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The ``KUSTODIAN_*`` variables that give ``values``."""
    out: dict[str, str] = {}
    for f in flag_table(model):
        if f.field in values.get(f.group, {}):
            value = values[f.group][f.field]
            out[f.env] = (json.dumps(value) if isinstance(value, list)
                          else _show(value) if isinstance(value, timedelta | bool) else str(value))
    return out


