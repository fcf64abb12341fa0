"""The error tree drawn at the top of ``kustodian/errors.py`` is the tree the package has.

Every module of the package is imported and every exception class it defines is collected
with its first base; the drawing is parsed the same way (a node's parent is the nearest line
above it drawn further left).  Both must be equal: a class added, renamed, moved to another
module or re-parented without redrawing fails here, and so does a drawn class that is gone.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import kustodian
import kustodian.errors
from kustodian.errors import EXIT_CONFIG, ConfigError, FieldProblem, KustodianError

# Private control-flow exceptions: raised and caught inside one function, never seen by a
# caller, so they stay out of the drawing.  Listed here so that a new one is a decision.
PRIVATE = {
    "kustodian.controllers.orphans.scan._UnsafeToRemoveError",
    "kustodian.policy.reclaim.schedule._FieldError",
}

_NODE = re.compile(r"^(?P<lead>[ │]*[├└]── )?(?P<name>[A-Za-z_]\w*)\s+(?P<module>[a-z_][\w.]*)(?:\s|$)")


def drawn_tree() -> dict[str, str | None]:
    """``qualified class name -> qualified parent`` (``None`` for a root) from the docstring."""
    doc = kustodian.errors.__doc__
    assert doc is not None
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if line.rstrip().endswith("::")) + 1
    block: list[str] = []
    for line in lines[start:]:
        if line.strip() and not line.startswith("    "):
            break
        block.append(line[4:])
    tree: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []  # (column of the name, qualified name)
    for line in block:
        if not line.strip() or (line[0] in " │" and "── " not in line):
            continue  # blank, or a comment continued under its node
        m = _NODE.match(line)
        assert m, f"cannot read this line of the drawing: {line!r}"
        column = m.start("name")
        module = m["module"] if m["module"] == "builtins" else f"kustodian.{m['module']}"
        qualified = f"{module}.{m['name']}"
        while stack and stack[-1][0] >= column:
            stack.pop()
        assert m["lead"] or not stack, f"a root must start at the left margin: {line!r}"
        tree[qualified] = stack[-1][1] if stack else None
        stack.append((column, qualified))
    return {name: parent for name, parent in tree.items() if not name.startswith("builtins.")}


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def package_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined at module level anywhere in ``kustodian``."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(kustodian.__path__, "kustodian."):
        if info.name == "kustodian.__main__":
            continue  # runs the command line when imported
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, BaseException)
                    and value.__module__ == module.__name__):
                found[_qualified(value)] = value
    return found


def actual_tree() -> dict[str, str | None]:
    tree: dict[str, str | None] = {}
    for name, cls in package_exceptions().items():
        if name in PRIVATE:
            continue
        base = cls.__bases__[0]
        tree[name] = None if base is Exception else _qualified(base)
    return tree


def test_the_drawing_reads_as_a_tree() -> None:
    drawn = drawn_tree()
    assert drawn["kustodian.errors.KustodianError"] is None
    assert drawn["kustodian.policy.reclaim.config.ReclaimConfigError"] == "kustodian.errors.ConfigError"
    assert drawn["kustodian.kube.errors.AlreadyExists"] == "kustodian.kube.errors.Conflict"
    assert drawn["kustodian.testing.image.ImageError"] == "builtins.RuntimeError"


def test_the_drawn_error_tree_is_the_class_tree() -> None:
    drawn, actual = drawn_tree(), actual_tree()
    missing = sorted(set(actual) - set(drawn))
    gone = sorted(set(drawn) - set(actual))
    assert not missing, f"defined but not drawn in kustodian/errors.py: {missing}"
    assert not gone, f"drawn in kustodian/errors.py but not defined: {gone}"
    moved = {name: (drawn[name], actual[name]) for name in actual if drawn[name] != actual[name]}
    assert not moved, f"drawn under one parent, derived from another (drawn, actual): {moved}"


def test_the_private_exceptions_are_still_there() -> None:
    found = package_exceptions()
    private = {name for name in found if name.rsplit(".", 1)[1].startswith("_")}
    assert private == PRIVATE, "a private exception was added or removed: update PRIVATE"


def test_every_input_error_is_a_config_error() -> None:
    """Exit 2 means a ConfigError with its FieldProblems, and no exception of ours is a bare
    ValueError beside the tree (the CLI no longer treats ValueError as a user mistake)."""
    for name, cls in package_exceptions().items():
        if name in PRIVATE:
            continue
        if issubclass(cls, KustodianError) and cls.exit_code == EXIT_CONFIG:
            assert issubclass(cls, ConfigError), name
        if issubclass(cls, ValueError):
            assert issubclass(cls, ConfigError), f"{name} is a ValueError outside ConfigError"


def test_a_config_error_reads_one_line_per_problem_or_inline() -> None:
    from kustodian.policy.deletion import RuleError

    one = ConfigError.at("--from /x", "no such directory")
    assert str(one) == "--from /x: no such directory" and list(one.lines()) == [str(one)]
    assert one.problems == (FieldProblem("--from /x", "no such directory"),)
    two = ConfigError("invalid settings", [FieldProblem("--a", "bad"), FieldProblem("", "worse")])
    assert list(two.lines()) == ["invalid settings: --a: bad", "invalid settings: worse"]
    rules = RuleError([FieldProblem("r[0].kind", "required"), FieldProblem("r[1]", "must be a mapping")])
    assert str(rules) == "invalid deletion rules: r[0].kind: required; r[1]: must be a mapping"
    assert list(rules.lines()) == [str(rules)]  # the one-line form it always had
    for text in ('ips[1] "10.0.0.300": not an IP address', "no path here", "a: b: c"):
        assert str(FieldProblem.parse(text)) == text
    assert FieldProblem.parse("a: b: c") == FieldProblem("a", "b: c")
