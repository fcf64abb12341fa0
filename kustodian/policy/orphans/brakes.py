"""The mass-orphan brake of each disk, decided once per disk monitor pass (pure).

The brake holds *auto*-deletion on a disk where too many replica directories look orphaned
at once (:func:`policy.orphans.ownership.mass_orphan_brake`): a wrong ownership source (a
stale copy of the Longhorn Node, a namespace without Replicas) makes every directory look
orphaned, and a person should look before anything is removed.  Besides the share of
orphans, a disk is held when every one of its replica directories turned orphan at once
(:func:`~policy.orphans.ownership.turned_orphan_at_once`), judged against the orphans of the
previous pass.

The monitor keeps the memory between passes (what was held, which orphans each disk had)
in its published disk state and hands it back here; this function says what is held now,
what to remember, and which brakes engaged or released (the monitor writes an Event for
each).  It reads no clock, no disk and no API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kustodian.policy.orphans.detect import disk_verdict, find_orphans, replica_dir_count
from kustodian.policy.orphans.model import DiskScan
from kustodian.policy.orphans.names import normalize_disk_path
from kustodian.policy.orphans.ownership import Ownership, mass_orphan_brake, turned_orphan_at_once

__all__ = ["BrakeChange", "BrakeInput", "Brakes", "decide_brakes"]


@dataclass(frozen=True)
class BrakeInput:
    """One pass's scans and ownership, the brake settings, and what the previous pass left."""

    node: str
    scans: tuple[DiskScan, ...]
    owners: Ownership
    auto_deletion: bool
    max_share: float
    min_orphans: int
    seen_before: Mapping[str, frozenset[str]] = field(default_factory=dict)  # disk path -> orphans
    held_before: Mapping[str, str] = field(default_factory=dict)  # disk path -> why it was held


@dataclass(frozen=True)
class BrakeChange:
    """A brake that engaged (``engaged``) or released on a disk, with the message to tell."""

    engaged: bool
    disk_name: str
    disk_path: str
    message: str


@dataclass(frozen=True)
class Brakes:
    held: Mapping[str, str]  # normalized disk path -> why auto-deletion is held there
    orphans_seen: Mapping[str, frozenset[str]]  # remembered for the next pass
    changes: tuple[BrakeChange, ...] = ()


def _path(scan: DiskScan) -> str:
    return normalize_disk_path(scan.disk_path) or scan.disk_path


def decide_brakes(observed: BrakeInput) -> Brakes:
    """The brake per disk (only while auto-deletion is on: with it off there is nothing to hold,
    and people look at every Orphan anyway).  The orphans seen are remembered either way; a
    disk not judged now (ownership unknown, the disk not trusted) keeps what was seen last, and
    on the first pass there is nothing seen: all found orphaned on first sight turned at once."""
    node, scans, owners = observed.node, observed.scans, observed.owners
    found = find_orphans(node, scans, owners)
    seen_before, held_before = observed.seen_before, observed.held_before
    orphans_seen: dict[str, frozenset[str]] = {}
    for scan in scans:
        path = _path(scan)
        if owners.known and disk_verdict(scan, scans, owners).ok:
            orphans_seen[path] = frozenset(o.dir_name for o in found if o.disk_path == path)
        elif path in seen_before:  # not judged now: what was seen last stands
            orphans_seen[path] = seen_before[path]
    if not observed.auto_deletion:
        return Brakes({}, orphans_seen)
    held: dict[str, str] = {}
    changes: list[BrakeChange] = []
    for scan in scans:
        path = _path(scan)
        names = frozenset(o.dir_name for o in found if o.disk_path == path)
        directories = replica_dir_count(scan)
        at_once = owners.known and turned_orphan_at_once(
            names, directories, seen_before.get(path, frozenset()), held_before=path in held_before)
        brake = mass_orphan_brake(len(names), directories, max_share=observed.max_share,
                                  min_orphans=observed.min_orphans, all_at_once=at_once)
        before = held_before.get(path)
        where = f"disk {scan.disk_name} at {scan.disk_path} on node {node}"
        if brake.engaged:
            held[path] = brake.message
            if before is None:
                changes.append(BrakeChange(True, scan.disk_name, scan.disk_path, f"{where}: {brake.message}"))
        elif before is not None and owners.known:
            changes.append(BrakeChange(False, scan.disk_name, scan.disk_path,
                                       f"{where}: {brake.orphans} of {brake.directories} replica directories "
                                       "are orphans now; auto-deletion resumes"))
        elif before is not None:
            held[path] = before  # ownership unknown: no fresh count, keep holding
    return Brakes(held, orphans_seen, tuple(changes))
