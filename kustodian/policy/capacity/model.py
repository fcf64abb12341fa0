"""The vocabulary of capacity planning: kinds, storage classes, sizes, the decision type.

Everything the planner, the validators, the GC helpers and the CLI table agree on lives
here, so that "what is an LVG class", "how big is a 4 MiB extent" and "what does a
decision look like" are answered in exactly one place.

The objects are csi-baremetal's own (``csi-baremetal.dell.com/v1``), read and written
exactly as its scheduler extender, capacity controller and volume manager do
(dell/csi-baremetal ``api/generated/v1/types.pb.go``, ``api/v1/constants.go``): spec
fields are upper camel case (``NodeId``, ``Size``, ``NodeRequests.Requested``) except
the AvailableCapacity's lower-case ``storageClass``.  Kustodian has no CRD of its own
for them; the ACR CRD has no ``status`` either, so what Kustodian adds for people
(why REJECTED, since when in this status) lives in ``kustodian.io/*`` annotations,
which the API server keeps and upstream's code carries along untouched.

LVM arithmetic (the numbers csi-baremetal uses, made explicit):

- an LVG volume occupies ``align_to_extent(size)``: the size rounded *up* to a whole
  number of 4 MiB physical extents;
- an ``xLVG`` AvailableCapacity already *is* a volume group: its ``spec.size`` is the
  free space of that group, so volumes fit while ``reserved + aligned(size) <= spec.size``
  (``usable = spec.size`` rounded down to extents, which is the same test because every
  reserved amount is a multiple of an extent);
- a plain drive turned into a volume group loses 1 MiB to LVM metadata and the rest is
  cut to whole extents: ``usable = floor((size - 1 MiB) / 4 MiB) * 4 MiB`` (never below 0).
  This equals csi-baremetal's ``SubtractLVMMetadataSize``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Final, Literal, TypeAlias

from kustodian.policy.timestamps import parse_rfc3339

GROUP: Final = "csi-baremetal.dell.com"
API_VERSION: Final = "csi-baremetal.dell.com/v1"
AC_KIND: Final = "AvailableCapacity"
ACR_KIND: Final = "AvailableCapacityReservation"
LVG_KIND: Final = "LogicalVolumeGroup"
# Kind keys, as ``policy.store`` names resources.
AC_KIND_KEY: Final = f"{AC_KIND}.{GROUP}"
ACR_KIND_KEY: Final = f"{ACR_KIND}.{GROUP}"
LVG_KIND_KEY: Final = f"{LVG_KIND}.{GROUP}"

# api/v1/constants.go: StorageGroupLabelKey, DriveTaintKey / DriveTaintValue.  The
# capacity controller copies a drive's taint label onto its AC; upstream's planner
# (node_capacity.go) skips such ACs, and so does Kustodian's.
STORAGE_GROUP_LABEL: Final = "drive.csi-baremetal.dell.com/storage-group"
DRIVE_TAINT_LABEL: Final = "drive.csi-baremetal.dell.com/taint"
DRIVE_TAINT_NO_SCHEDULE: Final = "NoSchedule"
# pkg/crcontrollers/node/common/const.go: DeafultNodeIDAnnotationKey.  The csi-baremetal
# node ID of a Kubernetes Node (what ACs and ACRs call a node) is this annotation or label.
NODE_ID_KEY: Final = "nodes.csi-baremetal.dell.com/uuid"

# What Kustodian adds to an ACR (the ACR CRD has no status to hold it).
REASON_ANNOTATION: Final = "kustodian.io/reason"
MESSAGE_ANNOTATION: Final = "kustodian.io/message"
# When ``spec.Status`` last changed to its current value (RFC 3339); the TTL counts from it.
STATUS_SINCE_ANNOTATION: Final = "kustodian.io/status-since"

MIB: Final = 1 << 20
GIB: Final = 1 << 30
PE_SIZE: Final = 4 * MIB
LVM_METADATA_SIZE: Final = MIB
# Kubernetes integers are int64.
MAX_SIZE: Final = (1 << 63) - 1

PLAIN_CLASSES: Final = ("HDD", "SSD", "NVME")
LVG_CLASSES: Final = ("HDDLVG", "SSDLVG", "NVMELVG", "SYSLVG")
AC_STORAGE_CLASSES: Final = PLAIN_CLASSES + LVG_CLASSES
ANY_CLASS: Final = "ANY"
REQUEST_STORAGE_CLASSES: Final = (*AC_STORAGE_CLASSES, ANY_CLASS)
# ``ANY`` looks at plain drives in this order and never at a volume group.
ANY_ORDER: Final = PLAIN_CLASSES
# The plain media an ``xLVG`` request may turn into a volume group.  SYSLVG (the
# system disk's group) has none: it can only be used, never created.
LVG_MEDIA: Final[Mapping[str, str | None]] = MappingProxyType(
    {"HDDLVG": "HDD", "SSDLVG": "SSD", "NVMELVG": "NVME", "SYSLVG": None}
)

REQUESTED: Final = "REQUESTED"
RESERVED: Final = "RESERVED"
REJECTED: Final = "REJECTED"
CANCELLED: Final = "CANCELLED"
ACR_STATUSES: Final = (REQUESTED, RESERVED, REJECTED, CANCELLED)
# api/v1/constants.go CSI statuses of a LogicalVolumeGroup that can never take a volume.
LVG_UNUSABLE_STATUSES: Final = frozenset({"FAILED", "REMOVING", "REMOVED"})
LVG_UNUSABLE_HEALTH: Final = frozenset({"BAD"})
WAIT: Final = "WAIT"

# ``kustodian.io/reason`` codes written by ``apply_decision`` (``kustodian.io/message`` has the text).
REASON_REJECTED: Final = "Rejected"
REASON_WAITING: Final = "WaitingForLVGReservation"

DecisionStatus: TypeAlias = Literal["RESERVED", "REJECTED", "WAIT"]


def is_lvg(storage_class: str) -> bool:
    return storage_class in LVG_MEDIA


def align_to_extent(size: int) -> int:
    """``size`` rounded up to whole 4 MiB extents: what an LVG volume really occupies."""
    return -(-size // PE_SIZE) * PE_SIZE


def lvg_usable_size(drive_size: int) -> int:
    """Bytes a plain drive offers to LVG volumes once it becomes a volume group."""
    return max(0, (drive_size - LVM_METADATA_SIZE) // PE_SIZE * PE_SIZE)


def format_size(size: int) -> str:
    """Bytes for people: exact binary units when they are exact, bytes otherwise."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", MIB)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def parse_timestamp(value: object) -> datetime | None:
    """A Kubernetes RFC 3339 timestamp as an aware UTC datetime, ``None`` if unusable: the one
    parser (:func:`kustodian.policy.timestamps.parse_rfc3339`), so a zone-less stamp is refused
    here as everywhere (an ACR without a usable time is never stale by age, never made to wait)."""
    return parse_rfc3339(value)


def format_timestamp(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def plus(when: datetime, delta: timedelta) -> datetime:
    """``when + delta``, saturating at the calendar's ends (a year-9999 timestamp is legal)."""
    try:
        return when + delta
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC) if delta > timedelta(0) else datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class PlanOptions:
    """Knobs of the planner; the defaults are what the controller runs with."""

    # Minimise drives used by LVG volumes (upstream's SequentialLVGReservation, on by
    # default there too): an ACR with an ``xLVG`` request waits while another ACR holding
    # an ``xLVG`` reservation of the same class is RESERVED on one of its nodes.
    sequential_lvg: bool = True
    # ...but never longer than this after the waiting ACR was created (upstream #589).
    sequential_lvg_timeout: timedelta = timedelta(minutes=5)
    # How soon a waiting ACR should be looked at again (capped by the timeout).
    sequential_lvg_retry: timedelta = timedelta(seconds=10)
    # Reserve on at most this many of the requested nodes (the first that fit, in the
    # extender's order); 0 reserves on every node that fits, as upstream does.  The
    # scheduler then chooses among fewer nodes, but an unbound pod holds far less.
    max_reserved_nodes: int = 0


@dataclass(frozen=True)
class ReservationDecision:
    """What the planner decided for one ACR.

    ``reservations`` maps each request name (in the ACR's own order) to the chosen AC
    names, one per entry of ``reserved_nodes`` and in the same order.  ``reason`` is the
    text for people (why REJECTED, why WAIT); ``retry_after`` is set for WAIT only.
    """

    acr_name: str
    status: DecisionStatus
    reserved_nodes: tuple[str, ...] = ()
    reservations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reason: str = ""
    retry_after: timedelta | None = None

    def __post_init__(self) -> None:
        # Frozen all the way down: a decision handed to several consumers cannot drift.
        object.__setattr__(self, "reserved_nodes", tuple(self.reserved_nodes))
        object.__setattr__(
            self, "reservations", MappingProxyType({k: tuple(v) for k, v in self.reservations.items()})
        )
