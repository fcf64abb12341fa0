"""``-o table|json|yaml|name|wide|jsonpath=TEMPLATE``: one flag and one renderer for every command
that reads.

A table is for people (aligned columns, ``-`` for empty); ``wide`` is the table with more columns;
JSON and YAML are for scripts and carry the same rows as objects, keys in Kubernetes' camelCase
(``NEXT RUN`` -> ``nextRun``).  ``name`` prints ``resource[.group]/name`` per object, as
``kubectl get -o name`` does, so the output can be fed back to kubectl.  ``jsonpath=`` is
kubectl's template (``{.items[*].name}``, ``{range .items[*]}{.name}{"\\n"}{end}``) over the
JSON document: text outside braces is printed as it is, each ``{expression}`` prints its matches
separated by spaces (objects and lists as compact JSON), a key that is missing prints nothing
(kubectl's default ``--allow-missing-template-keys``).  The expressions are evaluated by
``jsonpath-ng`` (its extended parser, for kubectl's ``[?(@.field=="x")]`` filters).

Each command says which formats it has (kubectl has ``-o name`` and ``-o wide`` only where they
mean something).  ``args.output`` holds the value as given (``jsonpath={.items[*].name}`` whole),
so a command hands it to ``dump`` as it is and tests ``!= "table"`` as before.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import yaml

from kustodian.errors import ConfigError

__all__ = ["FORMATS", "add_output_flag", "dump", "jsonpath", "print_rows", "records", "resource_name"]

FORMATS = ("table", "json", "yaml")
JSONPATH = "jsonpath"


class _Formats(tuple[str, ...]):
    """The formats a command takes, as argparse ``choices``: ``jsonpath=TEMPLATE`` is in it for any
    TEMPLATE, so argparse's own check and message (``invalid choice: 'xml' (choose from ...)``) stay."""

    def __contains__(self, value: object) -> bool:
        if isinstance(value, str) and tuple.__contains__(self, JSONPATH) and value.startswith(f"{JSONPATH}="):
            return True
        return tuple.__contains__(self, value)


class _OutputAction(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if str(values) in (JSONPATH, f"{JSONPATH}="):
            raise argparse.ArgumentError(self, "jsonpath needs a template: -o jsonpath='{.items[*].name}'")
        setattr(namespace, self.dest, str(values))


def add_output_flag(parser: argparse.ArgumentParser, *, name: bool = False, wide: bool = False) -> None:
    """``-o``: table, json and yaml everywhere, ``jsonpath=`` on every JSON document, ``name`` and
    ``wide`` where the command has a name per object and more columns to show."""
    formats = (*FORMATS, *(("name",) if name else ()), *(("wide",) if wide else ()), JSONPATH)
    shown = ", ".join(f for f in formats[1:] if f != JSONPATH)
    parser.add_argument("-o", "--output", choices=_Formats(formats), default="table", action=_OutputAction,
                        metavar="FORMAT",
                        help=f"Output format: table (default), {shown} or jsonpath=TEMPLATE (kubectl's)")


def dump(document: Any, fmt: str) -> None:
    """``document`` as JSON, YAML or (``fmt`` ``jsonpath=TEMPLATE``) through kubectl's template."""
    if fmt == "json":
        json.dump(document, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    elif fmt.startswith(f"{JSONPATH}="):
        sys.stdout.write(jsonpath(fmt.partition("=")[2], json.loads(json.dumps(document, default=str))))
    else:
        yaml.safe_dump(document, sys.stdout, sort_keys=False)


def resource_name(kind_key: str, name: str, plural: str | None = None) -> str:
    """``kubectl get -o name``'s spelling of one object: ``cephblockpool.ceph.rook.io/replicapool``,
    ``persistentvolume/pv-1`` (the kind lower-cased, with its group unless it is the core group)."""
    kind, _, group = kind_key.partition(".")
    return f"{(plural or kind).lower()}{'.' + group if group else ''}/{name}"


def print_names(objects: Iterable[tuple[str, str, str]]) -> int:
    """``-o name``: one ``resource[.group]/name`` line per ``(kind_key, namespace, name)`` on
    stdout, grouped by namespace (cluster-scoped first), and how many were printed.

    kubectl reads such names back in one namespace only (``kubectl get -n NS $(...)``): a name
    cannot carry its namespace, and ``-A`` takes no names.  So when namespaced objects are among
    them, one line on stderr (never mixed into what ``$(...)`` captures) says which namespace
    ``-n`` must name, or, when they span several, that each needs its own ``kubectl get``."""
    rows = sorted(objects, key=lambda o: (o[1], o[0], o[2]))
    for kind, _, obj_name in rows:
        print(resource_name(kind, obj_name))
    spaces = sorted({ns for _, ns, _ in rows if ns})
    if len(spaces) == 1:
        print(f"note: the namespaced ones are in namespace {spaces[0]}: read them back with "
              f"kubectl get -n {spaces[0]} $(... -o name)", file=sys.stderr)
    elif spaces:
        counts = ", ".join(f"{ns} ({sum(1 for _, n, _ in rows if n == ns)})" for ns in spaces)
        print(f"note: the namespaced ones are in {len(spaces)} namespaces, {counts}: kubectl get takes "
              "one namespace (-n NS) per call; -o json names each object's namespace", file=sys.stderr)
    return len(rows)


def print_rows(header: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    table = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _key(column: str) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", column) if w]
    return words[0].lower() + "".join(w.capitalize() for w in words[1:]) if words else column


def records(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """Table rows as objects keyed by the camelCased column names."""
    keys = [_key(h) for h in header]
    return [dict(zip(keys, row, strict=True)) for row in rows]


# -- kubectl's jsonpath template ----------------------------------------------------------------

def _bad(template: str, why: str) -> ConfigError:
    return ConfigError.at(f"-o jsonpath={template}", why)


def _actions(template: str) -> Iterator[tuple[str, str]]:
    """``("text", s)`` and ``("action", inside-the-braces)`` in order; quotes inside braces may hold ``}``."""
    i, text = 0, []
    while i < len(template):
        c = template[i]
        if c != "{":
            text.append(c)
            i += 1
            continue
        if text:
            yield "text", "".join(text)
            text = []
        j, quote = i + 1, ""
        while j < len(template):
            ch = template[j]
            if quote:
                if ch == "\\":
                    j += 1
                elif ch == quote:
                    quote = ""
            elif ch in "\"'":
                quote = ch
            elif ch == "}":
                break
            j += 1
        if j >= len(template):
            raise _bad(template, f"unclosed action at {template[i:]!r}")
        yield "action", template[i + 1:j].strip()
        i = j + 1
    if text:
        yield "text", "".join(text)


def _literal(action: str) -> str | None:
    if len(action) >= 2 and action[0] == action[-1] and action[0] in "\"'":
        body = action[1:-1]
        return body.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r").replace(f"\\{action[0]}",
                                                                                          action[0])
    return None


def _parse(template: str) -> list[Any]:
    """A tree: strings (text), ``("expr", e)`` and ``("range", e, body)``."""
    stack: list[list[Any]] = [[]]
    ranges: list[str] = []
    for what, value in _actions(template):
        if what == "text":
            stack[-1].append(value)
            continue
        literal = _literal(value)
        if literal is not None:
            stack[-1].append(literal)
        elif value == "end":
            if not ranges:
                raise _bad(template, "{end} without a {range ...}")
            body = stack.pop()
            stack[-1].append(("range", ranges.pop(), body))
        elif value.startswith("range ") or value == "range":
            ranges.append(value[len("range"):].strip())
            if not ranges[-1]:
                raise _bad(template, "{range} needs an expression: {range .items[*]}")
            stack.append([])
        elif value:
            stack[-1].append(("expr", value))
    if ranges:
        raise _bad(template, f"{{range {ranges[-1]}}} without an {{end}}")
    return stack[0]


def _find(template: str, expression: str, data: Any) -> list[Any]:
    from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError  # type: ignore[import-untyped,unused-ignore]
    from jsonpath_ng.ext import parse  # type: ignore[import-untyped,attr-defined,unused-ignore]

    if expression == "@":
        return [data]
    path = expression
    if path.startswith("@"):
        path = "$" + path[1:]
    elif path.startswith((".", "[")):
        path = "$" + path
    try:
        compiled = parse(path)
    except (JsonPathLexerError, JsonPathParserError, Exception) as exc:  # it raises bare Exception too
        raise _bad(template, f"cannot parse {{{expression}}}: {exc}") from None
    try:
        return [m.value for m in compiled.find(data)]
    except (TypeError, ValueError, KeyError, IndexError) as exc:  # a filter comparing a string with a number
        raise _bad(template, f"cannot evaluate {{{expression}}}: {exc}") from None


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _render(template: str, nodes: list[Any], data: Any, out: list[str]) -> None:
    for node in nodes:
        if isinstance(node, str):
            out.append(node)
        elif node[0] == "expr":
            out.append(" ".join(_show(v) for v in _find(template, node[1], data)))
        else:
            found = _find(template, node[1], data)
            items = found[0] if len(found) == 1 and isinstance(found[0], list) else found
            for item in items:
                _render(template, node[2], item, out)


def jsonpath(template: str, data: Any) -> str:
    """kubectl's ``-o jsonpath=TEMPLATE`` over ``data`` (plain JSON values); a template that cannot be
    read is a ``ConfigError`` naming it."""
    out: list[str] = []
    _render(template, _parse(template), data, out)
    return "".join(out)
