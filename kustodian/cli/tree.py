"""Drawing a provider's dependents as a tree: ``explain-delete --tree`` and ``report --tree``.

Each branch holds exactly what its own DELETE's message names (``DeleteDecision.named``): the
same groups in the same order, the same names before the same ``and N more``, so the tree and
the refusal agree (a group of 50,000 PersistentVolumes is as short here as in the message). A
named dependent that is itself a provider with dependents gets a branch of its own, decided the
same way (CephCluster -> CephBlockPool -> PersistentVolumes); an object already on the path is not
entered again (Rook's object stores and zones name each other). Each branch stands alone: a PV
under a pool is named under the cluster too, because the cluster's own DELETE names it.

Pure: a view and the rules in, lines out. The caller picks the characters (``charset_for``):
box drawing on a UTF-8 terminal, plain ASCII into a pipe or a file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, TextIO

from kustodian.errors import ConfigError
from kustodian.policy.deletion import (
    DeleteDecision,
    NamedGroup,
    ObjectRef,
    RuleSet,
    decide_delete,
    short_kind,
)
from kustodian.policy.store import ClusterView

__all__ = ["ASCII", "UNICODE", "Charset", "Node", "charset_for", "decision_tree", "draw",
           "forest", "print_forest", "print_tree", "wants_tree"]


@dataclass(frozen=True)
class Node:
    """One line of the tree and the lines beneath it."""

    label: str
    children: tuple[Node, ...] = ()


class Charset(NamedTuple):
    tee: str
    last: str
    bar: str
    space: str


UNICODE = Charset("├── ", "└── ", "│   ", "    ")
ASCII = Charset("|-- ", "`-- ", "|   ", "    ")


def charset_for(stream: TextIO) -> Charset:
    """Box drawing only where it shows as such: a terminal whose encoding is UTF-8."""
    encoding = (getattr(stream, "encoding", "") or "").lower().replace("-", "").replace("_", "")
    return UNICODE if stream.isatty() and encoding == "utf8" else ASCII


def draw(root: Node, chars: Charset = ASCII) -> list[str]:
    """The tree as lines: the root, then each child behind its branch characters."""
    lines = [root.label]

    def walk(node: Node, prefix: str) -> None:
        for i, child in enumerate(node.children):
            last = i == len(node.children) - 1
            lines.append(prefix + (chars.last if last else chars.tee) + child.label)
            walk(child, prefix + (chars.space if last else chars.bar))

    walk(root, "")
    return lines


@dataclass(frozen=True)
class _Walk:
    """What every branch is decided from: the objects, the rules, the time of the decision."""

    view: ClusterView
    rules: RuleSet
    now: datetime | None

    def groups(self, decision: DeleteDecision,
               path: frozenset[ObjectRef]) -> Iterable[tuple[ObjectRef, tuple[Node, ...]]]:
        for provider, groups in decision.named:
            inner = path | {provider}
            yield provider, tuple(self.group(g, provider.namespace, inner) for g in groups)

    def group(self, group: NamedGroup, home: str, path: frozenset[ObjectRef]) -> Node:
        members = [self.member(ref, home, path) for ref in group.refs[:group.shown]]
        more = len(group.refs) - group.shown
        if more:
            members.append(Node(f"and {more} more"))
        return Node(f"{group.title} ({len(group.refs)})", tuple(members))

    def member(self, ref: ObjectRef, home: str, path: frozenset[ObjectRef]) -> Node:
        label = ref.label(home)
        if ref in path or not self.rules.for_provider(ref.kind):
            return Node(label)
        obj = self.view.get(ref.kind, ref.namespace, ref.name)
        if obj is None:
            return Node(label)
        decision = decide_delete(ref.kind, obj, self.view, self.rules, now=self.now)
        children = tuple(node for _, nodes in self.groups(decision, path) for node in nodes)
        return Node(label + _overridden(decision), children)


def _overridden(decision: DeleteDecision) -> str:
    return " (override annotation: deletable)" if decision.overridden else ""


def decision_tree(subject: ObjectRef, decision: DeleteDecision, view: ClusterView, rules: RuleSet,
                  now: datetime | None) -> Node:
    """``subject`` (a provider, or a Namespace) and what its DELETE's ``decision`` names, nested."""
    root = f'{short_kind(subject.kind)} "{subject.label()}"{_overridden(decision)}'
    branches = list(_Walk(view, rules, now).groups(decision, frozenset({subject})))
    if len(branches) == 1 and branches[0][0] == subject:  # a provider's own dependents
        return Node(root, branches[0][1])
    # a Namespace: each provider in it whose dependents outside it block the DELETE
    return Node(root, tuple(Node(f"{short_kind(p.kind)} {p.label(subject.name)}", nodes)
                            for p, nodes in branches))


def forest(providers: Sequence[tuple[ObjectRef, DeleteDecision]], view: ClusterView, rules: RuleSet,
           now: datetime | None) -> list[Node]:
    """One tree per provider that no other provider's tree already draws with its dependents
    (a CephBlockPool's branch is drawn under its CephCluster), in the order given; a provider
    only reachable through a cycle still gets a tree of its own."""
    names = {ref: [r for _, groups in d.named for g in groups for r in g.refs[:g.shown]]
             for ref, d in providers}
    nested = {r for ref, named in names.items() for r in named if r != ref and r in names}
    roots = [ref for ref, _ in providers if ref not in nested]
    drawn: set[ObjectRef] = set()

    def reach(ref: ObjectRef) -> None:
        todo = [ref]
        while todo:
            here = todo.pop()
            if here not in drawn:
                drawn.add(here)
                todo.extend(r for r in names.get(here, ()) if r in names)

    for ref in roots:
        reach(ref)
    for ref, _ in providers:
        if ref not in drawn:
            roots.append(ref)
            reach(ref)
    decisions = dict(providers)
    order = {ref: i for i, (ref, _) in enumerate(providers)}
    return [decision_tree(ref, decisions[ref], view, rules, now)
            for ref in sorted(roots, key=order.__getitem__)]


# -- the command line's side: the flag, and printing to stdout --------------------------------


def wants_tree(args: argparse.Namespace) -> bool:
    """``--tree`` is a drawing for people: with ``-o json|yaml`` it would change nothing, so say so."""
    if not getattr(args, "tree", False):
        return False
    if args.output != "table":
        raise ConfigError.at(f"--tree with -o {args.output}", "the tree is drawn for the table output only; "
                             "the JSON and YAML already list every dependent")
    return True


def print_tree(subject: ObjectRef, decision: DeleteDecision, view: ClusterView, rules: RuleSet,
               now: datetime | None) -> None:
    print("\n".join(draw(decision_tree(subject, decision, view, rules, now), charset_for(sys.stdout))))


def print_forest(providers: Iterable[ObjectRef], view: ClusterView, rules: RuleSet,
                 now: datetime | None) -> None:
    """The trees of ``providers`` (as ``forest`` picks them), a blank line between two."""
    decided = []
    for ref in providers:
        obj = view.get(ref.kind, ref.namespace, ref.name)
        if obj is not None:
            decided.append((ref, decide_delete(ref.kind, obj, view, rules, now=now)))
    chars = charset_for(sys.stdout)
    print("\n\n".join("\n".join(draw(tree, chars)) for tree in forest(decided, view, rules, now)))
