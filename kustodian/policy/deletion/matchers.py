"""One place that maps each matcher type to its indexes and its lookup.

``RuleSet.indexers()`` and the decision both go through here, so adding a
matcher type means adding one line to each table below, and the two can never
disagree about which index a matcher reads.
"""

from __future__ import annotations

from kustodian.policy.deletion.indexing import (
    IndexSpec,
    Leaf,
    Provider,
    field_ref_indexes,
    leaves_field_ref,
    leaves_same_namespace,
    leaves_via_ref,
    lookup_leaves,
    same_namespace_indexes,
    skip_index,
    via_ref_indexes,
)
from kustodian.policy.deletion.indexing import rule_skipped as skip_if_holds
from kustodian.policy.deletion.rook_matchers import (
    caps_pool_indexes,
    cosi_bucket_indexes,
    csi_volume_indexes,
    find_multisite_peer_zones,
    leaves_caps_pool,
    leaves_cosi_bucket,
    leaves_csi_volume,
    leaves_pool_ref,
    leaves_storage_class_ref,
    multisite_indexes,
    multisite_peer_zones_indexes,
    pool_ref_indexes,
    serves_peer_zone,
    storage_class_ref_indexes,
)
from kustodian.policy.deletion.schema import (
    CapsPool,
    CosiBucket,
    CsiVolume,
    FieldRef,
    MultisitePeerZones,
    PoolRef,
    Rule,
    SameNamespace,
    StorageClassRef,
    ViaRef,
)
from kustodian.policy.objects import RawObject
from kustodian.policy.store import ClusterView


def index_specs(rule: Rule) -> list[IndexSpec]:
    """Every index ``rule`` needs, on whichever kinds it reads."""
    match rule.match:
        case SameNamespace() as m:
            specs = same_namespace_indexes(rule, m)
        case FieldRef() as m:
            specs = field_ref_indexes(rule, m)
        case ViaRef() as m:
            specs = via_ref_indexes(rule, m)
        case PoolRef() as m:
            specs = pool_ref_indexes(rule, m)
        case CapsPool() as m:
            specs = caps_pool_indexes(rule, m)
        case CsiVolume() as m:
            specs = csi_volume_indexes(rule, m)
        case StorageClassRef() as m:
            specs = storage_class_ref_indexes(rule, m)
        case CosiBucket() as m:
            specs = cosi_bucket_indexes(rule, m)
        case MultisitePeerZones() as m:
            specs = multisite_peer_zones_indexes(rule, m)
    if rule.skip_if is not None:
        specs.append(skip_index(rule.skip_if))
    if rule.skip_in_peer_zone:
        specs += multisite_indexes()
    return specs


def rule_skipped(rule: Rule, provider: Provider, view: ClusterView) -> bool:
    """True when the rule does not apply to ``provider`` now (``skipIf``, ``skipInPeerZone``)."""
    if skip_if_holds(rule, provider, view):
        return True
    return rule.skip_in_peer_zone and serves_peer_zone(provider, view)


def find_leaves(rule: Rule, provider: Provider, view: ClusterView) -> list[Leaf] | None:
    """The last hop of ``rule`` for ``provider`` (``indexing.Leaf``), or None for a matcher whose
    answer is not a plain lookup (the multisite peers leave the provider's own zone out)."""
    match rule.match:
        case SameNamespace() as m:
            return leaves_same_namespace(rule, m, provider, view)
        case FieldRef() as m:
            return leaves_field_ref(rule, m, provider, view)
        case ViaRef() as m:
            return leaves_via_ref(rule, m, provider, view)
        case PoolRef() as m:
            return leaves_pool_ref(rule, m, provider, view)
        case CapsPool() as m:
            return leaves_caps_pool(rule, m, provider, view)
        case CsiVolume() as m:
            return leaves_csi_volume(rule, m, provider, view)
        case StorageClassRef() as m:
            return leaves_storage_class_ref(rule, m, provider, view)
        case CosiBucket() as m:
            return leaves_cosi_bucket(rule, m, provider, view)
        case MultisitePeerZones():
            return None


def find_dependents(rule: Rule, provider: Provider, view: ClusterView) -> list[RawObject]:
    """Objects of ``rule.dependent`` matching ``provider`` (may repeat an object; callers dedupe)."""
    leaves = find_leaves(rule, provider, view)
    if leaves is not None:
        return lookup_leaves(view, leaves)
    assert isinstance(rule.match, MultisitePeerZones)
    return find_multisite_peer_zones(rule, rule.match, provider, view)
