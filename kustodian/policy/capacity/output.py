"""Turning decisions into what gets written (the new ACR) and what gets shown (a table).

The controller writes exactly what ``apply_decision`` returns, so the mapping from a
decision to ACR fields is decided here, once:

- RESERVED: ``spec.status = RESERVED``, ``spec.nodeRequests.reserved`` = the nodes,
  each ``reservationRequests[i].reservations`` = its ACs in node order; ``status.reason``
  and ``status.message`` are removed.
- REJECTED: ``spec.status = REJECTED``, no reserved nodes, empty reservations,
  ``status.reason = "Rejected"`` and ``status.message`` = the planner's explanation.
- WAIT: ``spec`` is left alone (the ACR stays REQUESTED),
  ``status.reason = "WaitingForLVGReservation"``, ``status.message`` = why; the caller
  requeues after ``decision.retry_after``.

The input is never mutated: the webhook and the controller diff the old object against
the new one to build their patches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from kustodian.policy.capacity.model import (
    REASON_REJECTED,
    REASON_WAITING,
    REJECTED,
    RESERVED,
    Decision,
    format_size,
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


def apply_decision(acr: RawObject, decision: Decision) -> dict[str, Any]:
    """The ACR as it should be after ``decision`` (a new object; ``acr`` is untouched)."""
    if name(acr) != decision.acr_name:
        raise ValueError(f"decision is for {decision.acr_name!r}, not for ACR {name(acr)!r}")
    new: dict[str, Any] = _thaw(acr)
    status = new.get("status")
    status = dict(status) if isinstance(status, dict) else {}
    if decision.status == "WAIT":
        status["reason"] = REASON_WAITING
        status["message"] = decision.reason
        new["status"] = status
        return new

    spec = new.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    new["spec"] = spec
    node_requests = spec.get("nodeRequests")
    node_requests = node_requests if isinstance(node_requests, dict) else {}
    spec["nodeRequests"] = node_requests
    reserved = decision.status == "RESERVED"
    spec["status"] = RESERVED if reserved else REJECTED
    node_requests["reserved"] = list(decision.reserved_nodes) if reserved else []
    for item in spec.get("reservationRequests") or []:
        if isinstance(item, dict):
            request_name = str_field(item, "capacityRequest", "name")
            item["reservations"] = list(decision.reservations.get(request_name, ())) if reserved else []
    if reserved:
        status.pop("reason", None)
        status.pop("message", None)
    else:
        status["reason"] = REASON_REJECTED
        status["message"] = decision.reason
    if status or "status" in new:
        new["status"] = status
    return new


def plan_table(
    decisions: Sequence[Decision],
    acs: Iterable[RawObject] = (),
    acrs: Iterable[RawObject] = (),
) -> list[tuple[str, ...]]:
    """Rows for ``kustodian capacity plan --from DIR`` (header: ``PLAN_TABLE_HEADER``).

    One row per (reserved node, request) for RESERVED decisions; one row carrying the
    reason for REJECTED and WAIT.  ``acs`` adds locations to AC names and ``acrs`` adds
    request sizes; without them those cells show only what the decision knows.
    """
    locations = {name(ac): str_field(ac, "spec", "location") for ac in acs}
    sizes: dict[tuple[str, str], str] = {}
    for acr in acrs:
        for item in list_field(acr, "spec", "reservationRequests"):
            size = field(item, "capacityRequest", "size")
            if isinstance(size, int) and not isinstance(size, bool):
                sizes[(name(acr), str_field(item, "capacityRequest", "name"))] = format_size(size)
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
