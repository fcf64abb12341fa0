"""Longhorn objects for the orphan tests, shaped as longhorn-manager writes them.

The fields are the ones of ``nodes.longhorn.io`` / ``replicas.longhorn.io`` /
``settings.longhorn.io`` in ``../shared/upstream/longhorn/crds.yaml`` (the API tests apply
that very file, so a field the CRD does not know would be pruned and the test would
notice).  ``status`` is written by longhorn-manager through the status subresource; the
API tests do the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kustodian.policy.orphans import Ownership, TrackedReplica, ownership


@dataclass
class Disk:
    name: str
    path: str
    uuid: str
    ready: bool = True
    evicted: bool = False
    scheduled: list[str] = field(default_factory=list)


def condition(ready: bool, reason: str = "", since: str = "2024-05-01T00:00:00Z") -> dict[str, str]:
    return {"type": "Ready", "status": "True" if ready else "False", "reason": reason, "message": "",
            "lastTransitionTime": since}


def node_spec(disks: Iterable[Disk], *, evict: bool = False) -> dict[str, Any]:
    return {"name": "", "allowScheduling": not evict, "evictionRequested": evict, "tags": [], "disks": {
        d.name: {"path": d.path, "allowScheduling": not d.evicted, "evictionRequested": d.evicted,
                 "diskType": "filesystem", "storageReserved": 0, "tags": []} for d in disks}}


def node_status(disks: Iterable[Disk], *, ready: bool = True, since: str = "2024-05-01T00:00:00Z") -> dict[str, Any]:
    return {
        "conditions": [condition(ready, "" if ready else "ManagerPodDown", since)],
        "diskStatus": {d.name: {"diskUUID": d.uuid, "diskName": d.name, "diskPath": d.path,
                                "diskType": "filesystem",
                                "conditions": [condition(d.ready, "" if d.ready else "DiskFilesystemChanged", since)],
                                "scheduledReplica": {r: 1073741824 for r in d.scheduled}}
                       for d in disks},
    }


def node_object(name: str, disks: Iterable[Disk], *, namespace: str = "longhorn-system", ready: bool = True,
                evict: bool = False, since: str = "2024-05-01T00:00:00Z") -> dict[str, Any]:
    disks = list(disks)
    return {"apiVersion": "longhorn.io/v1beta2", "kind": "Node",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {**node_spec(disks, evict=evict), "name": name},
            "status": node_status(disks, ready=ready, since=since)}


def owned_by(node: str, disks: Iterable[Disk], tracked: Iterable[TrackedReplica] = (),
             **kw: Any) -> Ownership:
    """The ownership verdict for a Ready Longhorn Node with ``disks`` and ``tracked`` Replicas."""
    return ownership(node, "longhorn-system", node_object(node, disks, **kw), frozenset(tracked))


def replica_object(name: str, node: str, disk_uuid: str, disk_path: str, dir_name: str,
                   namespace: str) -> Mapping[str, Any]:
    return {"apiVersion": "longhorn.io/v1beta2", "kind": "Replica",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeID": node, "diskID": disk_uuid, "diskPath": disk_path, "dataDirectoryName": dir_name,
                     "volumeName": dir_name.rsplit("-", 1)[0], "active": True, "dataEngine": "v1"}}
