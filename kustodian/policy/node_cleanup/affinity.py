"""Which nodes a local PV is pinned to, read from its required nodeAffinity.

A local PV names its node through ``spec.nodeAffinity.required.nodeSelectorTerms``.
Kubernetes ORs the terms and ANDs the expressions inside a term, so the nodes a PV
may live on are the union over terms of the intersection of each term's ``In``
values.  We only interpret the one shape the local static provisioner writes
(``kubernetes.io/hostname In [...]``): anything else (another key, ``NotIn``,
``Exists``, ``matchFields``, an empty or contradictory term) means we do not know
where the data lives, and a PV whose location we do not know is never stale.  The
parser is deliberately strict because its only consumer deletes things.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kustodian.policy.node_cleanup.reasons import NodeCleanupReason
from kustodian.policy.objects import RawObject, field, list_field

HOSTNAME_LABEL = "kubernetes.io/hostname"
_TERMS_PATH = "spec.nodeAffinity.required.nodeSelectorTerms"


@dataclass(frozen=True)
class AffinityNodes:
    """The node names a PV is pinned to, or why they cannot be known.

    ``node_names`` is empty exactly when ``skip_reason`` is set.
    """

    node_names: frozenset[str]
    skip_reason: NodeCleanupReason | None = None
    detail: str = ""


def _skip(reason: NodeCleanupReason, detail: str) -> AffinityNodes:
    return AffinityNodes(frozenset(), reason, detail)


def _expression_values(expr: object, path: str) -> frozenset[str] | AffinityNodes:
    if not isinstance(expr, Mapping):
        return _skip(NodeCleanupReason.MALFORMED_NODE_AFFINITY, f"{path}: must be an object")
    key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values")
    if not isinstance(key, str) or not isinstance(operator, str):
        return _skip(NodeCleanupReason.MALFORMED_NODE_AFFINITY, f"{path}: key and operator must be strings")
    if key != HOSTNAME_LABEL:
        return _skip(NodeCleanupReason.UNSUPPORTED_KEY, f"{path}.key: {key!r} is not {HOSTNAME_LABEL}")
    if operator != "In":
        return _skip(NodeCleanupReason.UNSUPPORTED_OPERATOR, f"{path}.operator: {operator!r} is not In")
    if not isinstance(values, list) or not values or not all(isinstance(v, str) and v for v in values):
        return _skip(NodeCleanupReason.MALFORMED_NODE_AFFINITY,
                     f"{path}.values: must be a non-empty list of names")
    return frozenset(values)


def affinity_node_names(pv: RawObject) -> AffinityNodes:
    """The nodes named by ``pv``'s required nodeAffinity (terms union, expressions intersect)."""
    affinity = field(pv, "spec", "nodeAffinity")
    if affinity is None:
        return _skip(NodeCleanupReason.NO_NODE_AFFINITY, "spec.nodeAffinity: absent")
    terms = field(affinity, "required", "nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        return _skip(NodeCleanupReason.MALFORMED_NODE_AFFINITY, f"{_TERMS_PATH}: must be a non-empty list")
    names: set[str] = set()
    for i, term in enumerate(terms):
        term_path = f"{_TERMS_PATH}[{i}]"
        if not isinstance(term, Mapping):
            return _skip(NodeCleanupReason.MALFORMED_NODE_AFFINITY, f"{term_path}: must be an object")
        if term.get("matchFields"):
            return _skip(NodeCleanupReason.UNSUPPORTED_KEY, f"{term_path}.matchFields: not interpreted")
        expressions = term.get("matchExpressions")
        if not isinstance(expressions, list) or not expressions:
            # An empty term selects no node: it does not tell us where the data is.
            return _skip(NodeCleanupReason.MALFORMED_NODE_AFFINITY,
                         f"{term_path}.matchExpressions: must be a non-empty list")
        term_names: frozenset[str] | None = None
        for j, expr in enumerate(expressions):
            values = _expression_values(expr, f"{term_path}.matchExpressions[{j}]")
            if isinstance(values, AffinityNodes):
                return values
            term_names = values if term_names is None else term_names & values
        if not term_names:
            return _skip(NodeCleanupReason.MALFORMED_NODE_AFFINITY,
                         f"{term_path}: expressions select no node")
        names |= term_names
    return AffinityNodes(frozenset(names))


def referenced_hostnames(pv: RawObject) -> list[str]:
    """Every ``kubernetes.io/hostname In`` value anywhere in ``pv``'s required terms.

    Lenient on purpose: it feeds the by-node index, which only has to find the
    candidates a Node event concerns; :func:`affinity_node_names` then decides.
    """
    found: set[str] = set()
    for term in list_field(pv, "spec", "nodeAffinity", "required", "nodeSelectorTerms"):
        for expr in list_field(term, "matchExpressions"):
            if field(expr, "key") == HOSTNAME_LABEL and field(expr, "operator") == "In":
                found.update(v for v in list_field(expr, "values") if isinstance(v, str) and v)
    return sorted(found)
