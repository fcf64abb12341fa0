"""The one place the orphan controller reads: :func:`gather` fills an :class:`OrphanCleanupInput`.

Two sources answer the same three questions (this Orphan, this node's disks, who owns
what): :class:`OrphanCacheSource` from what the agent already holds (the Orphan cache, the
monitor's last scans, Longhorn's watch caches), for every pass, and :class:`OrphanApiSource`
from the API server itself and a fresh disk read, to confirm an act on a deleting Orphan
(a lagging cache or a scan from before a change must not remove data).  The decision never
knows which one it was given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from kustodian.controllers.orphans.quarantine import probe_quarantine
from kustodian.controllers.orphans.scan import probe_replica_dir
from kustodian.controllers.orphans.tracker import ReplicaTracker
from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.resources import Resource
from kustodian.policy.objects import str_field
from kustodian.policy.orphans import (
    ORPHAN_BY_NODE,
    PARAM_DATA_NAME,
    PARAM_DISK_PATH,
    DirProbe,
    DiskScan,
    OrphanCleanupInput,
    OrphanCleanupRules,
    OrphanSyncInput,
    Ownership,
    QuarantineProbe,
    orphan_param,
    safe_target,
)

Scans = Callable[[], Sequence[DiskScan]]


class OrphanCleanupSource(Protocol):
    """Where a gather reads from; the ownership says itself when it is unknown, it never guesses."""

    def orphan(self, namespace: str, name: str) -> Obj | None:
        """The Orphan, or ``None`` when it does not exist."""
        ...

    def scans(self) -> Sequence[DiskScan]:
        """This node's configured disks."""
        ...

    def ownership(self) -> Ownership:
        """Longhorn's ownership verdict for this node."""
        ...

    def orphans(self) -> list[Obj]:
        """This node's Orphans."""
        ...


class OrphanCacheSource:
    """The Orphan cache, the monitor's last scans (a disk read only before its first), Longhorn's caches."""

    def __init__(self, node: str, orphans: WatchCache, tracker: ReplicaTracker, *, last_scans: Scans,
                 scan_now: Scans) -> None:
        self._node, self._orphans, self._tracker = node, orphans, tracker
        self._last_scans, self._scan_now = last_scans, scan_now

    def orphan(self, namespace: str, name: str) -> Obj | None:
        return self._orphans.get(namespace, name)

    def scans(self) -> Sequence[DiskScan]:
        return self._last_scans() or self._scan_now()

    def ownership(self) -> Ownership:
        return self._tracker.ownership()

    def orphans(self) -> list[Obj]:
        return self._orphans.by_index(ORPHAN_BY_NODE, self._node)


class OrphanApiSource:
    """The API server itself (the Orphan, Longhorn's Node and Replicas) and the disks read just now."""

    def __init__(self, client: KubeClient, resource: Resource, tracker: ReplicaTracker, *, node: str,
                 namespace: str, scan_now: Scans) -> None:
        self._node, self._namespace = node, namespace
        self._client, self._resource, self._tracker, self._scan_now = client, resource, tracker, scan_now

    def orphan(self, namespace: str, name: str) -> Obj | None:
        # a list by name, not a GET: the agent's Role grants Orphans list and watch, not get
        found = self._client.list(self._resource, namespace, field_selector=f"metadata.name={name}")[0]
        return found[0] if found else None

    def scans(self) -> Sequence[DiskScan]:
        return self._scan_now()

    def ownership(self) -> Ownership:
        return self._tracker.ownership(fresh=True)

    def orphans(self) -> list[Obj]:
        return [o for o in self._client.list(self._resource, self._namespace)[0]
                if str_field(o, "spec", "nodeID") == self._node]


def gather(source: OrphanCleanupSource, namespace: str, name: str, rules: OrphanCleanupRules,
           held_disks: Mapping[str, str]) -> OrphanCleanupInput | None:
    """Everything one decision about Orphan ``namespace/name`` reads, from ``source``; ``None``: no such
    Orphan.

    ``held_disks`` are the mass-orphan brakes the monitor computed on its last scan: both
    gathers carry the same ones (a brake only holds auto-deletion, never a requested delete).
    The Orphan's directory is looked at during the gather itself, from whichever source
    (:func:`controllers.orphans.scan.probe_replica_dir`: ``volume.meta`` read again, the
    newest modification time): live data is told by a fresh look, never by the cached scan;
    its place in the disk's quarantine is looked at the same way
    (:func:`controllers.orphans.quarantine.probe_quarantine`).
    """
    obj = source.orphan(namespace, name)
    if obj is None:
        return None
    scans, owners = tuple(source.scans()), source.ownership()
    return OrphanCleanupInput(obj, scans, owners, dict(held_disks), rules, _probe(obj), _in_quarantine(obj))


def _probe(obj: Obj) -> DirProbe | None:
    disk_path, data_name = orphan_param(obj, PARAM_DISK_PATH), orphan_param(obj, PARAM_DATA_NAME)
    if not disk_path or not data_name or safe_target(disk_path, data_name) is None:
        return None
    return probe_replica_dir(disk_path, data_name)


def _in_quarantine(obj: Obj) -> QuarantineProbe | None:
    disk_path, data_name = orphan_param(obj, PARAM_DISK_PATH), orphan_param(obj, PARAM_DATA_NAME)
    if not disk_path or not data_name or safe_target(disk_path, data_name) is None:
        return None
    return probe_quarantine(disk_path, data_name)


def gather_sync(source: OrphanCleanupSource, node: str) -> OrphanSyncInput:
    """Everything one monitor decision reads, from ``source``: the disks, the ownership, the Orphans."""
    return OrphanSyncInput(node, tuple(source.scans()), source.ownership(), tuple(source.orphans()))
