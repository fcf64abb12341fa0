"""Why a local PV is (not) stale, and why the controllers act or hold back.

Every decision in :mod:`policy.node_cleanup` carries one of these reasons.  They are
CamelCase like Kubernetes condition and event reasons so that a log line, a metric
label and an Event can all use the same word, and a ``StrEnum`` so that callers may
compare them with plain strings.
"""

from __future__ import annotations

from enum import StrEnum


class NodeCleanupReason(StrEnum):
    # The PV is out of scope: we never touch it.
    NOT_LOCAL = "NotLocal"
    NOT_OPTED_IN = "NotOptedIn"
    # The PV is in scope but its nodeAffinity cannot be read with certainty.
    NO_NODE_AFFINITY = "NoNodeAffinity"
    MALFORMED_NODE_AFFINITY = "MalformedNodeAffinity"
    UNSUPPORTED_OPERATOR = "UnsupportedOperator"
    UNSUPPORTED_KEY = "UnsupportedKey"
    # What the node lookup found.
    NODE_LOOKUP_FAILED = "NodeLookupFailed"
    NODE_EXISTS = "NodeExists"
    NODE_MISSING = "NodeMissing"
    NODE_RECREATED = "NodeRecreated"
    # Claim checks made just before a PVC delete.
    NO_CLAIM = "NoClaimRef"
    CLAIM_NOT_FOUND = "ClaimNotFound"
    CLAIM_NOT_BOUND = "ClaimNotBoundToVolume"
    CLAIM_DELETING = "ClaimDeleting"
    MISSING_UID = "MissingUID"
    # The volume step (upstream's deleter).
    PV_DELETING = "VolumeDeleting"
    PHASE_NOT_DELETABLE = "PhaseNotDeletable"
    RECLAIM_NOT_DELETE = "ReclaimPolicyNotDelete"
    DELAY_ELAPSED = "DelayElapsed"
