"""``--from DIR``: the manifests a tool reads instead of a cluster, and every one it could not use.

Shared by ``explain-delete``, ``report``, ``reclaim plan`` and ``capacity plan``.  Read as
``kubectl apply -f DIR -R`` reads a directory, so what kubectl accepts is accepted here:

* every ``*.yaml``, ``*.yml`` and ``*.json`` file under DIR (recursively, sorted);
* a YAML stream (``---``), a JSON object, a ``kind: List`` (or any ``*List`` with ``items``)
  and a top-level YAML or JSON list of objects;
* a namespaced object without ``metadata.namespace`` takes ``-n``'s namespace, as
  ``kubectl apply -f`` gives it the namespace of the command line.  Without ``-n`` it keeps
  none (an offline tool has no context namespace to fall back to).

Nothing is dropped silently.  A file that cannot be read or parsed is an error naming the
file and the line, and every such file is named, not only the first (exit 2, no answer from
half the input, kubectl's habit for a file it cannot decode).  A document that parses but is
no object (a scalar, a list item that is not a mapping, an object without ``apiVersion`` or
``kind``) is *skipped* with one line on stderr naming the file, the document and why; so is,
per file, every kind the command does not read, and a file with no manifest suffix.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kustodian.cli.rules import yaml_problem
from kustodian.errors import ConfigError, FieldProblem
from kustodian.policy.kinds import known_kind
from kustodian.policy.store import kind_key

__all__ = ["SUFFIXES", "Manifests", "Skipped", "read_manifests"]

SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Skipped:
    """One file or document ``--from`` did not use, and why."""

    where: str  # "DIR/a.yaml", "DIR/a.yaml: document 2", "DIR/a.yaml: document 1, items[3]"
    why: str

    def __str__(self) -> str:
        return f"skipped {self.where}: {self.why}"


@dataclass
class Manifests:
    """The objects of ``--from DIR`` (``source`` says where each came from) and what was skipped."""

    directory: Path
    objects: list[dict[str, Any]] = field(default_factory=list)
    source: list[tuple[str, str]] = field(default_factory=list)  # parallel to objects: (file, document)
    skipped: list[Skipped] = field(default_factory=list)
    files: int = 0  # manifest files read

    def by_kind(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for doc in self.objects:
            out.setdefault(kind_key(str(doc["apiVersion"]), str(doc["kind"])), []).append(doc)
        return out

    def keep(self, kinds: Mapping[str, str | None], command: str) -> None:
        """Keep only ``kinds`` (kind keys); each file's other objects become one skip line.

        An object whose kind is a misspelling of one of ``kinds`` (other letter cases, another
        group, a typo) is a mistake, not another kind: ``ConfigError`` naming every such document
        (after the skip lines), since the answer would silently leave it out.  So is an object of a
        kept kind whose apiVersion is not the one ``kinds`` gives for it (when it gives one)."""
        wanted = set(kinds)
        kept: list[tuple[dict[str, Any], tuple[str, str]]] = []
        others: dict[str, Counter[str]] = {}
        mistakes: list[FieldProblem] = []
        for doc, (path, where) in zip(self.objects, self.source, strict=True):
            key = kind_key(str(doc["apiVersion"]), str(doc["kind"]))
            expected = kinds.get(key)
            if key in wanted and expected and doc["apiVersion"] != expected:
                why = f"apiVersion {doc['apiVersion']} does not serve {doc['kind']} (use {expected})"
                mistakes.append(FieldProblem(f"--from {self.directory}", f"{where}: {why}"))
                continue
            if key in wanted:
                kept.append((doc, (path, where)))
                continue
            meant = _meant(key, wanted)
            if meant:
                mistakes.append(FieldProblem(f"--from {self.directory}", (
                    f"{where}: apiVersion {doc['apiVersion']}, kind {doc['kind']} is not a kind {command} "
                    f"reads (did you mean {' or '.join(meant)}?)")))
            else:
                others.setdefault(path, Counter())[key] += 1
        self.objects = [d for d, _ in kept]
        self.source = [w for _, w in kept]
        for path, counts in others.items():
            listed = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in sorted(counts.items()))
            self.skipped.append(Skipped(path, f"not read by {command}: {listed}"))
        if mistakes:
            self.warn(command)
            raise ConfigError("", mistakes)

    def warn(self, command: str) -> None:
        """Every skipped file or document, one line each on stderr, prefixed as errors are."""
        for item in self.skipped:
            print(f"kustodian {command}: {item}", file=sys.stderr)


def read_manifests(directory: Path, namespace: str = "", flag: str = "--from") -> Manifests:
    """Every object under ``directory``; ``ConfigError`` naming every file that cannot be read."""
    if not directory.is_dir():
        raise ConfigError.at(f"{flag} {directory}", "no such directory")
    out = Manifests(directory)
    broken: list[FieldProblem] = []
    for path in sorted(directory.rglob("*")):
        if path.is_symlink() and not path.exists():  # a dangling link: a file kubectl could not read either
            broken.append(FieldProblem(f"{flag} {directory}", f"{path}: no such file (a dangling link)"))
            continue
        if not path.is_file():
            continue
        if path.suffix not in SUFFIXES:
            out.skipped.append(Skipped(str(path), "not a manifest (only .yaml, .yml and .json are read)"))
            continue
        docs, unreadable = _parse(path)
        if unreadable:
            broken.append(FieldProblem(f"{flag} {directory}", f"{path}: {unreadable}"))
            continue
        out.files += 1
        for i, doc in enumerate(docs, 1):
            where = f"{path}: document {i}" if len(docs) > 1 else str(path)
            _add(out, doc, (str(path), where), namespace)
    if broken:
        raise ConfigError("", broken)
    return out


def _parse(path: Path) -> tuple[list[Any], str]:
    """The file's documents, or why it cannot be read or parsed (where the parser stopped)."""
    try:
        text = path.read_text()
    except OSError as exc:
        return [], (exc.strerror or str(exc)).lower()
    except UnicodeDecodeError:
        return [], "not a text file"
    if path.suffix == ".json":
        try:
            return _json_stream(text), ""
        except json.JSONDecodeError as exc:
            return [], f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None], ""  # an empty document is nothing
    except yaml.YAMLError as exc:
        return [], yaml_problem(exc)


def _json_stream(text: str) -> list[Any]:
    """One JSON value, or several one after the other (kubectl decodes a stream of them)."""
    decoder = json.JSONDecoder()
    out: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return out
        value, pos = decoder.raw_decode(text, pos)
        out.append(value)


def _add(out: Manifests, doc: Any, source: tuple[str, str], namespace: str) -> None:
    path, where = source
    if isinstance(doc, list):  # a top-level list of objects, as kubectl accepts
        for j, item in enumerate(doc):
            _add(out, item, (path, f"{where}{_sep(source)}[{j}]"), namespace)
        return
    if not isinstance(doc, dict):
        out.skipped.append(Skipped(where, f"not a Kubernetes object (a {_type(doc)})"))
        return
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc["items"]
        if not isinstance(items, list):
            out.skipped.append(Skipped(where, f"{kind}: items: must be a list, got a {_type(items)}"))
            return
        for j, item in enumerate(items):
            _add(out, item, (path, f"{where}{_sep(source)}items[{j}]"), namespace)
        return
    missing = [name for name, value in (("apiVersion", api_version), ("kind", kind))
               if not isinstance(value, str) or not value]
    if missing:
        out.skipped.append(Skipped(where, f"no {' and no '.join(missing)}: not a Kubernetes object"))
        return
    meta = doc.get("metadata")
    if namespace and isinstance(meta, dict) and not meta.get("namespace"):
        known = known_kind(kind_key(str(api_version), str(kind)))
        if known is not None and known.namespaced:
            doc = {**doc, "metadata": {**meta, "namespace": namespace}}
    out.objects.append(doc)
    out.source.append(source)


def _sep(source: tuple[str, str]) -> str:
    """``a.yaml: items[1]`` in a one-document file, ``a.yaml: document 2, items[1]`` in a stream."""
    path, where = source
    return ": " if where == path else ", "


def _meant(key: str, wanted: Iterable[str]) -> list[str]:
    """The wanted kind keys ``key`` is probably a misspelling of (same kind in another group,
    other letter cases, a close typo of the kind in the same group)."""
    kind, _, group = key.partition(".")
    out = []
    for w in sorted(wanted):
        w_kind, _, w_group = w.partition(".")
        if w_kind.lower() == kind.lower() or (
                group == w_group and difflib.get_close_matches(kind, [w_kind], n=1, cutoff=0.8)):
            out.append(w)
    return out


def _type(value: Any) -> str:
    return {dict: "mapping", list: "list", str: "string", bool: "boolean", int: "number",
            float: "number"}.get(type(value), type(value).__name__)
