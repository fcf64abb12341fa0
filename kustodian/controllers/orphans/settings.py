"""``kustodian node-agent`` settings (env ``KUSTODIAN_*``, flags override).

The names match what the Helm chart's node-agent DaemonSet sets: ``KUSTODIAN_NODE_NAME``
(downward API), ``KUSTODIAN_DISKS`` (a JSON list, or a comma-separated string),
``KUSTODIAN_ORPHAN_AUTO_DELETE``, ``KUSTODIAN_ORPHAN_GRACE_PERIOD`` (Go duration such as
``1h`` or plain seconds) and ``KUSTODIAN_LONGHORN_NAMESPACE``.  Auto-deletion and its grace
period follow Longhorn's Settings (``orphan-resource-auto-deletion`` listing
``replica-data``, ``orphan-resource-auto-deletion-grace-period``) unless set here.

A disk is ``name=path@uuid``, ``name=path``, ``path@uuid`` or just ``path``.  Without a
UUID the agent records the one it first finds on the disk (ConfigMap
``kustodian-disks-<node>``) and trusts only that one afterwards.  Every malformed entry
is reported at start, each with its position, in one message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator
from pydantic_settings import NoDecode

from kustodian.kube.settings import GoDuration, KubeSettings
from kustodian.policy.orphans import normalize_disk_path

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


def _disk_list(value: object) -> object:
    """A JSON list (what the chart sets), or ``"a=/x,b=/y"`` (a hand-written env var)."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


DiskList = Annotated[list[str], NoDecode, BeforeValidator(_disk_list)]


class NodeAgentSettings(KubeSettings):
    node_name: str = Field(min_length=1, max_length=253,
                           description="This node's name (the DaemonSet sets it from spec.nodeName)")
    disks: DiskList = Field(default_factory=list,
                            description="Longhorn disks on this node: [name=]path[@diskUUID]")
    scan_interval: GoDuration = Field(timedelta(seconds=30), description="How often the disks are scanned")
    orphan_auto_delete: bool | None = Field(
        None, description="Delete Orphans whose data is cleanable once the grace period has passed since "
                          "they were created; unset: as Longhorn's orphan-resource-auto-deletion setting "
                          "says "
                          "(replica-data), off without it")
    orphan_grace_period: GoDuration | None = Field(
        None, description="Age an Orphan must reach before auto-deletion; unset: Longhorn's "
                          "orphan-resource-auto-deletion-grace-period, else 300s")
    orphan_brake_share: float = Field(
        0.5, gt=0, le=1, description="Mass-orphan brake: auto-deletion stops for a disk where more than this "
                                     "share of the replica directories are orphans")
    orphan_brake_min_orphans: int = Field(
        3, ge=1, description="Mass-orphan brake: only with at least this many orphans on the disk")
    tracker: Literal["longhorn", "none"] = Field(
        "longhorn", description="Who owns replica data: longhorn (this node's Longhorn Node and the "
                                "Replica objects) or none (nothing is ever reported as orphaned)")
    longhorn_namespace: str = Field(
        "longhorn-system", description="Namespace of Longhorn's Node, Replica and Setting objects")
    workers: int = Field(2, ge=1, le=16, description="Orphan reconcile workers")
    sync_timeout: float = Field(120.0, gt=0, description="Seconds to wait for the caches before giving up")

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

    @field_validator("scan_interval")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be positive")
        return value

    @field_validator("orphan_grace_period")
    @classmethod
    def _not_negative(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value < timedelta(0):
            raise ValueError("must not be negative")
        return value

    @property
    def disk_specs(self) -> list[DiskSpec]:
        return [parse_disk(d) for d in self.disks]
