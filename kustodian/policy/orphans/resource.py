"""The Orphan object: one untracked replica directory, shown to people as a resource.

Shaped like Longhorn's ``orphans.longhorn.io`` (``spec.nodeID``, ``spec.type``,
``spec.parameters`` with ``DataName``/``DiskName``/``DiskUUID``/``DiskPath``) so that
its tooling and habits carry over, but in Kustodian's group with Kustodian's
finalizer: deleting the object is how a person asks for the data to be removed,
and the finalizer is what holds the object until the node agent has decided.

``kustodian.io/keep-data: "true"`` makes deleting the object leave the directory in
place.  The agent sets it itself before deleting Orphans that stopped being orphans
(the directory became tracked or vanished), so that such housekeeping can never turn
into a data removal if the situation changes again before the finalizer runs.
"""

from __future__ import annotations

from typing import Any

from kustodian.policy.objects import RawObject, list_field, map_field, str_field
from kustodian.policy.orphans.model import OrphanedReplicaDir
from kustodian.policy.orphans.names import orphan_name
from kustodian.policy.store import Indexers

ORPHAN_API_VERSION = "kustodian.io/v1alpha1"
# Not "Orphan"/"orphans": Longhorn's orphans.longhorn.io owns those names, and
# ``kubectl get orphans`` must keep listing Longhorn's when both CRDs are installed.
ORPHAN_KIND = "OrphanedReplicaDir"
ORPHAN_KIND_KEY = "OrphanedReplicaDir.kustodian.io"
ORPHAN_PLURAL = "orphanedreplicadirs"
ORPHAN_FINALIZER = "kustodian.io/orphan-data"
ORPHAN_TYPE_REPLICA = "replica"
ANNOTATION_KEEP_DATA = "kustodian.io/keep-data"
LABEL_ORPHAN_TYPE = "kustodian.io/orphan-type"
CONDITION_DATA_CLEANABLE = "DataCleanable"

PARAM_DATA_NAME = "DataName"
PARAM_DISK_NAME = "DiskName"
PARAM_DISK_UUID = "DiskUUID"
PARAM_DISK_PATH = "DiskPath"

ORPHAN_BY_NODE = "orphans/orphan-by-node"


def orphan_object(orphan: OrphanedReplicaDir, *, namespace: str) -> dict[str, Any]:
    """The Orphan to create for ``orphan`` (created with its finalizer already set)."""
    return {
        "apiVersion": ORPHAN_API_VERSION,
        "kind": ORPHAN_KIND,
        "metadata": {
            "name": orphan_name(orphan.node, orphan.disk_uuid, orphan.dir_name),
            "namespace": namespace,
            "labels": {LABEL_ORPHAN_TYPE: ORPHAN_TYPE_REPLICA},
            "finalizers": [ORPHAN_FINALIZER],
        },
        "spec": {
            "nodeID": orphan.node,
            "type": ORPHAN_TYPE_REPLICA,
            "parameters": {
                PARAM_DATA_NAME: orphan.dir_name,
                PARAM_DISK_NAME: orphan.disk_name,
                PARAM_DISK_UUID: orphan.disk_uuid,
                PARAM_DISK_PATH: orphan.disk_path,
            },
        },
    }


def orphan_node(orphan: RawObject) -> str:
    return str_field(orphan, "spec", "nodeID")


def orphan_param(orphan: RawObject, key: str) -> str:
    return str_field(orphan, "spec", "parameters", key)


def keep_data(orphan: RawObject) -> bool:
    return map_field(orphan, "metadata", "annotations").get(ANNOTATION_KEEP_DATA) == "true"


def has_finalizer(orphan: RawObject) -> bool:
    return ORPHAN_FINALIZER in list_field(orphan, "metadata", "finalizers")


def orphan_node_keys(orphan: RawObject) -> list[str]:
    node = orphan_node(orphan)
    return [node] if node else []


INDEXERS: Indexers = {ORPHAN_KIND_KEY: {ORPHAN_BY_NODE: orphan_node_keys}}
