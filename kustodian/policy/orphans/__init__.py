"""Find and remove orphaned Longhorn replica directories, safely (pure decisions).

An orphaned replica directory is data on a Longhorn disk that no Replica object
accounts for: left behind when a node or disk was away while its replicas were
deleted, or brought in on a disk from another cluster.  Longhorn's own cleanup
(enhancement 20220324) lists them as ``Orphan`` objects and deletes them on request;
its issues show what goes wrong around that: disks swapped under the same path,
bind mounts seen twice, replicas deleted while being rebuilt, paths built from
names nobody checked.

This package holds every decision and none of the I/O: the node agent scans disks
into :class:`DiskScan` (``controllers.orphans.scan``), lists Replica objects into
:class:`TrackedReplica`, and asks :func:`find_orphans` / :func:`sync_orphans` what to
report and :func:`decide_orphan_cleanup` (over one frozen :class:`OrphanCleanupInput`)
what to remove.  Paths are computed here with
string arithmetic only (:func:`safe_target`), and the agent re-verifies the disk
identity right before it removes anything.
"""

from kustodian.policy.orphans.cleanup import (
    Cleanability,
    DeleteOrphan,
    DropFinalizer,
    NoAction,
    OrphanAction,
    OrphanDecision,
    RemoveDir,
    Wait,
    cleanup_decision,
    data_cleanability,
    data_cleanable_condition,
)
from kustodian.policy.orphans.detect import (
    DiskCondition,
    OrphanSync,
    PruneOrphan,
    disk_condition,
    disk_verdict,
    find_orphans,
    is_orphan_candidate,
    replica_dir_count,
    sync_orphans,
)
from kustodian.policy.orphans.inputs import (
    OrphanCleanupInput,
    OrphanCleanupRules,
    OrphanSyncInput,
    confirms,
    confirms_prune,
    decide_orphan_cleanup,
    decide_orphan_sync,
)
from kustodian.policy.orphans.meta import (
    MAX_VOLUME_META_BYTES,
    VOLUME_META_FILE,
    VolumeMeta,
    parse_volume_meta,
)
from kustodian.policy.orphans.model import (
    DiskScan,
    OrphanedReplicaDir,
    ReplicaDirEntry,
    TrackedReplica,
    tracked_replica,
    tracked_replicas,
)
from kustodian.policy.orphans.names import (
    REPLICAS_DIR,
    ReplicaDirName,
    is_replica_dir_name,
    normalize_disk_path,
    orphan_name,
    parse_replica_dir_name,
    safe_target,
)
from kustodian.policy.orphans.ownership import (
    AutoDeletion,
    LonghornDisk,
    LonghornNode,
    MassOrphanBrake,
    Ownership,
    auto_deletion,
    deferred_delete,
    longhorn_disk_verdict,
    longhorn_node,
    mass_orphan_brake,
    ownership,
)
from kustodian.policy.orphans.reasons import OrphanReason
from kustodian.policy.orphans.resource import (
    ANNOTATION_KEEP_DATA,
    CONDITION_DATA_CLEANABLE,
    INDEXERS,
    ORPHAN_API_VERSION,
    ORPHAN_BY_NODE,
    ORPHAN_FINALIZER,
    ORPHAN_KIND,
    ORPHAN_KIND_KEY,
    orphan_object,
)

DISK_CONFIG_FILE = "longhorn-disk.cfg"

__all__ = [
    "ANNOTATION_KEEP_DATA",
    "CONDITION_DATA_CLEANABLE",
    "DISK_CONFIG_FILE",
    "INDEXERS",
    "MAX_VOLUME_META_BYTES",
    "ORPHAN_API_VERSION",
    "ORPHAN_BY_NODE",
    "ORPHAN_FINALIZER",
    "ORPHAN_KIND",
    "ORPHAN_KIND_KEY",
    "REPLICAS_DIR",
    "VOLUME_META_FILE",
    "AutoDeletion",
    "Cleanability",
    "DeleteOrphan",
    "DiskCondition",
    "DiskScan",
    "DropFinalizer",
    "LonghornDisk",
    "LonghornNode",
    "MassOrphanBrake",
    "NoAction",
    "OrphanAction",
    "OrphanCleanupInput",
    "OrphanCleanupRules",
    "OrphanDecision",
    "OrphanReason",
    "OrphanSync",
    "OrphanSyncInput",
    "OrphanedReplicaDir",
    "Ownership",
    "PruneOrphan",
    "RemoveDir",
    "ReplicaDirEntry",
    "ReplicaDirName",
    "TrackedReplica",
    "VolumeMeta",
    "Wait",
    "auto_deletion",
    "cleanup_decision",
    "confirms",
    "confirms_prune",
    "data_cleanability",
    "data_cleanable_condition",
    "decide_orphan_cleanup",
    "decide_orphan_sync",
    "deferred_delete",
    "disk_condition",
    "disk_verdict",
    "find_orphans",
    "is_orphan_candidate",
    "is_replica_dir_name",
    "longhorn_disk_verdict",
    "longhorn_node",
    "mass_orphan_brake",
    "normalize_disk_path",
    "orphan_name",
    "orphan_object",
    "ownership",
    "parse_replica_dir_name",
    "parse_volume_meta",
    "replica_dir_count",
    "safe_target",
    "sync_orphans",
    "tracked_replica",
    "tracked_replicas",
]
