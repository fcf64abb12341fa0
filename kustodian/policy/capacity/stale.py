"""Which reservations are garbage, and which can shrink: the pure half of ACR housekeeping.

csi-baremetal's scheduler extender names an ACR after its pod: ``<namespace>-<pod>``
(``getReservationName``), with the pod's namespace in ``spec.Namespace``.  So the pod of
an ACR is ``spec.Namespace`` + the name with the ``<namespace>-`` prefix cut off; an ACR
whose name does not start that way has no pod we can know, and is only ever collected
by age.

Collected (deleted), in this order of reasons:

- its pod no longer exists (nobody will ever consume or retry it);
- its pod is Running: its volumes were created (upstream's volume manager releases each
  request as it creates the volume; an ACR left over then is garbage, upstream #589);
- it has been RESERVED for longer than the TTL, counted from its last status change
  (``kustodian.io/status-since``, else its creation): an ACR rejected for an hour and
  reserved a minute ago is a minute old.

Shrunk (``bound_releases``): once the pod is bound (``spec.nodeName``), a RESERVED ACR
keeps only the bound node's reservations.

Take the pod snapshot *after* the ACR snapshot: then a pod missing from it is really
gone, not merely newer than the cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from kustodian.policy.capacity.model import (
    RESERVED,
    STATUS_SINCE_ANNOTATION,
    parse_timestamp,
    plus,
)
from kustodian.policy.objects import RawObject, field, map_field, name, str_field

RUNNING = "Running"


@dataclass(frozen=True)
class PodState:
    """What housekeeping needs of a pod: where it is bound and how far it got."""

    node_name: str = ""
    phase: str = ""


@dataclass(frozen=True)
class StaleReservation:
    name: str
    why: str
    pod_gone: str = ""  # the pod key, when that is the reason


def pod_key(acr: RawObject) -> str:
    """``<namespace>/<pod>`` of the pod the ACR was made for ("" if its name says no pod)."""
    namespace = str_field(acr, "spec", "Namespace") or "default"
    acr_name = name(acr)
    prefix = f"{namespace}-"
    if not acr_name.startswith(prefix) or len(acr_name) == len(prefix):
        return ""
    return f"{namespace}/{acr_name[len(prefix):]}"


def status_since(acr: RawObject) -> datetime | None:
    """When the ACR entered its current status, as far as anyone wrote it down."""
    since = parse_timestamp(map_field(acr, "metadata", "annotations").get(STATUS_SINCE_ANNOTATION))
    return since if since is not None else parse_timestamp(field(acr, "metadata", "creationTimestamp"))


def stale_reservations(
    acrs: Iterable[RawObject],
    pods: Mapping[str, PodState],
    now: datetime,
    ttl: timedelta,
) -> list[StaleReservation]:
    """ACRs to delete (sorted by name), each with why.

    ``pods`` maps ``<namespace>/<name>`` of every live pod to its state.  An ACR without a
    usable timestamp is never stale by age: we cannot tell how old it is.
    """
    stale: dict[str, StaleReservation] = {}
    for acr in acrs:
        acr_name = name(acr)
        if not acr_name or acr_name in stale:
            continue
        key = pod_key(acr)
        if key:
            pod = pods.get(key)
            if pod is None:
                stale[acr_name] = StaleReservation(acr_name, f"its pod {key} no longer exists", pod_gone=key)
                continue
            if pod.phase == RUNNING:
                stale[acr_name] = StaleReservation(acr_name, f"its pod {key} is Running: its volumes exist")
                continue
        if str_field(acr, "spec", "Status") == RESERVED:
            since = status_since(acr)
            if since is not None and now > plus(since, ttl):
                stale[acr_name] = StaleReservation(
                    acr_name, f"RESERVED since {since.isoformat()}, longer than the {ttl} TTL")
    return [stale[n] for n in sorted(stale)]


def bound_releases(
    acrs: Iterable[RawObject],
    pods: Mapping[str, PodState],
    node_ids: Mapping[str, str],
) -> list[tuple[str, str]]:
    """``(ACR name, csi-baremetal node ID)`` for every RESERVED ACR held on more nodes than
    the one its pod is bound to (``node_ids``: Kubernetes node name -> csi-baremetal ID).

    A pod bound to a node whose ID is unknown, or not among the reserved ones, releases
    nothing: the volume manager will look for that node's AC, and guessing could take it.
    """
    out = []
    for acr in acrs:
        if str_field(acr, "spec", "Status") != RESERVED:
            continue
        key = pod_key(acr)
        pod = pods.get(key) if key else None
        if pod is None or not pod.node_name:
            continue
        node_id = node_ids.get(pod.node_name)
        reserved = field(acr, "spec", "NodeRequests", "Reserved")
        if node_id and isinstance(reserved, list) and len(reserved) > 1 and node_id in reserved:
            out.append((name(acr), node_id))
    return sorted(out)
