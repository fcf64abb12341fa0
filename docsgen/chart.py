"""The chart's values reference, from ``values.yaml`` itself: each key's description is the
comment block right above it (helm-docs' ``# --`` marker is dropped), its default the value
there.  One comment block documents the run of sibling leaves right under it (up to a blank line
or the next comment: ``interval`` / ``scrapeTimeout``).  A key is documented by its own comment,
its run's, or the comment of a mapping above it; a leaf with none is undocumented
(``undocumented()``, checked by the tests)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["CHART", "Value", "render", "undocumented", "values"]

CHART = Path(__file__).resolve().parent.parent / "charts" / "kustodian"
_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_]+):(?P<rest>.*)$")
#: values that hold a raw Kubernetes object: one value, documented as a whole, whatever its default
RAW = frozenset({"affinity", "topologySpreadConstraints", "tolerations", "nodeSelector", "resources",
                 "podSecurityContext", "securityContext", "tlsConfig"})


@dataclass(frozen=True)
class Value:
    key: str  # dotted path
    comment: str  # its own comment block ("" if none)
    inherited: str  # the nearest documented mapping above it ("" if none)
    default: Any
    leaf: bool


@dataclass(frozen=True)
class _Found:
    value: Any


def _comment(lines: list[str]) -> str:
    text = " ".join(line.strip().removeprefix("#").strip() for line in lines)
    return text.removeprefix("--").strip()


def values(path: Path | None = None) -> list[Value]:
    """Every key of ``values.yaml``, in file order."""
    path = path or CHART / "values.yaml"
    text = path.read_text()
    data = yaml.safe_load(text)
    out: list[Value] = []
    stack: list[tuple[int, str, str]] = []  # (indent, key, comment of that key or inherited)
    pending: list[str] = []
    run: dict[int, str] = {}  # indent -> the comment a leaf sibling passes on to the next one
    inside_raw: int | None = None  # the indent of the raw object being skipped
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped)
            continue
        if not stripped:
            pending = []
            run.clear()
            continue
        m = _KEY.match(line)
        if m is None or stripped.startswith("-"):
            pending = []
            continue
        indent = len(m["indent"])
        if inside_raw is not None:
            if indent > inside_raw:
                pending = []
                continue
            inside_raw = None
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parents = [key for _, key, _ in stack]
        key = ".".join([*parents, m["key"]])
        own = _comment(pending) or (run.get(indent, "") if not pending else "")
        pending = []
        for deeper in [i for i in run if i > indent]:
            del run[deeper]
        inherited = next((doc for _, _, doc in reversed(stack) if doc), "")
        default: Any = data
        for part in key.split("."):
            if not isinstance(default, dict) or part not in default:
                break  # a key inside a list item or a flow value: part of its parent's default
            default = default[part]
        else:
            default = _Found(default)
        if not isinstance(default, _Found):
            continue
        default = default.value
        raw = m["key"] in RAW
        leaf = raw or not (isinstance(default, dict) and default and not m["rest"].strip())
        if raw:
            inside_raw = indent
        run[indent] = own if leaf else ""
        out.append(Value(key, own, inherited, default, leaf))
        stack.append((indent, m["key"], own or inherited))
    return out


def undocumented(path: Path | None = None) -> list[str]:
    """Leaves with no comment of their own and none on a mapping above them."""
    return [v.key for v in values(path) if v.leaf and not v.comment and not v.inherited]


def _default(value: Any) -> str:
    if value is None:
        return "`null`"
    if value == "":
        return '`""`'
    return "`" + json.dumps(value, separators=(", ", ": ")).replace("|", "\\|") + "`"


def _escape(text: str) -> str:
    """A table cell: ``|`` escaped everywhere, ``<`` outside code spans (inside them it shows as is)."""
    parts = text.replace("|", "\\|").split("`")
    return "`".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(parts))


def render(path: Path | None = None) -> str:
    out = [
        "# Chart values reference",
        "",
        "!!! note \"Generated\"",
        "    This page is generated from `charts/kustodian/values.yaml` on every docs build: a key's",
        "    meaning is the comment above it there. `values.schema.json` refuses keys not listed here.",
        "",
        "Set them with `--set key=value` or a values file (`-f my-values.yaml`). A key without its own",
        "comment is explained by the block above it (\"see ...\").",
        "",
        "| key | default | meaning |",
        "|---|---|---|",
    ]
    for v in values(path):
        if v.leaf:
            meaning = v.comment or (f"see `{v.key.rpartition('.')[0]}`" if "." in v.key else v.inherited)
        elif v.comment:
            meaning = v.comment
        else:
            continue
        default = _default(v.default) if v.leaf else ""
        meaning = _escape(meaning)
        out.append(f"| `{v.key}` | {default} | {meaning} |")
    return "\n".join(out) + "\n"
