"""Why a disk, a directory or an Orphan is (not) acted on.

CamelCase like Kubernetes condition reasons: the same word goes into the Orphan's
``DataCleanable`` condition, the agent's log line and a metric label.  A ``StrEnum``
so that callers can compare with plain strings.
"""

from __future__ import annotations

from enum import StrEnum


class OrphanReason(StrEnum):
    # disk_condition
    DISK_OK = "DiskOK"
    DISK_UNREADABLE = "DiskUnreadable"
    DISK_UUID_UNKNOWN = "DiskUUIDUnknown"
    DISK_UUID_MISMATCH = "DiskUUIDMismatch"
    DISK_FILESYSTEM_UNKNOWN = "DiskFilesystemUnknown"
    DISK_FILESYSTEM_SHARED = "DiskFilesystemShared"
    # ownership (policy.orphans.ownership)
    OWNERSHIP_KNOWN = "OwnershipKnown"
    LONGHORN_NODE_MISSING = "LonghornNodeMissing"
    REPLICAS_INCONSISTENT = "ReplicasInconsistent"
    NODE_EVICTED = "NodeEvicted"
    DISK_EVICTED = "DiskEvicted"
    MASS_ORPHAN_BRAKE = "MassOrphanBrake"
    DEFERRED_DELETE = "DeferredDelete"
    # DataCleanable condition
    CLEANABLE = "Cleanable"
    NODE_UNAVAILABLE = "NodeUnavailable"
    PARAMETERS_INVALID = "ParametersInvalid"
    DATA_NAME_INVALID = "DataNameInvalid"
    DISK_INVALID = "DiskInvalid"
    DISK_CHANGED = "DiskChanged"
    DATA_MISSING = "DataMissing"
    DATA_INVALID = "DataInvalid"
    DATA_TRACKED = "DataTracked"
    TRACKING_UNKNOWN = "TrackingUnknown"
    # cleanup_decision
    KEEP_DATA = "KeepData"
    NO_FINALIZER = "NoFinalizer"
    AUTO_DELETE_DISABLED = "AutoDeleteDisabled"
    GRACE_PENDING = "GracePending"
    NO_CREATION_TIMESTAMP = "NoCreationTimestamp"
    AUTO_DELETE = "AutoDelete"
    MISSING_UID = "MissingUID"
