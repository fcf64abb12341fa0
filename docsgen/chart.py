"""The chart's values reference, from ``values.yaml`` itself: each key's meaning is its own comment,
its default the value there.

The rules (``problems()`` lists every break of them; the docs build and ``tests/docs`` fail on any):

- **A key's description is the comment block right above it** (no blank line between), whole;
  helm-docs' ``# --`` marker may start it and is dropped. One block, one description: a ``# --``
  further down the block would be a second description run into the first (two keys' comments
  pasted together, or a section note glued to a key's own), and is refused. A comment separated
  from the next key by a blank line documents nothing (a note for readers of the file).
- **A description is never carried to another key**: not to the next sibling, not to a key
  inside a documented mapping. A leaf without a comment of its own is undocumented.
- **A group**: one comment may document several sibling keys only by naming them, in backticks,
  before a colon: ``# -- `interval`, `scrapeTimeout`: how often and how long one scrape may
  take.`` It documents exactly those keys, which must follow it directly, in any order, with no
  blank line or comment between; a named key that does not follow, or a key in the run that is
  not named, is a problem (the latter is left undocumented).
- **A description shared by several keys names each of them** (the key's last part, as a word):
  a text pasted above two keys that names one (or none) of them is refused.

``values.schema.json`` is not read here: it decides which keys exist, this file what they mean.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["CHART", "Value", "problems", "render", "shared_descriptions", "undocumented", "values"]

CHART = Path(__file__).resolve().parent.parent / "charts" / "kustodian"
_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_]+):(?P<rest>.*)$")
#: a group comment's names: `a`, `b` and `c`: ...
_NAME = r"`[A-Za-z0-9_]+`"
_GROUP = re.compile(rf"^(?P<names>{_NAME}(?:(?:\s*,\s*|\s+and\s+|\s*,\s*and\s+){_NAME})*)\s*:\s+")
#: values that hold a raw Kubernetes object or a free-form map (labels): one value, documented as a
#: whole, whatever its default
RAW = frozenset({"affinity", "topologySpreadConstraints", "tolerations", "nodeSelector", "resources",
                 "podSecurityContext", "securityContext", "tlsConfig", "labels", "annotations",
                 "updateStrategy"})


@dataclass(frozen=True)
class Value:
    key: str  # dotted path
    comment: str  # its description ("" if none)
    default: Any
    leaf: bool
    line: int = 0  # of the key in values.yaml
    group: tuple[str, ...] = ()  # the keys its group comment names (empty: its own comment)


@dataclass(frozen=True)
class _Found:
    value: Any


@dataclass
class _Group:
    text: str
    names: tuple[str, ...]
    line: int
    waiting: set[str] = field(default_factory=set)


@dataclass
class _Parsed:
    values: list[Value] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _description(block: list[tuple[int, str]], key: str, problems: list[str]) -> str:
    """The comment block above ``key`` as one description (``--`` dropped); a second ``--`` in the
    block is a problem, named by its line."""
    texts = [(n, line.strip().removeprefix("#").strip()) for n, line in block]
    for n, text in texts[1:]:
        if text.startswith("--"):
            problems.append(f"values.yaml:{n}: a second description ('# --') above {key}: two comments run "
                            "together; keep the one that describes this key, or separate a note from it "
                            "with a blank line")
    return " ".join(text for _, text in texts).removeprefix("--").strip()


def _group_names(text: str) -> tuple[str, ...]:
    m = _GROUP.match(text)
    return tuple(re.findall(r"`([A-Za-z0-9_]+)`", m["names"])) if m else ()


def _parse(path: Path) -> _Parsed:
    text = path.read_text()
    data = yaml.safe_load(text)
    out = _Parsed()
    stack: list[tuple[int, str]] = []  # (indent, key) of the mappings above
    pending: list[tuple[int, str]] = []  # (line number, line) of the comment block being read
    groups: dict[int, _Group] = {}  # indent -> the group comment whose keys are being read there
    inside_raw: int | None = None  # the indent of the raw object being skipped

    def close(deeper_than: int) -> None:
        for indent in [i for i in groups if i > deeper_than]:
            group = groups.pop(indent)
            for name in sorted(group.waiting):
                out.problems.append(f"values.yaml:{group.line}: the comment names `{name}`, which does not "
                                    "follow it: a group comment documents the keys right under it")

    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if inside_raw is not None and (not stripped or indent > inside_raw):
            continue  # inside a raw object's default: its lines are its value, not keys
        inside_raw = None
        if stripped.startswith("#"):
            pending.append((n, line))
            close(indent - 1)  # a comment ends the runs of groups at its level and deeper
            continue
        if not stripped:
            pending = []
            close(-1)
            continue
        m = _KEY.match(line)
        if m is None or stripped.startswith("-"):
            pending = []
            continue
        close(indent)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        key = ".".join([*(k for _, k in stack), m["key"]])
        own = _description(pending, key, out.problems) if pending else ""
        group_names: tuple[str, ...] = ()
        if pending:
            names = _group_names(own)
            if names:
                groups[indent] = _Group(own, names, pending[0][0], set(names))
                group_names = names
        pending = []
        group = groups.get(indent)
        if group is not None:
            if m["key"] in group.waiting:
                group.waiting.discard(m["key"])
                own, group_names = group.text, group.names
            else:  # a key the group does not name ends it: documented by nothing
                close(indent - 1)
                own, group_names = "", ()
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
        out.values.append(Value(key, own, default, leaf, n, group_names))
        stack.append((indent, m["key"]))
    close(-1)
    return out


def values(path: Path | None = None) -> list[Value]:
    """Every key of ``values.yaml``, in file order."""
    return _parse(path or CHART / "values.yaml").values


def undocumented(path: Path | None = None) -> list[str]:
    """Leaves with no description of their own (or of a group comment naming them)."""
    return [v.key for v in values(path) if v.leaf and not v.comment]


def _names(text: str, key: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(key.rpartition('.')[2])}(?!\w)", text) is not None


def shared_descriptions(found: list[Value]) -> list[str]:
    """One problem per description that several keys share without naming each of them."""
    by_text: dict[str, list[Value]] = defaultdict(list)
    for v in found:
        if v.comment:
            by_text[v.comment].append(v)
    out = []
    for text, sharing in by_text.items():
        if len(sharing) < 2:
            continue
        unnamed = [v.key for v in sharing if not _names(text, v.key)]
        if unnamed:
            keys = ", ".join(v.key for v in sharing)
            out.append(f"values.yaml:{sharing[0].line}: {keys} share one description that does not name "
                       f"{', '.join(unnamed)}: {text[:80]!r}")
    return out


def problems(path: Path | None = None) -> list[str]:
    """Every break of the rules above: comment structure, undocumented leaves, shared descriptions."""
    parsed = _parse(path or CHART / "values.yaml")
    return [*parsed.problems,
            *(f"chart value without a description: {v.key}" for v in parsed.values
              if v.leaf and not v.comment),
            *shared_descriptions(parsed.values)]


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
        "    This page is generated from `charts/kustodian/values.yaml` by `make docs` (`docsgen/chart.py`):",
        "    a key's meaning is the comment above it there, and a test fails when this page is not",
        "    what the file says. `values.schema.json` refuses keys not listed here.",
        "",
        "Set them with `--set` (`--set webhook.replicas=5`) or a values file (`-f my-values.yaml`).",
        "Each key is explained by its own comment; a comment that explains several keys names them.",
        "",
        "| key | default | meaning |",
        "|---|---|---|",
    ]
    for v in values(path):
        if not v.leaf and not v.comment:
            continue
        default = _default(v.default) if v.leaf else ""
        out.append(f"| `{v.key}` | {default} | {_escape(v.comment)} |")
    return "\n".join(out) + "\n"
