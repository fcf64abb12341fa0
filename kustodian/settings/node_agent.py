"""``kustodian node-agent``: which disks this node has and what to do with orphaned replicas.

Auto-deletion and its grace period follow Longhorn's Settings (``orphan-resource-auto-deletion``
listing ``replica-data``, ``orphan-resource-auto-deletion-grace-period``) unless set here.

A disk is ``name=path@uuid``, ``name=path``, ``path@uuid`` or just ``path``.  Without a
UUID the agent records the one it first finds on the disk (ConfigMap
``kustodian-disks-<node>``) and trusts only that one afterwards.  Every malformed entry
is reported at start, each with its position, in one message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator, model_validator

from kustodian.settings.common import Group
from kustodian.settings.types import CommaList, NonNegativeDuration, PositiveDuration

__all__ = ["DiskSpec", "NodeAgentGroup", "default_disk_name", "parse_disk"]

_DISK_NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?")
_UUID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass(frozen=True)
class DiskSpec:
    """One configured disk: its name (Orphan ``DiskName``), normalized path, and UUID if pinned."""

    name: str
    path: str
    uuid: str = ""


def default_disk_name(path: str) -> str:
    """``/var/lib/longhorn`` -> ``var-lib-longhorn`` (``root`` for ``/``)."""
    slug = re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")
    return slug[:63].strip("-") or "root"


def parse_disk(entry: str) -> DiskSpec:
    """Parse ``[name=]path[@uuid]``; ``ValueError`` says what is wrong."""
    from kustodian.policy.orphans import normalize_disk_path

    text = entry.strip()
    name = ""
    if "=" in text and not text.startswith("/"):
        name, _, text = text.partition("=")
        name = name.strip()
        if not _DISK_NAME_RE.fullmatch(name):
            raise ValueError(f"disk name {name!r} must be a DNS label (lower case, digits, '-', '.')")
    uuid = ""
    if "@" in text:
        text, _, uuid = text.rpartition("@")
        if not _UUID_RE.fullmatch(uuid):
            raise ValueError(f"disk UUID {uuid!r} is not a UUID")
    path = normalize_disk_path(text.strip())
    if path is None:
        raise ValueError(f"disk path {text!r} must be absolute, without '..'")
    return DiskSpec(name or default_disk_name(path), path, uuid)


class NodeAgentGroup(Group):
    node_name: str = Field(min_length=1, max_length=253,
                           description="This node's name (the DaemonSet sets it from spec.nodeName)")
    disks: CommaList = Field(default_factory=list,
                             description="Longhorn disks on this node: [name=]path[@diskUUID]")
    scan_interval: PositiveDuration = Field(timedelta(seconds=30),
                                            description="How often the disks are scanned")
    auto_delete: bool | None = Field(
        None, description="Delete orphaned replica dirs whose data is cleanable once the grace period "
                          "has passed since they were reported; unset: as Longhorn's "
                          "orphan-resource-auto-deletion setting says (replica-data), off without it")
    grace_period: NonNegativeDuration | None = Field(
        None, description="Age an orphan must reach before auto-deletion; unset: Longhorn's "
                          "orphan-resource-auto-deletion-grace-period, else 300s")
    write_grace: NonNegativeDuration = Field(
        timedelta(minutes=10), description="A replica directory in which anything was modified more recently "
                                           "than this is live data: never removed, whatever the ownership "
                                           "sources say (looked at afresh right before each decision)")
    heartbeat_interval: PositiveDuration = Field(
        timedelta(seconds=10), description="How often the agent renews its heartbeat (in its ConfigMap "
                                           "kustodian-disks-<node>) and looks at the other nodes'")
    heartbeat_timeout: PositiveDuration = Field(
        timedelta(seconds=60), description="A node whose agent has not renewed its heartbeat for this long "
                                           "has its Orphans marked DataCleanable=False (NodeAgentGone) by "
                                           "the other agents")
    brake_share: float = Field(
        0.5, gt=0, le=1, description="Mass-orphan brake: auto-deletion stops for a disk where more than this "
                                     "share of the replica directories are orphans")
    brake_min_orphans: int = Field(
        3, ge=1, description="Mass-orphan brake: only with at least this many orphans on the disk")
    quarantine_retention: NonNegativeDuration = Field(
        timedelta(hours=24),
        description="How long a deleted orphan's directory stays in <disk>/kustodian-quarantine (moved "
                    "there by one rename, restorable with `kustodian orphans restore`) before it is removed "
                    "for good")
    quarantine_min_retention: NonNegativeDuration = Field(
        timedelta(hours=1), description="The floor of the quarantine retention: a disk under pressure keeps "
                                        "quarantined data only this long, never less (at most "
                                        "quarantine_retention)")
    quarantine_pressure_free: float = Field(
        0.1, ge=0, lt=1,
        description="A disk whose free share is below this is under pressure: its quarantined data is "
                    "removed after quarantine_min_retention; 0: never shortened")
    size_interval: PositiveDuration = Field(
        timedelta(minutes=5), description="How often the sizer (a low-priority loop, never the scan) "
                                          "measures each orphan's directory as du -sb does, for "
                                          "status.sizeBytes and "
                                          "kustodian_orphan_bytes")
    tracker: Literal["longhorn", "none"] = Field(
        "longhorn", description="Who owns replica data: longhorn (this node's Longhorn Node and the "
                                "Replica objects) or none (nothing is ever reported as orphaned)")
    longhorn_namespace: str = Field(
        "longhorn-system", description="Namespace of Longhorn's Node, Replica and Setting objects")

    @field_validator("disks")
    @classmethod
    def _valid_disks(cls, value: list[str]) -> list[str]:
        errors: list[str] = []
        names: dict[str, int] = {}
        paths: dict[str, int] = {}
        for i, entry in enumerate(value):
            try:
                spec = parse_disk(entry)
            except ValueError as exc:
                errors.append(f"disks[{i}]: {exc}")
                continue
            for seen, key, what in ((names, spec.name, "name"), (paths, spec.path, "path")):
                if key in seen:
                    errors.append(f"disks[{i}]: {what} {key!r} is already used by disks[{seen[key]}]")
                seen.setdefault(key, i)
        if errors:
            raise ValueError("; ".join(errors))
        return value

    @model_validator(mode="after")
    def _floor_below_retention(self) -> NodeAgentGroup:
        if self.quarantine_min_retention > self.quarantine_retention:
            raise ValueError(f"quarantine_min_retention ({self.quarantine_min_retention}) must not exceed "
                             f"quarantine_retention ({self.quarantine_retention})")
        return self

    @property
    def disk_specs(self) -> list[DiskSpec]:
        return [parse_disk(d) for d in self.disks]
