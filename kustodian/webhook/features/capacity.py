"""Capacity objects at admission: refuse malformed AvailableCapacity / Reservation objects.

The CRD's OpenAPI schema already refuses most bad shapes; this catches what a
schema cannot say (a RESERVED reservation naming nodes it never requested, a
size above int64) and answers with every problem and its field path at once.
"""

from __future__ import annotations

from kustodian.policy.capacity import (
    AC_KIND_KEY,
    ACR_KIND_KEY,
    validate_available_capacity,
    validate_reservation,
)
from kustodian.webhook.registry import Registry
from kustodian.webhook.review import AdmissionRequest, Answer, allowed, denied


def on_change(req: AdmissionRequest) -> Answer:
    obj = req.object
    if not isinstance(obj, dict):
        return denied("the object is missing from the request", code=400, reason="BadRequest")
    errors = validate_available_capacity(obj) if req.kind_key == AC_KIND_KEY else validate_reservation(obj)
    if errors:
        return denied(f"{req.kind.kind} {req.name or ''}: " + "; ".join(errors), code=422, reason="Invalid")
    return allowed()


def register(registry: Registry) -> None:
    for kind in (AC_KIND_KEY, ACR_KIND_KEY):
        registry.validate(kind, ["CREATE", "UPDATE"], on_change)
