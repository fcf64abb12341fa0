"""Turning decisions into what gets written (the new ACR) and what gets shown (a table).

The controller writes exactly what ``apply_decision`` and ``narrow_to_node`` return, so
the mapping from a decision to ACR fields is decided here, once, in upstream's format
(what csi-baremetal's ``ReservationHelper.UpdateReservation`` writes):

- RESERVED: ``spec.Status = RESERVED``, ``spec.NodeRequests.Reserved`` = the nodes,
  each ``ReservationRequests[i].Reservations`` = its ACs in node order; the
  ``kustodian.io/reason`` and ``kustodian.io/message`` annotations are removed.
- REJECTED: ``spec.Status = REJECTED``, no reserved nodes, no reservations (both left
  out, as upstream's ``omitempty`` leaves them), ``kustodian.io/reason = Rejected`` and
  ``kustodian.io/message`` = the planner's explanation.
- WAIT: ``spec`` is left alone (the ACR stays REQUESTED), ``kustodian.io/reason =
  WaitingForLVGReservation``, the message says why; the caller requeues after
  ``decision.retry_after``.
- Whenever ``spec.Status`` changes, ``kustodian.io/status-since`` = ``now``: the TTL of
  a reservation counts from it, not from the ACR's creation.

The input is never mutated: the webhook and the controller diff the old object against
the new one to build their patches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from kustodian.policy.capacity.model import (
    MESSAGE_ANNOTATION,
    REASON_ANNOTATION,
    REASON_REJECTED,
    REASON_WAITING,
    REJECTED,
    RESERVED,
    STATUS_SINCE_ANNOTATION,
    ReservationDecision,
    format_size,
    format_timestamp,
)
from kustodian.policy.objects import RawObject, field, list_field, name, str_field

PLAN_TABLE_HEADER: Final = ("ACR", "STATUS", "NODE", "REQUEST", "AC/LOCATION", "SIZE", "REASON")


def _thaw(value: Any) -> Any:
    """A deep, plain-``dict``/``list`` copy of decoded JSON (mappings may be read-only)."""
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_thaw(v) for v in value]
    return value


def _annotations(new: dict[str, Any]) -> dict[str, Any]:
    meta = new.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    new["metadata"] = meta
    annotations = meta.get("annotations")
    annotations = dict(annotations) if isinstance(annotations, dict) else {}
    meta["annotations"] = annotations
    return annotations


def _set_status(new: dict[str, Any], spec: dict[str, Any], status: str, now: datetime | None) -> None:
    if spec.get("Status") != status:
        spec["Status"] = status
        if now is not None:
            _annotations(new)[STATUS_SINCE_ANNOTATION] = format_timestamp(now)


def apply_decision(acr: RawObject, decision: ReservationDecision,
                   now: datetime | None = None) -> dict[str, Any]:
    """The ACR as it should be after ``decision`` (a new object; ``acr`` is untouched)."""
    if name(acr) != decision.acr_name:
        raise ValueError(f"decision is for {decision.acr_name!r}, not for ACR {name(acr)!r}")
    new: dict[str, Any] = _thaw(acr)
    if decision.status == "WAIT":
        annotations = _annotations(new)
        annotations[REASON_ANNOTATION] = REASON_WAITING
        annotations[MESSAGE_ANNOTATION] = decision.reason
        return new

    spec = new.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    new["spec"] = spec
    node_requests = spec.get("NodeRequests")
    node_requests = node_requests if isinstance(node_requests, dict) else {}
    spec["NodeRequests"] = node_requests
    reserved = decision.status == "RESERVED"
    _set_status(new, spec, RESERVED if reserved else REJECTED, now)
    if reserved:
        node_requests["Reserved"] = list(decision.reserved_nodes)
    else:
        node_requests.pop("Reserved", None)
    for item in spec.get("ReservationRequests") or []:
        if isinstance(item, dict):
            request_name = str_field(item, "CapacityRequest", "Name")
            if reserved:
                item["Reservations"] = list(decision.reservations.get(request_name, ()))
            else:
                item.pop("Reservations", None)
    meta = new.get("metadata")
    current = meta.get("annotations") if isinstance(meta, dict) else None
    if reserved:
        if isinstance(current, dict):
            current.pop(REASON_ANNOTATION, None)
            current.pop(MESSAGE_ANNOTATION, None)
    else:
        annotations = _annotations(new)
        annotations[REASON_ANNOTATION] = REASON_REJECTED
        annotations[MESSAGE_ANNOTATION] = decision.reason
    return new


def narrow_to_node(acr: RawObject, node_id: str, node_of: Callable[[str], str]) -> dict[str, Any] | None:
    """The RESERVED ACR keeping only ``node_id``'s reservations, once its pod is bound there.

    The scheduler picked one node; the ACs reserved on the others are promised to a pod
    that will never use them.  What stays is exactly what csi-baremetal's volume manager
    reads: ``handleVolumeCreation`` takes, per request, the reserved AC whose ``NodeId`` is
    the volume's node, so each request keeps the one AC that ``node_of`` (AC name -> its
    node) puts on ``node_id``.  ``None`` when there is nothing to release, or when some
    request has no AC or several on that node (then the ACR is left for the TTL: a guess
    could drop the AC the volume needs).
    """
    if str_field(acr, "spec", "Status") != RESERVED:
        return None
    reserved = list_field(acr, "spec", "NodeRequests", "Reserved")
    if len(reserved) <= 1 or node_id not in reserved:
        return None
    new: dict[str, Any] = _thaw(acr)
    requests = new["spec"].get("ReservationRequests")
    if not isinstance(requests, list):
        return None
    for item in requests:
        acs = item.get("Reservations") if isinstance(item, dict) else None
        if not isinstance(acs, list):
            return None
        here = [a for a in acs if isinstance(a, str) and node_of(a) == node_id]
        if len(here) != 1:
            return None
        item["Reservations"] = here
    new["spec"]["NodeRequests"]["Reserved"] = [node_id]
    return new


def plan_table(
    decisions: Sequence[ReservationDecision],
    acs: Iterable[RawObject] = (),
    acrs: Iterable[RawObject] = (),
) -> list[tuple[str, ...]]:
    """Rows for ``kustodian capacity plan --from DIR`` (header: ``PLAN_TABLE_HEADER``).

    One row per (reserved node, request) for RESERVED decisions; one row carrying the
    reason for REJECTED and WAIT.  ``acs`` adds locations to AC names and ``acrs`` adds
    request sizes; without them those cells show only what the decision knows.
    """
    locations = {name(ac): str_field(ac, "spec", "Location") for ac in acs}
    sizes: dict[tuple[str, str], str] = {}
    for acr in acrs:
        for item in list_field(acr, "spec", "ReservationRequests"):
            size = field(item, "CapacityRequest", "Size")
            if isinstance(size, int) and not isinstance(size, bool):
                sizes[(name(acr), str_field(item, "CapacityRequest", "Name"))] = format_size(size)
    rows: list[tuple[str, ...]] = []
    for d in decisions:
        if d.status != "RESERVED":
            rows.append((d.acr_name, d.status, "-", "-", "-", "-", d.reason))
            continue
        for j, node in enumerate(d.reserved_nodes):
            for request_name, chosen in d.reservations.items():
                ac = chosen[j] if j < len(chosen) else "-"
                location = locations.get(ac, "")
                rows.append((
                    d.acr_name,
                    d.status,
                    node,
                    request_name,
                    f"{ac}/{location}" if location else ac,
                    sizes.get((d.acr_name, request_name), "-"),
                    "",
                ))
    return rows
