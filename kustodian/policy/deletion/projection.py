"""Which fields of which kinds the deletion rules read: what a watch cache must keep.

A dependent found through an index is only *named* (kind, namespace, name); the
fields its index keys come from are read by the indexers, again when the cache
files the object away and again when it removes it.  So a cache of a dependent
kind may keep exactly the fields its indexers and lookups read, plus identity,
and drop the rest (client-go's ``SetTransform``).  50,000 PersistentVolumes cost a
third of what they cost whole.

Derived from the rules themselves, per matcher, so an admin rule that reads one
more field keeps it.  A kind is projected only when every rule that touches it
says exactly what it reads; otherwise (a provider, whose pools and annotations
are read; a hop read through a derivation such as CSI clusterIDs or COSI
parameters; a ``pool-ref`` with list wildcards) it is kept whole.  Keeping too
much only costs memory; keeping too little would make a guard blind, so every
doubt keeps the object.
"""

from __future__ import annotations

from collections.abc import Iterable

from kustodian.policy.deletion.indexing import path
from kustodian.policy.deletion.matchers import index_specs
from kustodian.policy.deletion.rook_matchers import GROUP_VOLUME_READS
from kustodian.policy.deletion.rules import RuleSet
from kustodian.policy.deletion.schema import (
    Condition,
    CsiVolume,
    FieldRef,
    Rule,
    SameNamespace,
    StorageClassRef,
    ViaRef,
)

FieldPath = tuple[str, ...]

IDENTITY: tuple[FieldPath, ...] = (
    ("metadata", "name"), ("metadata", "namespace"), ("metadata", "uid"), ("metadata", "resourceVersion"),
    ("metadata", "deletionTimestamp"),
)
"""Kept on every projected object: how caches key, compare and name objects."""


def _where(conditions: Iterable[Condition]) -> set[FieldPath]:
    return {path(c.field) for c in conditions}


def _dependent_reads(rule: Rule) -> set[FieldPath] | None:
    """The fields ``rule`` reads on its dependent kind, or None when it cannot say exactly."""
    match rule.match:
        case SameNamespace() as m:
            return _where(m.where)
        case FieldRef() | ViaRef() as m:
            reads = {path(m.field)} | (_where(m.where) if isinstance(m, FieldRef) else set())
            if m.namespace_field:
                reads.add(path(m.namespace_field))
            return reads
        case CsiVolume() as m:
            attrs = (m.cluster_id_attribute, *m.pool_attributes, *m.name_attributes)
            return {("spec", "csi", "driver")} | {("spec", "csi", "volumeAttributes", a) for a in attrs}
        case StorageClassRef() as m:
            return {path(m.field)} | {path(f) for f in m.unless_set}
    return None


def fields_read(rules: RuleSet, keep_whole: Iterable[str] = ()) -> dict[str, tuple[FieldPath, ...]]:
    """Per kind the rules read, the field paths to keep (identity included); kinds absent from
    the answer, and the kinds in ``keep_whole`` (read by someone else), are kept whole."""
    reads: dict[str, set[FieldPath] | None] = {}

    def add(kind: str, found: set[FieldPath] | None) -> None:
        have = reads.get(kind, set())
        reads[kind] = None if have is None or found is None else have | found

    for rule in rules.rules:
        add(rule.dependent, _dependent_reads(rule))
        for spec in index_specs(rule):
            if spec.name in GROUP_VOLUME_READS:  # PVs read as a hop, field by field
                add(spec.kind, set(GROUP_VOLUME_READS[spec.name]))
            elif spec.kind != rule.dependent:
                add(spec.kind, None)  # a hop (StorageClass, clusterID children, skipIf objects)
    for kind in (*rules.provider_kinds(), *keep_whole):
        reads[kind] = None
    return {kind: tuple(sorted(set(IDENTITY) | found)) for kind, found in sorted(reads.items())
            if found is not None}

