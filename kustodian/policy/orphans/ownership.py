"""Who owns the data on this node, according to Longhorn, or why that is not known.

A directory is only an orphan relative to an ownership source, and an ownership source
that is empty or unreadable says nothing.  A ``--longhorn-namespace`` naming a namespace
where Longhorn does not run lists zero Replicas just as successfully as a cluster
whose volumes were all deleted: the first must report nothing and remove nothing.
Longhorn's own orphan detection runs inside longhorn-manager, next to the Node object
it owns (``controller/node_controller.go``); the agent gets the same footing by reading
that object for its node:

* no Longhorn Node for this node (wrong namespace, Longhorn not installed, node not
  yet registered), or the Node / Replica lists not readable: **ownership unknown**;
* a Replica that the Node lists as scheduled on one of its disks
  (``status.diskStatus[*].scheduledReplica``) but that the Replica list lacks: the
  list is incomplete (a watch behind, a mass loss of Replica objects as in
  longhorn#7749): **ownership unknown** as well.

With ownership unknown nothing new is reported, nothing is pruned, no data is removed,
and the agent says why (a condition and a Warning event).

The Node also says which disks may be looked at (Longhorn's reasons, from
``OrphanController.updateDataCleanableCondition``): the node down or missing
(``NodeUnavailable``), the node being evicted (``NodeEvicted``), the disk not Ready or
unknown to Longhorn (``DiskInvalid``), another UUID or path for the disk
(``DiskChanged``), the disk being evicted (``DiskEvicted``).  Longhorn neither reports
nor removes orphaned data in those states, and neither does the agent.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from kustodian.policy.objects import RawObject, list_field, map_field, str_field
from kustodian.policy.objects import field as get_field
from kustodian.policy.orphans.model import DiskScan, TrackedReplica
from kustodian.policy.orphans.names import normalize_disk_path
from kustodian.policy.orphans.reasons import OrphanReason

CONDITION_READY = "Ready"
DISK_TYPE_FILESYSTEM = "filesystem"


@dataclass(frozen=True)
class LonghornDisk:
    """One disk of a Longhorn Node: ``spec.disks[name]`` joined with ``status.diskStatus[name]``."""

    name: str
    path: str
    uuid: str
    disk_type: str = DISK_TYPE_FILESYSTEM
    ready: bool = False
    ready_reason: str = ""
    ready_message: str = ""
    eviction_requested: bool = False
    allow_scheduling: bool = True
    scheduled_replicas: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LonghornNode:
    """What the agent needs from ``nodes.longhorn.io/<node>``."""

    name: str
    ready: bool
    ready_reason: str = ""
    ready_message: str = ""
    ready_since: datetime | None = None
    eviction_requested: bool = False
    allow_scheduling: bool = True
    disks: tuple[LonghornDisk, ...] = ()

    def disk_at(self, path: str) -> LonghornDisk | None:
        want = normalize_disk_path(path)
        return next((d for d in self.disks if want is not None and normalize_disk_path(d.path) == want), None)


def _condition(conditions: Sequence[object], kind: str) -> Mapping[str, object]:
    for cond in conditions:
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return {}


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def longhorn_node(obj: RawObject) -> LonghornNode:
    """Read a ``nodes.longhorn.io`` object (fields Longhorn writes; anything absent is "not ready")."""
    ready = _condition(list_field(obj, "status", "conditions"), CONDITION_READY)
    statuses = map_field(obj, "status", "diskStatus")
    disks = []
    for disk_name, spec in sorted(map_field(obj, "spec", "disks").items()):
        status = statuses.get(disk_name)
        status = status if isinstance(status, Mapping) else {}
        disk_ready = _condition(list_field(status, "conditions"), CONDITION_READY)
        scheduled = map_field(status, "scheduledReplica")
        disks.append(LonghornDisk(
            name=str(disk_name),
            path=str_field(spec, "path"),
            uuid=str_field(status, "diskUUID"),
            disk_type=str_field(spec, "diskType") or DISK_TYPE_FILESYSTEM,
            ready=disk_ready.get("status") == "True",
            ready_reason=str(disk_ready.get("reason") or ""),
            ready_message=str(disk_ready.get("message") or ""),
            eviction_requested=get_field(spec, "evictionRequested") is True,
            allow_scheduling=get_field(spec, "allowScheduling") is not False,
            scheduled_replicas=frozenset(str(k) for k in scheduled),
        ))
    return LonghornNode(
        name=str_field(obj, "metadata", "name"),
        ready=ready.get("status") == "True",
        ready_reason=str(ready.get("reason") or ""),
        ready_message=str(ready.get("message") or ""),
        ready_since=_parse_time(ready.get("lastTransitionTime")) if ready.get("status") == "True" else None,
        eviction_requested=get_field(obj, "spec", "evictionRequested") is True,
        allow_scheduling=get_field(obj, "spec", "allowScheduling") is not False,
        disks=tuple(disks),
    )


@dataclass(frozen=True)
class Ownership:
    """The ownership verdict for one node.

    ``known`` is ``True`` only with a Longhorn Node for this node and a complete Replica
    list; then ``node`` and ``tracked`` are set.  Otherwise ``reason``/``message`` say why
    nothing may be judged an orphan.
    """

    known: bool
    reason: OrphanReason
    message: str
    node: LonghornNode | None = None
    tracked: frozenset[TrackedReplica] | None = field(default=None)


def ownership(
    node_name: str,
    namespace: str,
    node_obj: RawObject | None,
    tracked: Collection[TrackedReplica] | None,
    *,
    node_error: str = "",
) -> Ownership:
    """Judge the ownership source: the Longhorn Node of ``node_name`` and the Replica list.

    ``node_obj`` is ``None`` when no such Node exists (``node_error`` says why when it could
    not be read at all); ``tracked`` is ``None`` when the Replicas could not be listed.
    """
    where = f"namespace {namespace!r}"
    if node_obj is None:
        why = node_error or f"no Longhorn Node {node_name!r} in {where}"
        return Ownership(False, OrphanReason.LONGHORN_NODE_MISSING,
                         f"{why}: Longhorn is not running there or does not know this node; "
                         "nothing is reported or removed")
    if tracked is None:
        return Ownership(False, OrphanReason.TRACKING_UNKNOWN,
                         f"the Longhorn Replicas in {where} could not be listed; "
                         "nothing is reported or removed")
    node = longhorn_node(node_obj)
    names = frozenset(t.name for t in tracked)
    missing = sorted({r for d in node.disks for r in d.scheduled_replicas} - names)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        return Ownership(False, OrphanReason.REPLICAS_INCONSISTENT,
                         f"Longhorn Node {node_name} lists {len(missing)} scheduled replica(s) that the "
                         f"Replica list of {where} lacks ({shown}); nothing is reported or removed")
    return Ownership(True, OrphanReason.OWNERSHIP_KNOWN, f"Longhorn Node {node_name} in {where}", node,
                     frozenset(tracked))


@dataclass(frozen=True)
class DiskVerdict:
    """May this disk's directories be reported / removed, by Longhorn's view of node and disk."""

    ok: bool
    reason: OrphanReason
    message: str = ""


def longhorn_disk_verdict(node: LonghornNode, scan: DiskScan) -> DiskVerdict:
    """Longhorn's reasons, in Longhorn's order, for the disk scanned as ``scan``."""
    if not node.ready:
        return DiskVerdict(False, OrphanReason.NODE_UNAVAILABLE,
                           f"Longhorn Node {node.name} is not Ready "
                           f"({node.ready_reason or 'no Ready condition'}"
                           f"{': ' + node.ready_message if node.ready_message else ''})")
    if node.eviction_requested:
        return DiskVerdict(False, OrphanReason.NODE_EVICTED,
                           f"eviction is requested for Longhorn Node {node.name}")
    disk = node.disk_at(scan.disk_path)
    if disk is None:
        return DiskVerdict(False, OrphanReason.DISK_INVALID,
                           f"Longhorn Node {node.name} has no disk at {scan.disk_path}")
    if disk.disk_type != DISK_TYPE_FILESYSTEM:
        return DiskVerdict(False, OrphanReason.DISK_INVALID, f"disk {disk.name} is a {disk.disk_type} disk")
    if not disk.ready:
        return DiskVerdict(False, OrphanReason.DISK_INVALID,
                           f"disk {disk.name} at {disk.path} is not Ready in Longhorn"
                           f" ({disk.ready_reason or 'no Ready condition'}"
                           f"{': ' + disk.ready_message if disk.ready_message else ''})")
    if not disk.uuid or disk.uuid != scan.expected_uuid or (
            scan.found_uuid is not None and scan.found_uuid != disk.uuid):
        return DiskVerdict(False, OrphanReason.DISK_CHANGED,
                           f"Longhorn says disk {disk.name} at {disk.path} is {disk.uuid or '<no UUID>'}, "
                           f"the agent expects {scan.expected_uuid or '<none>'} and found "
                           f"{scan.found_uuid or '<none>'}")
    if disk.eviction_requested:
        return DiskVerdict(False, OrphanReason.DISK_EVICTED, f"eviction is requested for disk {disk.name}")
    return DiskVerdict(True, OrphanReason.DISK_OK, f"disk {disk.name} is Ready in Longhorn")


def longhorn_disk_name(node: LonghornNode | None, scan: DiskScan) -> str:
    """Longhorn's name for the disk (what its Orphans carry as ``DiskName``), else the configured one."""
    disk = node.disk_at(scan.disk_path) if node is not None else None
    return disk.name if disk is not None else scan.disk_name


def deferred_delete(deletion_timestamp: datetime | None, node: LonghornNode | None,
                    agent_since: datetime | None) -> str:
    """Why a delete request must not remove data now, or ``""``.

    A delete requested while Longhorn's Node was not Ready, or before this agent was
    running, was decided on facts nobody here checked (a stale ``DataCleanable``): when
    the node is back the agent drops the finalizer and keeps the data; the next scan
    reports the directory again, and that fresh Orphan is decided anew.
    """
    if deletion_timestamp is None:
        return ""
    if node is not None and node.ready_since is not None and deletion_timestamp < node.ready_since:
        return (f"deletion was requested at {deletion_timestamp.isoformat()}, "
                f"while Longhorn Node {node.name} was not Ready (Ready since {node.ready_since.isoformat()})")
    # deletionTimestamp has whole seconds: a delete in the agent's first second counts as seen live
    if agent_since is not None and deletion_timestamp < agent_since.replace(microsecond=0):
        return (f"deletion was requested at {deletion_timestamp.isoformat()}, before the node agent was "
                f"running (since {agent_since.isoformat()})")
    return ""


@dataclass(frozen=True)
class MassOrphanBrake:
    """Auto-deletion is held for a disk where too much turned orphan at once."""

    engaged: bool
    orphans: int
    directories: int
    message: str = ""


def mass_orphan_brake(
    orphans: int, directories: int, *, max_share: float, min_orphans: int
) -> MassOrphanBrake:
    """Hold auto-deletion when more than ``max_share`` of a disk's replica directories are orphans.

    Replica objects vanishing en masse (longhorn#7749) makes most of a disk look orphaned
    in one scan: that is a symptom to look at, not garbage to collect.  ``min_orphans``
    keeps a single leftover directory on a nearly empty disk from tripping it (Longhorn's
    own ``test_orphan_auto_deletion`` has one orphan on a disk of one directory).
    People may still delete Orphans by hand; only the automatic path stops.
    """
    engaged = orphans >= max(min_orphans, 1) and directories > 0 and orphans > max_share * directories
    message = ""
    if engaged:
        message = (f"{orphans} of {directories} replica directories are orphans (more than {max_share:.0%}): "
                   "auto-deletion is held for this disk; check the Longhorn Replicas, then delete the "
                   "Orphans by hand if they really are garbage")
    return MassOrphanBrake(engaged, orphans, directories, message)


SETTING_AUTO_DELETION = "orphan-resource-auto-deletion"
SETTING_AUTO_DELETION_LEGACY = "orphan-auto-deletion"  # before Longhorn 1.9; migrated into the one above
SETTING_AUTO_DELETION_GRACE = "orphan-resource-auto-deletion-grace-period"
AUTO_DELETION_REPLICA_DATA = "replica-data"
_AUTO_DELETION_TYPES = frozenset({AUTO_DELETION_REPLICA_DATA, "instance"})
DEFAULT_AUTO_DELETION_GRACE = timedelta(seconds=300)  # Longhorn's default for the grace period


@dataclass(frozen=True)
class AutoDeletion:
    """Whether Orphans are deleted automatically, after which age, and who said so."""

    enabled: bool
    grace: timedelta
    source: str


def auto_deletion(
    longhorn_settings: Mapping[str, str] | None,
    *,
    override_enabled: bool | None,
    override_grace: timedelta | None,
) -> AutoDeletion:
    """Kustodian's own setting when given (the chart overrides), else Longhorn's, else off.

    ``longhorn_settings`` maps Longhorn Setting names to their ``value`` (``None`` when
    Longhorn's settings cannot be read).  Longhorn's ``orphan-resource-auto-deletion`` is a
    ``;``-separated list of types (``types.UnmarshalOrphanResourceTypes``); replica data is
    auto-deleted when it lists ``replica-data``.  A value Longhorn itself would refuse
    (an unknown type, a grace period that is not a non-negative integer) turns auto-deletion
    off: a setting nobody can read is no licence to delete.
    """
    settings = longhorn_settings or {}
    grace = override_grace
    grace_source = "Kustodian"
    if grace is None:
        raw = settings.get(SETTING_AUTO_DELETION_GRACE)
        grace, grace_source = DEFAULT_AUTO_DELETION_GRACE, "default"
        if raw is not None:
            try:
                seconds = int(raw.strip())
            except ValueError:
                seconds = -1
            if seconds < 0:
                return AutoDeletion(False, grace, f"Longhorn setting {SETTING_AUTO_DELETION_GRACE}={raw!r} "
                                                  "is invalid: auto-deletion off")
            grace, grace_source = timedelta(seconds=seconds), "Longhorn"
    if override_enabled is not None:
        return AutoDeletion(override_enabled, grace, f"Kustodian setting (grace from {grace_source})")
    if SETTING_AUTO_DELETION in settings:
        raw = settings[SETTING_AUTO_DELETION]
        items = {item.strip() for item in raw.strip().split(";")} - {""}
        if not items <= _AUTO_DELETION_TYPES:
            return AutoDeletion(False, grace, f"Longhorn setting {SETTING_AUTO_DELETION}={raw!r} is invalid: "
                                              "auto-deletion off")
        return AutoDeletion(AUTO_DELETION_REPLICA_DATA in items, grace,
                            f"Longhorn setting {SETTING_AUTO_DELETION}={raw!r} (grace from {grace_source})")
    if SETTING_AUTO_DELETION_LEGACY in settings:
        raw = settings[SETTING_AUTO_DELETION_LEGACY]
        return AutoDeletion(raw.strip() == "true", grace,
                            f"Longhorn setting {SETTING_AUTO_DELETION_LEGACY}={raw!r} "
                            f"(grace from {grace_source})")
    return AutoDeletion(False, grace, "default (no Kustodian or Longhorn setting)")
