"""What the deletion guard reads: its kinds, their indexers, and the fields its caches keep."""

from __future__ import annotations

from collections.abc import Iterable

from kustodian.policy.deletion import FieldPath, RuleSet, fields_read
from kustodian.policy.store import Indexer

__all__ = ["CEPH_CLUSTER", "NAMESPACE", "cache_projections", "needed_kinds"]

NAMESPACE = "Namespace"
CEPH_CLUSTER = "CephCluster.ceph.rook.io"


def needed_kinds(rules: RuleSet) -> dict[str, dict[str, Indexer]]:
    """Every kind the guard reads, with the indexers the rules declare."""
    kinds: dict[str, dict[str, Indexer]] = {k: {} for k in rules.provider_kinds() | rules.dependent_kinds()}
    kinds.setdefault(CEPH_CLUSTER, {})  # cleanupPolicy.allowUninstallWithVolumes
    kinds.setdefault(NAMESPACE, {})  # a terminating Namespace lets its own dependents go (teardown)
    for kind, named in rules.indexers().items():
        kinds.setdefault(kind, {}).update(named)
    return kinds


def cache_projections(rules: RuleSet, read_elsewhere: Iterable[str] = ()) -> dict[str, tuple[FieldPath, ...]]:
    """Per kind, the fields the guard's caches keep (``policy.deletion.projection``); kinds the
    guard reads beyond its rules (Namespace, CephCluster) and ``read_elsewhere`` (kinds another
    feature reads from the same caches) are kept whole."""
    return fields_read(rules, (NAMESPACE, CEPH_CLUSTER, *read_elsewhere))
