"""``kustodian node-agent``: report orphaned replica directories as Orphans, remove them on request.

One agent per node (a DaemonSet), four loops that never wait for each other:

* the **monitor** (a runnable loop) scans the configured disks every ``scan_interval``
  (:func:`controllers.orphans.scan.scan_disk` reuses what did not change), asks
  Longhorn who owns what (:mod:`controllers.orphans.tracker`: this node's Longhorn Node,
  the Replicas; an unknown answer is reported, never read as "nothing is owned"),
  checks each disk's identity and Longhorn's view of it, reports what it cannot trust
  (``Ownership`` and per-disk ``Ready`` / ``AutoDeleteHeld`` conditions in ConfigMap
  ``kustodian-disks-<node>`` + Warning events) and, only when the scans, the ownership
  or this node's Orphans changed, asks :func:`policy.orphans.decide_orphan_sync` (over one
  frozen ``OrphanSyncInput``) which Orphans to create and which to prune, and prunes only
  what the same decision on a gather from the API server prunes too;
* the **orphan controller** (a reconciler on the Manager)
  reconciles each Orphan of this node, gather -> decide -> act: it gathers one frozen
  :class:`policy.orphans.OrphanCleanupInput` from what it holds
  (:mod:`controllers.orphans.gather`), :func:`policy.orphans.decide_orphan_cleanup`
  decides, and it keeps the ``DataCleanable`` condition and ``status.state`` current,
  auto-deletes after the grace period when enabled, and, once the object is being deleted,
  moves the directory into the disk's quarantine or only drops the finalizer.  That act is
  confirmed first: the same decision on a gather from the API server and a *fresh* disk read,
  compared with the first (:func:`policy.orphans.confirms`).
  :func:`controllers.orphans.quarantine.quarantine_replica_dir` makes every check a removal makes
  right before its one rename; the Orphan keeps its finalizer while its data is in quarantine,
  and the reconciler removes the data for good once the retention passed, or moves it back on a
  restore request (:mod:`policy.orphans.quarantine`), and only then releases the object;
* the **sizer** (a runnable loop at the lowest CPU priority, never the scan) measures each
  Orphan's directory as ``du -sb`` does for ``status.sizeBytes`` and ``kustodian_orphan_bytes``;
* the **heartbeat** (:mod:`controllers.orphans.heartbeat`, a runnable loop) renews this
  node's heartbeat in ``kustodian-disks-<node>`` and marks the Orphans of nodes whose
  heartbeat expired ``DataCleanable=False`` (``NodeAgentGone``).

Every decision about an Orphan looks at its directory afresh during the gather
(``volume.meta`` read again, the newest modification time): a directory written within
``write_grace`` is live data and never removed, whatever the ownership sources say; the
mass-orphan brake also holds a disk whose every directory turned orphan at once.

A reconcile reads the monitor's last scans (published by swapping a dict, never
under a lock held across I/O), so a long scan never blocks it.

:func:`install` puts the agent on a Manager (the Orphan cache, Longhorn's caches, the
reconciler, the monitor) without starting anything, for :func:`run` and for the tests, which
drive that very Manager; the Manager waits for every cache before the first reconcile or scan.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kustodian.clock import utc_now
from kustodian.controllers.orphans.disks import CONDITION_READY, OWNERSHIP_KEY, DiskRegistry
from kustodian.controllers.orphans.gather import (
    OrphanApiSource,
    OrphanCacheSource,
    OrphanCleanupSource,
    gather,
    gather_sync,
)
from kustodian.controllers.orphans.heartbeat import Heartbeat
from kustodian.controllers.orphans.quarantine import (
    apparent_size,
    probe_quarantine,
    purge_quarantined,
    quarantine_replica_dir,
    restore_quarantined,
)
from kustodian.controllers.orphans.scan import RemovalOutcome, scan_disk
from kustodian.controllers.orphans.tracker import LONGHORN_NODES, Longhorn, NoTracker, ReplicaTracker
from kustodian.errors import ConfigError
from kustodian.kube.cache import object_key
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.config import load_config
from kustodian.kube.errors import AlreadyExists, KubeError, NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import Resource
from kustodian.policy.objects import RawObject, field, is_deleting, list_field, str_field
from kustodian.policy.orphans import (
    ANNOTATION_KEEP_DATA,
    CONDITION_DATA_CLEANABLE,
    INDEXERS,
    ORPHAN_BY_NODE,
    ORPHAN_FINALIZER,
    ORPHAN_KIND,
    ORPHAN_KIND_KEY,
    AutoDeletion,
    DeleteOrphan,
    DiskCondition,
    DiskScan,
    DropFinalizer,
    HoldQuarantined,
    NoAction,
    OrphanAction,
    OrphanCleanupInput,
    OrphanCleanupRules,
    OrphanDecision,
    OrphanedReplicaDir,
    OrphanReason,
    OrphanSync,
    OrphanSyncInput,
    Ownership,
    PruneOrphan,
    PurgeQuarantined,
    QuarantinePolicy,
    RefuseRestore,
    RemoveDir,
    RestoreDir,
    Wait,
    auto_deletion,
    confirms,
    confirms_prune,
    decide_orphan_cleanup,
    decide_orphan_sync,
    disk_condition,
    disk_verdict,
    find_orphans,
    mass_orphan_brake,
    normalize_disk_path,
    orphan_object,
    quarantine_deadline,
    quarantine_path,
    replica_dir_count,
    turned_orphan_at_once,
)
from kustodian.policy.orphans.quarantine import (
    RESTORE_REFUSED,
    RESTORE_RESTORED,
    STATE_QUARANTINED,
    STATE_REMOVED,
    STATE_RESTORED,
)
from kustodian.policy.orphans.resource import PARAM_DATA_NAME, PARAM_DISK_NAME, PARAM_DISK_PATH, orphan_param
from kustodian.policy.timestamps import format_rfc3339
from kustodian.runtime.manager import CacheFactory, Manager
from kustodian.runtime.runnables import Loop
from kustodian.runtime.workqueue import Result, WorkQueue
from kustodian.settings import DiskSpec, NodeAgentSettings

log = logging.getLogger(__name__)

COMPONENT = "kustodian-node-agent"
ORPHANS = Resource("kustodian.io", "v1alpha1", "orphanedreplicadirs", ORPHAN_KIND, True)
CONDITION_OWNERSHIP = "OwnershipKnown"
CONDITION_AUTO_DELETE_HELD = "AutoDeleteHeld"


@dataclass(frozen=True)
class _Confirmed:
    """The fresh Orphan and the action confirmed on it."""

    orphan: RawObject
    action: OrphanAction
    status: Mapping[str, Any]


def _scan_fingerprint(scan: DiskScan) -> tuple[Any, ...]:
    # ``entries`` is the very same mapping when the scanner reused it: compared by identity first
    return (scan.disk_path, scan.expected_uuid, scan.found_uuid, scan.fsid, scan.readable, scan.error,
            scan.entries)


class NodeAgent:
    """The Orphan reconciler of one node, and its disk monitor (:meth:`monitor`, a runnable)."""

    name = "orphans"

    def __init__(self, client: KubeClient, *, node: str, namespace: str, disks: Sequence[DiskSpec],
                 tracker: ReplicaTracker, recorder: EventRecorder, scan_interval: float,
                 auto_delete: bool | None, grace: timedelta | None, caches: CacheFactory,
                 clock: Callable[[], datetime] = utc_now, retry_interval: float = 10.0,
                 brake_share: float = 0.5, brake_min_orphans: int = 3,
                 write_grace: timedelta = timedelta(minutes=10),
                 quarantine: QuarantinePolicy | None = None, size_interval: float = 300.0) -> None:
        self.client = client
        self.node = node
        self.namespace = namespace
        self.disks = list(disks)
        self.tracker = tracker
        self.recorder = recorder
        self.scan_interval = scan_interval
        self.auto_delete = auto_delete  # None: follow Longhorn's settings
        self.grace = grace  # None: follow Longhorn's settings
        self.brake_share = brake_share
        self.brake_min_orphans = brake_min_orphans
        self.write_grace = write_grace  # a directory written more recently is live: never removed
        self.quarantine = quarantine or QuarantinePolicy()  # how long deleted data is kept in quarantine
        self.size_interval = size_interval
        self.orphan_bytes: Mapping[tuple[str, str], int] = {}  # (disk name, state) -> bytes, swapped whole
        self._size_wake = threading.Event()
        self.sizes_done = 0
        self.agent_since: datetime | None = None  # deletes requested before this are deferred ones
        self._owners: Ownership = Ownership(False, OrphanReason.TRACKING_UNKNOWN, "not looked at yet")
        self._owners_reported: Ownership | None = None
        self._held: Mapping[str, str] = {}  # normalized disk path -> mass-orphan brake message
        self._orphans_seen: Mapping[str, frozenset[str]] = {}  # disk path -> orphans at the last known scan
        self.clock = clock
        self.retry_interval = retry_interval
        self.registry = DiskRegistry(client, namespace=namespace, node=node)
        self.orphans = caches(ORPHANS, namespace=namespace, indexers=INDEXERS[ORPHAN_KIND_KEY])
        # where reconcile gathers from: what the agent holds, and the API server with the disks read now
        self.cache_source: OrphanCleanupSource = OrphanCacheSource(
            node, self.orphans, tracker, last_scans=lambda: list(self._scans.values()),
            scan_now=lambda: self.scan_disks(record=False))
        self.api_source: OrphanCleanupSource = OrphanApiSource(
            client, ORPHANS, tracker, node=node, namespace=namespace,
            scan_now=lambda: self.scan_disks(record=False))
        self.queue: WorkQueue | None = None  # the Manager's, once installed
        self.heartbeat: Heartbeat | None = None  # this node's heartbeat and the watch over the others
        self._enqueue: Callable[[str], None] = lambda key: None
        self._scans: Mapping[str, DiskScan] = {}  # the monitor's last scans by disk path, swapped whole
        self._disk_conditions: dict[str, DiskCondition] = {}
        self._since: dict[str, str] = {}
        self._monitor_lock = threading.Lock()  # one scan at a time (the thread, or a test calling scan_once)
        self._last_sync: tuple[Any, ...] | None = None
        self._orphan_generation = 0
        self._wake = threading.Event()
        self.scans_done = 0  # read by tests and diagnostics
        self.syncs_done = 0

    @property
    def controller(self) -> WorkQueue:
        """The work queue the Manager drains for this reconciler."""
        if self.queue is None:
            raise RuntimeError("the node agent is not installed on a Manager")
        return self.queue

    # -- under the Manager ------------------------------------------------------------------

    def wire(self, enqueue: Callable[[str], None]) -> None:
        """Orphan events and Longhorn Node changes enqueue; deletes requested from now on are not
        deferred ones."""
        self._enqueue = enqueue
        self.agent_since = self.clock()
        self.tracker.add_listener(self._on_longhorn_node)
        self.orphans.add_handler(self._on_orphan)

    def after_sync(self) -> None:
        """Load the disk record before the first reconcile or scan.

        Its namespace missing is a setting to fix (the chart runs the agent in the release
        namespace; by hand ``--namespace`` may name one that does not exist): one line naming
        it and exit 2, rather than an API error."""
        try:
            self.registry.load()
        except NotFound as exc:
            details = exc.details if isinstance(exc.details, dict) else {}
            if details.get("kind") == "namespaces" and details.get("name") == self.namespace:
                raise ConfigError.at(f"--namespace / KUSTODIAN_KUBE__NAMESPACE {self.namespace}",
                                     "no such namespace: the node agent records its disks and orphans "
                                     "there; create it or name the one Kustodian is installed in") from None
            raise
        policy = self.auto_deletion()
        log.info("node agent running on %s: %d disk(s), scan every %.0fs, auto-delete %s after %s (%s)",
                 self.node, len(self.disks), self.scan_interval, "on" if policy.enabled else "off",
                 policy.grace, policy.source)

    def monitor(self) -> Loop:
        """The disk monitor: a scan every ``scan_interval``, or at once when woken."""
        return Loop("disk-monitor", self._monitor, on_stop=self._wake.set, join_timeout=10)

    def wake(self) -> None:
        """Scan now instead of at the end of the interval."""
        self._wake.set()

    def reconcile_all(self) -> None:
        """Reconcile every Orphan of this node (after a scan, or when a timer may have passed)."""
        for obj in self.orphans.by_index(ORPHAN_BY_NODE, self.node):
            self._enqueue(object_key(obj))

    def _on_longhorn_node(self) -> None:
        """Longhorn's Node changed (Ready, eviction, disks): scan again and re-decide every Orphan."""
        self.wake()
        self.reconcile_all()

    def auto_deletion(self) -> AutoDeletion:
        """Auto-deletion as configured here, else as Longhorn's Settings say, else off."""
        return auto_deletion(self.tracker.longhorn_settings(), override_enabled=self.auto_delete,
                             override_grace=self.grace)

    def _on_orphan(self, etype: str, new: Obj | None, old: Obj | None) -> None:
        obj = new or old or {}
        if str_field(obj, "spec", "nodeID") != self.node:
            return
        if etype != "MODIFIED" or is_deleting(new) != is_deleting(old):
            self._orphan_generation += 1  # the monitor's sync must look again
        if etype != "DELETED":
            self._enqueue(object_key(obj))

    # -- monitor ----------------------------------------------------------------------------

    def _monitor(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.scan_once()
            except Exception:  # the monitor must outlive any one bad scan
                log.exception("node %s: disk scan failed", self.node)
            self._wake.wait(self.scan_interval)
            self._wake.clear()

    def scan_disks(self, *, record: bool) -> list[DiskScan]:
        """Scan every disk now, reusing the last scans; ``record`` first-seen UUIDs (monitor only)."""
        previous = self._scans
        scans = []
        for disk in self.disks:
            expected = self.registry.expected_uuid(disk)
            scan = scan_disk(disk.path, disk.name, expected, previous.get(disk.path))
            if not expected and record and scan.found_uuid:
                try:
                    scan = replace(scan, expected_uuid=self.registry.record(disk, scan.found_uuid))
                except KubeError as exc:
                    log.warning("disk %s at %s: cannot record UUID %s, skipping the disk: %s",
                                disk.name, disk.path, scan.found_uuid, exc)
            scans.append(scan)
        return scans

    def scan_once(self) -> bool:
        """One monitor pass; True when Orphans were synced (something had changed)."""
        with self._monitor_lock:
            scans = self.scan_disks(record=True)
            self._scans = {s.disk_path: s for s in scans}
            self.scans_done += 1
            owners = self.tracker.ownership()
            self._owners = owners
            self._report_ownership(owners)
            self._held = self._brakes(scans, owners)
            self._report_disks(scans, owners)
            generation = self._orphan_generation
            fingerprint = (tuple(_scan_fingerprint(s) for s in scans), owners, generation)
            if fingerprint == self._last_sync:
                return False
            observed = OrphanSyncInput(self.node, tuple(scans), owners,
                                       tuple(self.orphans.by_index(ORPHAN_BY_NODE, self.node)))
            plan = decide_orphan_sync(observed)
            prunes = self._confirmed_prunes(plan)
            ok = all([self._create(o) for o in plan.create] + [self._prune(p) for p in prunes])
            ok = ok and len(prunes) == len(plan.prune)  # an unconfirmed prune is decided again next scan
            if ok:
                self._last_sync = fingerprint
            self.syncs_done += 1
        self.reconcile_all()  # DataCleanable follows the new scan
        return True

    def _confirmed_prunes(self, plan: OrphanSync) -> tuple[PruneOrphan, ...]:
        """The prunes of ``plan`` that the same decision on a gather from the API server (Longhorn's
        Node and Replicas, this node's Orphans) and the disks read again makes too."""
        if not plan.prune:
            return ()
        fresh = decide_orphan_sync(gather_sync(self.api_source, self.node))
        confirmed = tuple(p for p in plan.prune if confirms_prune(fresh, p))
        for prune in plan.prune:
            if prune not in confirmed:
                log.info("Orphan %s/%s: %s in the caches, not on the API server; kept", prune.namespace,
                         prune.name, prune.reason)
        return confirmed

    def _create(self, orphan: OrphanedReplicaDir) -> bool:
        obj = orphan_object(orphan, namespace=self.namespace)
        try:
            self.client.create(ORPHANS, obj)
        except AlreadyExists:
            return True
        except KubeError as exc:
            log.warning("cannot create Orphan for %s/replicas/%s: %s", orphan.disk_path, orphan.dir_name, exc)
            return False
        log.info("Orphan %s/%s: %s/replicas/%s is not owned by any replica", self.namespace,
                 obj["metadata"]["name"], orphan.disk_path, orphan.dir_name)
        return True

    def _prune(self, prune: PruneOrphan) -> bool:
        """Keep the data, then delete the object: it no longer stands for an orphan."""
        try:
            # metadata.uid in a patch is a precondition: a recreated Orphan is left alone
            self.client.patch(ORPHANS, prune.name, {"metadata": {
                "uid": prune.uid, "annotations": {ANNOTATION_KEEP_DATA: "true"}}}, prune.namespace)
            self.client.delete(ORPHANS, prune.name, prune.namespace, uid=prune.uid)
        except NotFound:
            return True
        except KubeError as exc:
            log.warning("cannot prune Orphan %s/%s: %s", prune.namespace, prune.name, exc)
            return False
        log.info("Orphan %s/%s pruned (%s); its directory is left alone", prune.namespace, prune.name,
                 prune.reason)
        return True

    def _brakes(self, scans: Sequence[DiskScan], owners: Ownership) -> dict[str, str]:
        """The mass-orphan brake per disk: normalized path -> why auto-deletion is held.

        Only while auto-deletion is on: with it off there is nothing to hold, and people
        look at every Orphan anyway.  Besides the share of orphans, a disk is held when every
        one of its replica directories turned orphan at once (:func:`policy.orphans.turned_orphan_at_once`),
        judged against the orphans of the previous scan (kept whether auto-deletion is on or not;
        on the agent's first scan there are none: all found orphaned on first sight turned at once).
        """
        found = find_orphans(self.node, scans, owners)
        seen_before = self._orphans_seen
        orphans_seen: dict[str, frozenset[str]] = {}
        for scan in scans:
            path = normalize_disk_path(scan.disk_path) or scan.disk_path
            if owners.known and disk_verdict(scan, scans, owners).ok:
                orphans_seen[path] = frozenset(o.dir_name for o in found if o.disk_path == path)
            elif path in seen_before:  # not judged now: what was seen last stands
                orphans_seen[path] = seen_before[path]
        self._orphans_seen = orphans_seen
        if not self.auto_deletion().enabled:
            return {}
        held: dict[str, str] = {}
        for scan in scans:
            path = normalize_disk_path(scan.disk_path) or scan.disk_path
            names = frozenset(o.dir_name for o in found if o.disk_path == path)
            directories = replica_dir_count(scan)
            at_once = owners.known and turned_orphan_at_once(
                names, directories, seen_before.get(path, frozenset()), held_before=path in self._held)
            brake = mass_orphan_brake(len(names), directories, max_share=self.brake_share,
                                      min_orphans=self.brake_min_orphans, all_at_once=at_once)
            before = self._held.get(path)
            if brake.engaged:
                held[path] = brake.message
                if before is None:
                    where = f"disk {scan.disk_name} at {scan.disk_path} on node {self.node}"
                    message = f"{where}: {brake.message}"
                    log.warning(message)
                    self.recorder.record(self.registry.config_map, "Warning",
                                         str(OrphanReason.MASS_ORPHAN_BRAKE), message)
            elif before is not None and owners.known:
                message = (f"disk {scan.disk_name} at {scan.disk_path} on node {self.node}: "
                           f"{brake.orphans} of {brake.directories} replica directories are orphans now; "
                           "auto-deletion resumes")
                log.info(message)
                self.recorder.record(self.registry.config_map, "Normal", "MassOrphanBrakeReleased", message)
            elif before is not None:
                held[path] = before  # ownership unknown: no fresh count, keep holding
        return held

    def _report_ownership(self, owners: Ownership) -> None:
        before = self._owners_reported
        if before is not None and (before.known, before.reason, before.message) == (
                owners.known, owners.reason, owners.message):
            return
        self._owners_reported = owners
        cond = {"type": CONDITION_OWNERSHIP, "status": "True" if owners.known else "False",
                "reason": str(owners.reason), "message": owners.message,
                "lastTransitionTime": format_rfc3339(self.clock())}
        try:
            self.registry.publish(OWNERSHIP_KEY, [cond])
        except KubeError as exc:
            log.warning("cannot publish ownership in %s/%s: %s", self.namespace, self.registry.name, exc)
        if not owners.known:
            message = f"node {self.node}: ownership of replica data unknown: {owners.message}"
            log.warning("%s (%s)", message, owners.reason)
            self.recorder.record(self.registry.config_map, "Warning", str(owners.reason), message)
        elif before is not None and not before.known:
            message = f"node {self.node}: ownership known again ({owners.message})"
            log.info(message)
            self.recorder.record(self.registry.config_map, "Normal", str(owners.reason), message)

    def _report_disks(self, scans: Sequence[DiskScan], owners: Ownership) -> None:
        now = format_rfc3339(self.clock())
        status = []
        for scan in scans:
            cond = disk_condition(scan, scans)
            if cond.ok and owners.known:
                cond = disk_verdict(scan, scans, owners)
            before = self._disk_conditions.get(scan.disk_path)
            if before != cond:
                self._disk_conditions[scan.disk_path] = cond
                if before is None or before.ok != cond.ok:
                    self._since[scan.disk_path] = now
                self._announce(scan, cond, before)
            conditions = [{"type": CONDITION_READY, "status": "True" if cond.ok else "False",
                           "reason": str(cond.reason), "message": cond.message,
                           "lastTransitionTime": self._since[scan.disk_path]}]
            held = self._held.get(normalize_disk_path(scan.disk_path) or scan.disk_path)
            if held:
                conditions.append({"type": CONDITION_AUTO_DELETE_HELD, "status": "True",
                                   "reason": str(OrphanReason.MASS_ORPHAN_BRAKE), "message": held})
            status.append({
                "name": scan.disk_name, "path": scan.disk_path, "diskUUID": scan.expected_uuid,
                "conditions": conditions,
            })
        try:
            self.registry.publish_status(status)
        except KubeError as exc:
            log.warning("cannot publish disk status in %s/%s: %s", self.namespace, self.registry.name, exc)

    def _announce(self, scan: DiskScan, cond: DiskCondition, before: DiskCondition | None) -> None:
        if not cond.ok:
            message = (f"disk {scan.disk_name} at {scan.disk_path} on node {self.node} is skipped: "
                       f"{cond.message}")
            log.warning("%s (%s)", message, cond.reason)
            self.recorder.record(self.registry.config_map, "Warning", str(cond.reason), message)
        elif before is not None and not before.ok:
            message = f"disk {scan.disk_name} at {scan.disk_path} on node {self.node} is scanned again"
            log.info(message)
            self.recorder.record(self.registry.config_map, "Normal", str(cond.reason), message)

    # -- orphan controller ------------------------------------------------------------------

    def reconcile(self, key: str) -> Result | None:
        """Gather from the caches, decide, act; an act on a deleting Orphan is confirmed first."""
        namespace, _, name = key.rpartition("/")
        policy = self.auto_deletion()
        rules = OrphanCleanupRules(self.node, policy.enabled, policy.grace, self.agent_since,
                                   self.write_grace, self.quarantine)
        held = self._held_disks()
        observed = gather(self.cache_source, namespace, name, rules, held)
        if observed is None or str_field(observed.orphan, "spec", "nodeID") != self.node:
            return None
        deleting = is_deleting(observed.orphan)
        if deleting and ORPHAN_FINALIZER not in list_field(observed.orphan, "metadata", "finalizers"):
            return None
        now = self.clock()
        decision = decide_orphan_cleanup(observed, now)
        if not deleting:
            obj = self._write_status(observed.orphan, decision.condition, decision.status)
            result = self._act(obj, decision.action, now, policy)
            return result if result is not None else self._look_again(observed)
        # about to remove data or to give up the request to: look again, at the disks and at the API server
        confirmed = self._confirm(namespace, name, observed, decision, now)
        if confirmed is None:
            return None  # the Orphan is gone
        if isinstance(confirmed, Result):
            return confirmed
        obj = self._write_status(confirmed.orphan, None, confirmed.status)
        return self._act(obj, confirmed.action, now, policy)

    def _look_again(self, observed: OrphanCleanupInput) -> Result | None:
        """A directory kept as live data is looked at again once the write grace may have passed:
        nothing else would tell the agent that it went quiet."""
        probe = observed.probe
        if probe is None or probe.idle is None or probe.idle >= self.write_grace.total_seconds():
            return None
        left = self.write_grace.total_seconds() - max(probe.idle, 0.0)
        return Result(requeue_after=max(self.retry_interval, left + 0.05))

    def _confirm(self, namespace: str, name: str, observed: OrphanCleanupInput, first: OrphanDecision,
                 now: datetime) -> _Confirmed | Result | None:
        """The decision on ``gather(api)`` to act on, compared with ``first`` (made on ``observed``).

        Releasing the Orphan (the data kept) follows the fresh decision, as it always did;
        a removal is made only when two decisions agree, the last on a fresh gather: when the
        caches did not see the removal the fresh gather shows, one more fresh gather confirms it.
        """
        rules, held = observed.rules, observed.held_disks
        fresh = gather(self.api_source, namespace, name, rules, held)
        if fresh is None:
            return None
        decision = decide_orphan_cleanup(fresh, now)
        if isinstance(decision.action, RemoveDir) and not confirms(decision, first.action):
            again = gather(self.api_source, namespace, name, rules, held)
            if again is None:
                return None
            if not confirms(decide_orphan_cleanup(again, now), decision.action):
                log.info("Orphan %s/%s: the facts changed while confirming a removal; deciding again soon",
                         namespace, name)
                return Result(requeue_after=self.retry_interval)
            fresh = again
        return _Confirmed(fresh.orphan, decision.action, decision.status)

    def _act(self, obj: RawObject, action: OrphanAction, now: datetime,
             policy: AutoDeletion) -> Result | None:
        if isinstance(action, RemoveDir):
            return self._quarantine(obj, action)
        if isinstance(action, PurgeQuarantined):
            return self._purge(obj, action)
        if isinstance(action, RestoreDir):
            return self._restore(obj, action)
        if isinstance(action, RefuseRestore):
            self._answer_restore(obj, action.request, RESTORE_REFUSED, f"{action.reason}: {action.message}")
        elif isinstance(action, HoldQuarantined):
            if action.remove_at is not None:
                return Result(requeue_after=max(0.0, (action.remove_at - now).total_seconds()) + 0.05)
        elif isinstance(action, DropFinalizer):
            self._drop_finalizer(obj)
            why = action.message or "data left in place"
            self._event(obj, "Normal", "DataKept", f"{action.reason}: {why}")
        elif isinstance(action, DeleteOrphan):
            try:
                self.client.delete(ORPHANS, action.name, action.namespace, uid=action.uid)
            except NotFound:
                return None
            self._event(obj, "Normal", str(action.reason),
                        f"deleted after the grace period of {policy.grace} ({policy.source}): "
                        "its data is cleanable")
        elif isinstance(action, Wait):
            return Result(requeue_after=max(0.0, (action.requeue_at - now).total_seconds()) + 0.05)
        elif isinstance(action, NoAction):
            log.debug("Orphan %s/%s: nothing to do (%s)", str_field(obj, "metadata", "namespace"),
                      str_field(obj, "metadata", "name"), action.reason)
        return None

    def _held_disks(self) -> Mapping[str, str]:
        """The monitor's mass-orphan brakes; until its first scan, every disk is held."""
        if not self.scans_done:
            return {normalize_disk_path(d.path) or d.path: "no full scan yet" for d in self.disks}
        return self._held

    def _quarantine(self, obj: RawObject, action: RemoveDir) -> Result | None:
        """Every removal check, then one rename into the disk's quarantine; the finalizer stays."""
        result = quarantine_replica_dir(action.disk_path, action.dir_name, action.expected_uuid,
                                        quiet_for=self.write_grace.total_seconds())
        name = str_field(obj, "metadata", "name")
        if result.outcome == RemovalOutcome.ALREADY_ABSENT:
            log.info("Orphan %s/%s: %s is already gone", self.namespace, name, result.path)
            self._event(obj, "Normal", "DataRemoved", f"{result.path} was already gone")
            self._drop_finalizer(obj)
            return None
        if result.outcome != RemovalOutcome.QUARANTINED:
            message = f"{result.path} not removed ({result.outcome}): {result.reason} {result.message}"
            log.warning("Orphan %s/%s: %s", self.namespace, name, message)
            self._event(obj, "Warning", f"Remove{result.outcome}", message)
            return Result(requeue_after=self.retry_interval)  # re-decided on fresh facts then
        now = self.clock()
        free = probe_quarantine(action.disk_path, action.dir_name).free_share
        deadline = quarantine_deadline(now, self.quarantine, free)
        if deadline <= now:  # no retention: removed at once, on the decision just confirmed
            held = quarantine_path(action.disk_path, action.dir_name) or result.path
            return self._purge(obj, PurgeQuarantined(action.disk_path, action.dir_name, action.expected_uuid,
                                                     held))
        obj = self._write_status(obj, None, {"state": STATE_QUARANTINED, "quarantinedAt": format_rfc3339(now),
                                             "removeAfter": format_rfc3339(deadline)})
        log.info("Orphan %s/%s: %s %s", self.namespace, name, result.path, result.message)
        self._event(obj, "Normal", "DataQuarantined",
                    f"{result.path} {result.message}; removed for good after {format_rfc3339(deadline)} "
                    f"unless restored (kustodian orphans restore {name})")
        return Result(requeue_after=0.05)  # decided again from the quarantine now

    def _purge(self, obj: RawObject, action: PurgeQuarantined) -> Result | None:
        """The retention has passed: remove the quarantined directory for good, then release the Orphan."""
        result = purge_quarantined(action.disk_path, action.dir_name, action.expected_uuid)
        name = str_field(obj, "metadata", "name")
        if not result.gone:
            message = f"{result.path} not removed ({result.outcome}): {result.reason} {result.message}"
            log.warning("Orphan %s/%s: %s", self.namespace, name, message)
            self._event(obj, "Warning", f"Remove{result.outcome}", message)
            return Result(requeue_after=self.retry_interval)
        obj = self._write_status(obj, None, {"state": STATE_REMOVED, "removeAfter": None})
        log.info("Orphan %s/%s: removed %s after its quarantine (%s)", self.namespace, name, result.path,
                 result.outcome)
        self._event(obj, "Normal", "DataRemoved", f"{result.path} removed (quarantine retention passed)")
        self._drop_finalizer(obj)
        return None

    def _restore(self, obj: RawObject, action: RestoreDir) -> Result | None:
        """Move the quarantined directory back (every check made again), answer the request, release."""
        result = restore_quarantined(action.disk_path, action.dir_name, action.expected_uuid)
        if result.outcome != RemovalOutcome.RESTORED:
            message = f"{result.reason}: {result.message}"
            self._answer_restore(obj, action.request, RESTORE_REFUSED, message)
            failed = result.outcome == RemovalOutcome.FAILED
            return Result(requeue_after=self.retry_interval) if failed else None
        message = f"{result.path} restored ({result.message})"
        obj = self._write_status(obj, None, {
            "state": STATE_RESTORED, "removeAfter": None,
            "restore": {"request": action.request, "result": RESTORE_RESTORED, "message": message}})
        log.info("Orphan %s/%s: %s", self.namespace, str_field(obj, "metadata", "name"), message)
        self._event(obj, "Normal", "DataRestored", message)
        self._drop_finalizer(obj)  # the next scan reports the directory afresh
        return None

    def _answer_restore(self, obj: RawObject, request: str, answer: str, message: str) -> None:
        self._write_status(obj, None, {"restore": {"request": request, "result": answer, "message": message}})
        log.warning("Orphan %s/%s: restore refused: %s", self.namespace, str_field(obj, "metadata", "name"),
                    message)
        self._event(obj, "Warning", "RestoreRefused", message)

    def _drop_finalizer(self, obj: RawObject) -> None:
        meta = obj.get("metadata") or {}
        remaining = [f for f in list_field(obj, "metadata", "finalizers") if f != ORPHAN_FINALIZER]
        # resourceVersion makes this a compare-and-swap: a 409 is retried on a fresh read
        with contextlib.suppress(NotFound):
            self.client.patch(ORPHANS, str(meta.get("name")), {"metadata": {
                "finalizers": remaining, "resourceVersion": meta.get("resourceVersion")}},
                str(meta.get("namespace")))

    def _write_status(self, obj: RawObject, condition: Mapping[str, str] | None,
                      fields: Mapping[str, Any]) -> RawObject:
        """Merge ``condition`` (``DataCleanable``) and ``fields`` (``None``: remove) into the status, when
        anything differs; the object as written (its new resourceVersion), else ``obj``."""
        status = obj.get("status") or {}
        patch: dict[str, Any] = {k: v for k, v in fields.items() if status.get(k) != v}
        if condition is not None:
            conditions = list_field(obj, "status", "conditions")
            current = next((c for c in conditions if field(c, "type") == CONDITION_DATA_CLEANABLE), None)
            same = current is not None and all(field(current, k) == condition[k]
                                               for k in ("status", "reason", "message"))
            if not same:
                others = [c for c in conditions if field(c, "type") != CONDITION_DATA_CLEANABLE]
                patch["conditions"] = [*others, dict(condition)]
        if not patch:
            return obj
        meta = obj.get("metadata") or {}
        try:
            return self.client.patch(ORPHANS, str(meta.get("name")), {
                "metadata": {"resourceVersion": meta.get("resourceVersion")},
                "status": patch}, str(meta.get("namespace")), subresource="status")
        except NotFound:
            return obj

    # -- sizer ------------------------------------------------------------------------------

    def _write_size(self, obj: RawObject, size: int) -> None:
        """``status.sizeBytes``, the sizer's own field: written without a resourceVersion, so it never
        fights the reconciler's compare-and-swap writes."""
        name = str_field(obj, "metadata", "name")
        try:
            self.client.patch(ORPHANS, name, {"status": {"sizeBytes": size}},
                              str_field(obj, "metadata", "namespace"), subresource="status")
        except NotFound:
            pass
        except KubeError as exc:
            log.warning("Orphan %s/%s: cannot write its size: %s", self.namespace, name, exc)

    def sizer(self) -> Loop:
        """The sizer: every ``size_interval``, at the lowest CPU priority, each Orphan's directory measured
        as ``du -sb`` does (never in the scan, whose cost stays what it was)."""
        return Loop("orphan-sizer", self._sizer, on_stop=self._size_wake.set, join_timeout=10)

    def _sizer(self, stop: threading.Event) -> None:
        with contextlib.suppress(OSError, AttributeError):  # Linux: a nice value per thread
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        while not stop.is_set():
            try:
                self.measure_sizes()
            except Exception:  # the sizer must outlive any one bad pass
                log.exception("node %s: measuring orphan sizes failed", self.node)
            self._size_wake.wait(self.size_interval)
            self._size_wake.clear()

    def measure_sizes(self) -> Mapping[tuple[str, str], int]:
        """Measure every Orphan of this node (reported in ``replicas/``, quarantined in the quarantine),
        write ``status.sizeBytes`` where it changed and publish the totals by disk and state."""
        totals: dict[tuple[str, str], int] = {}
        for disk in self.disks:
            for state in ("reported", "quarantined"):
                totals[(disk.name, state)] = 0
        for obj in self.orphans.by_index(ORPHAN_BY_NODE, self.node):
            disk_path, data_name = orphan_param(obj, PARAM_DISK_PATH), orphan_param(obj, PARAM_DATA_NAME)
            quarantined = is_deleting(obj) and probe_quarantine(disk_path, data_name).exists
            size = apparent_size(disk_path, data_name, quarantined=quarantined)
            if size is None:
                continue
            key = (orphan_param(obj, PARAM_DISK_NAME), "quarantined" if quarantined else "reported")
            totals[key] = totals.get(key, 0) + size
            if (obj.get("status") or {}).get("sizeBytes") != size:
                self._write_size(obj, size)
        self.orphan_bytes = totals
        self.sizes_done += 1
        return totals

    def _event(self, obj: RawObject, event_type: str, reason: str, message: str) -> None:
        self.recorder.record(obj, event_type, reason, message)


class OrphanBytes(Collector):
    """``kustodian_orphan_bytes{node,disk,state}``: the bytes of this node's orphaned replica directories
    by disk, ``reported`` (still in ``replicas/``) and ``quarantined``, as the sizer last measured them
    (read at scrape time: the sizer's pass keeps the books, the scrape never walks a disk)."""

    def __init__(self, agent: NodeAgent) -> None:
        self._agent = agent

    def collect(self) -> list[Metric]:
        family = GaugeMetricFamily("kustodian_orphan_bytes", "Bytes of orphaned replica directories on this "
                                   "node, by disk and state (reported, quarantined), as du -sb counts them",
                                   labels=["node", "disk", "state"])
        for (disk, state), size in sorted(self._agent.orphan_bytes.items()):
            family.add_metric([self._agent.node, disk, state], size)
        return [family]


def make_tracker(settings: NodeAgentSettings, client: KubeClient) -> ReplicaTracker:
    agent = settings.node_agent
    if agent.tracker == "none":
        return NoTracker()
    return Longhorn(client, agent.longhorn_namespace, agent.node_name,
                    recheck_interval=max(agent.scan_interval.total_seconds(), 1.0))


def install(manager: Manager, settings: NodeAgentSettings, *, recorder: EventRecorder | None = None,
            tracker: ReplicaTracker | None = None, clock: Callable[[], datetime] = utc_now,
            monitor: bool = True) -> NodeAgent:
    """The node agent on ``manager``: Longhorn's caches, the Orphan reconciler, the disk monitor.

    ``monitor=False`` leaves the monitor and the heartbeat loop out, for tests that scan (and beat)
    when they choose.
    """
    client = manager.client
    assert client is not None, "the node agent reports through the API server"
    agent, namespace = settings.node_agent, settings.kube.namespace
    node_agent = NodeAgent(
        client, node=agent.node_name, namespace=namespace, disks=agent.disk_specs,
        tracker=tracker if tracker is not None else make_tracker(settings, client),
        recorder=recorder if recorder is not None else EventRecorder(
            client, COMPONENT, default_namespace=namespace),
        scan_interval=agent.scan_interval.total_seconds(), auto_delete=agent.auto_delete,
        grace=agent.grace_period, caches=manager.cache, clock=clock,
        brake_share=agent.brake_share, brake_min_orphans=agent.brake_min_orphans,
        write_grace=agent.write_grace,
        quarantine=QuarantinePolicy(agent.quarantine_retention, agent.quarantine_min_retention,
                                    agent.quarantine_pressure_free),
        size_interval=agent.size_interval.total_seconds())
    node_agent.heartbeat = Heartbeat(
        client, node_agent.registry, node=agent.node_name, namespace=namespace,
        longhorn_namespace=agent.longhorn_namespace,
        orphans=node_agent.orphans, orphan_resource=ORPHANS, longhorn_nodes=LONGHORN_NODES,
        recorder=node_agent.recorder, clock=clock, interval=agent.heartbeat_interval,
        timeout=agent.heartbeat_timeout)
    manager.add_runnable(node_agent.tracker)
    manager.registry.register(OrphanBytes(node_agent))
    node_agent.queue = manager.add(node_agent, workers=settings.controllers.workers, resync=0)
    if monitor:
        manager.add_runnable(node_agent.monitor())
        manager.add_runnable(node_agent.sizer())
        manager.add_runnable(node_agent.heartbeat.loop())
    return node_agent


def build_manager(settings: NodeAgentSettings, client: KubeClient, *,
                  recorder: EventRecorder | None = None) -> tuple[Manager, NodeAgent]:
    """The node agent process's one Manager, the agent installed, nothing started."""
    manager = Manager(client, name=COMPONENT, health_address=settings.metrics.listen_address,
                      metrics_path=settings.metrics.path,
                      sync_timeout=settings.controllers.sync_timeout.total_seconds())
    return manager, install(manager, settings, recorder=recorder)


def run(settings: NodeAgentSettings) -> int:
    """Run the agent on a Manager (signals, /healthz, /readyz, metrics) until SIGTERM/SIGINT; the exit
    code (1: the caches never synced)."""
    client = KubeClient(load_config(settings.kube.kubeconfig, settings.kube.kube_api_endpoint,
                                    settings.kube.context),
                        user_agent=COMPONENT)
    recorder = EventRecorder(client, COMPONENT, default_namespace=settings.kube.namespace)
    manager, agent = build_manager(settings, client, recorder=recorder)
    if not agent.disks:
        log.warning("no disk is configured (--node-agent-disks / KUSTODIAN_NODE_AGENT__DISKS): "
                    "nothing will be scanned")
    try:
        return manager.run()
    finally:
        recorder.close()
        client.close()
