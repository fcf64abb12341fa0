"""The house rules that import-linter cannot say, checked on the package's own source.

* **No import circle**: no two modules of ``kustodian`` import each other, directly or through
  others (imports under ``TYPE_CHECKING`` included: a circle a type checker needs is a circle
  of the design all the same).
* **Package faces**: a package whose ``__init__`` hands names on (``__all__``) is used through
  it from outside: ``from kustodian.runtime import Manager``, not ``kustodian.runtime.manager``.
  Inside ``policy/`` the domains reach their own leaves directly (they are one package).
* **No ``getattr`` hook probes**: optional behaviour is a typed protocol a component declares
  (``runtime.manager``'s ``Resyncs``, ``kube.view.WatchedView``), never an attribute looked up
  by name; the few ``getattr`` calls left in what long-running processes run are listed below
  with what they read (the CLI's read argparse namespaces and YAML errors, as argparse is used).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kustodian"

# ``getattr`` calls that probe no hook: what each reads, by file
GETATTR_ALLOWED = {
    "kube/client.py": 1,  # socket options the platform may lack (TCP_KEEPIDLE, ...)
    "settings/flags.py": 1,  # argparse's namespace, by the flag's dest
    "webhook/registry.py": 2,  # a handler's name for a log line (a partial has none)
    "webhook/server.py": 1,  # the request limits' own fields, by name, to check each is positive
}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def _compiled_import(graph: grimp.ImportGraph, importer: str, imported: str) -> bool:
    """An import of a compiled extension beside ``imported``'s ``__init__`` (``_native``): grimp sees
    no module there and reads it as an import of the package itself."""
    package = PACKAGE.parent.joinpath(*imported.split("."))
    details = graph.get_import_details(importer=importer, imported=imported)
    names = [re.fullmatch(rf"from {re.escape(imported)} import (\w+)", d["line_contents"]) for d in details]
    return bool(names) and all(m is not None and (any(package.glob(f"{m.group(1)}.*.so"))
                                                  or (package / f"{m.group(1)}.pyx").is_file())
                               for m in names)


def test_no_two_modules_import_each_other() -> None:
    graph = grimp.build_graph("kustodian", cache_dir=None)
    edges = {m: {i for i in graph.find_modules_directly_imported_by(m)
                 if i.startswith("kustodian") and not _compiled_import(graph, m, i)} for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan: strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in edges[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    assert circles == []


def _faces() -> set[str]:
    faces = set()
    for module, path in _modules():
        if path.name == "__init__.py" and "__all__" in path.read_text():
            faces.add(module)
    return faces


def test_packages_are_used_through_their_faces_from_outside() -> None:
    faces = _faces()
    past: list[str] = []
    for module, path in _modules():
        if module.startswith("kustodian.policy."):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kustodian.")):
                continue
            parts = node.module.split(".")
            for i in range(2, len(parts)):
                face = ".".join(parts[:i])
                if face in faces and not (module == face or module.startswith(face + ".")):
                    past.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.module} (face: {face})")
                    break
    assert past == []


def test_no_getattr_hook_probes() -> None:
    found: dict[str, int] = {}
    for module, path in _modules():
        if module.startswith(("kustodian.cli", "kustodian.testing")):
            continue
        calls = sum(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr"
                    for n in ast.walk(ast.parse(path.read_text())))
        if calls:
            found[path.relative_to(PACKAGE).as_posix()] = calls
    assert found == GETATTR_ALLOWED
