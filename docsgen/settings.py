"""The configuration reference, from the settings tree: one table per command and group, every
field with its flag, its ``KUSTODIAN_*`` variable, its default and its description."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic_core import PydanticUndefined

from kustodian.settings import (
    ControllersSettings,
    Flag,
    NodeAgentSettings,
    NodeCleanupSettings,
    Settings,
    ToolSettings,
    WebhookSettings,
    flag_table,
    format_go_duration,
)

__all__ = ["COMMANDS", "render", "undocumented"]

# command line -> its settings model, in the order a reader meets them
COMMANDS: tuple[tuple[str, type[Settings]], ...] = (
    ("kustodian webhook", WebhookSettings),
    ("kustodian controllers", ControllersSettings),
    ("kustodian node-agent", NodeAgentSettings),
    ("kustodian node-cleanup", NodeCleanupSettings),
    ("kustodian explain-delete | report | reclaim plan | capacity plan | certs inject", ToolSettings),
)
_ABOUT = {
    WebhookSettings: "The admission webhook: the chart's webhook Deployment "
                     "(`webhook.extraArgs` adds flags).",
    ControllersSettings: "The leader-elected controllers: the chart's controllers Deployment "
                         "(`controllers.extraArgs` adds flags).",
    NodeAgentSettings: "The orphan-detection node agent: the chart's DaemonSet, which sets these by "
                       "their variables (`nodeAgent.*`; `nodeAgent.extraArgs` adds flags).",
    NodeCleanupSettings: "Node-loss cleanup alone, with sig-storage-local-static-provisioner's flag names "
                         "and defaults (a drop-in for its node cleanup controller).",
    ToolSettings: "The tools an admin runs. As kubectl, `-n` is the namespace of the object asked about; "
                  "Kustodian's own is `--kustodian-namespace`.",
}


def _show(f: Flag) -> str:
    if f.info.default is PydanticUndefined and f.info.default_factory is not None \
            and getattr(f.info.default_factory, "__name__", "") == "gethostname":
        return "the host name"
    if f.default_text:
        return f.default_text
    value: Any = f.default
    if type(value) is object:  # flag_table's marker of a field without default
        return "required"
    if value is None:
        return "unset"
    if isinstance(value, timedelta):
        return f"`{format_go_duration(value)}`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list | tuple):
        return ", ".join(f"`{v}`" for v in value) or "none"
    if value == "":
        return '`""`'
    return f"`{value}`"


def _cell(text: str) -> str:
    """A table cell: ``|`` escaped everywhere, ``<`` outside code spans (inside them it shows as is)."""
    parts = text.replace("|", "\\|").replace("\n", " ").split("`")
    return "`".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(parts))


def undocumented() -> list[str]:
    """``group.field`` of every settings field without a description (should be none)."""
    missing: set[str] = set()
    for _, model in COMMANDS:
        for f in flag_table(model):
            if not (f.info.description or "").strip():
                missing.add(f"{f.group}.{f.field}")
    return sorted(missing)


def render() -> str:
    out = [
        "# Configuration reference",
        "",
        "!!! note \"Generated\"",
        "    This page is generated from the settings tree (`kustodian/settings`) by `make docs`, and a",
        "    test fails when it is not what the code says; `kustodian <command> --help` prints the same.",
        "",
        "Every setting is a flag and an environment variable: `--<group>-<field>` and",
        "`KUSTODIAN_<GROUP>__<FIELD>` (a group's on/off switch is `--<group>` / `--no-<group>`;",
        "a list flag repeats or takes `a,b`, its variable takes JSON or `a,b`). Flags win over the",
        "environment, which wins over the defaults. Durations take Go syntax (`60s`, `1m30s`) or seconds.",
        "A `KUSTODIAN_*` variable no command reads stops the process at start (exit code 2), naming the",
        "closest real one. A command lists only the settings it uses.",
        "",
    ]
    for command, model in COMMANDS:
        out += [f"## `{command}`", "", _ABOUT[model], ""]
        by_group: dict[str, list[Flag]] = {}
        for f in flag_table(model):
            if f.flag is not None:  # a flag hidden for this command (flag_aliases) is not one it uses
                by_group.setdefault(f.group, []).append(f)
        for group, flags in by_group.items():
            title = model.model_fields[group].description or group
            out += [f"### {title} (`{group}`) {{ #{_anchor(command, group)} }}", "",
                    "| flag | variable | default | meaning |", "|---|---|---|---|"]
            for f in flags:
                name = f.flag or ""
                flag = f"`{name}` / `--no-{name[2:]}`" if f.kind == "bool" else f"`{name}`"
                out.append(f"| {flag} | `{f.env}` | {_cell(_show(f))} | {_cell(f.info.description or '')} |")
            out.append("")
    return "\n".join(out)


def _anchor(command: str, group: str) -> str:
    word = command.split()[1] if " " in command else command
    return f"{word}-{group}".replace("_", "-")
