"""Admission validation for AvailableCapacity and AvailableCapacityReservation objects.

The webhook refuses bad objects before the planner ever sees them, so the planner can
treat a malformed ACR as a plain rejection instead of a crash.  Like cert-manager's
``field.ErrorList``, every problem is collected with its field path
(``spec.reservationRequests[1].capacityRequest.size: must be a non-negative integer,
got -5``); the caller joins them into one message.

JSON has no separate integer type on the Python side of the decoder, so the checks are
strict on purpose: ``True`` is not a size (``bool`` is an ``int`` subclass), nor is
``"5"`` or ``5.0``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kustodian.policy.capacity.model import (
    AC_KIND,
    AC_STORAGE_CLASSES,
    ACR_KIND,
    ACR_STATUSES,
    MAX_SIZE,
    REQUEST_STORAGE_CLASSES,
    RESERVED,
    STORAGE_GROUP_LABEL,
)
from kustodian.policy.objects import RawObject, field

_MISSING = object()


def _get(obj: Any, key: str) -> Any:
    return obj.get(key, _MISSING) if isinstance(obj, Mapping) else _MISSING


def _object_error(errors: list[str], path: str, value: Any) -> None:
    missing = value is _MISSING or value is None
    errors.append(f"{path}: required" if missing else f"{path}: must be an object, got {value!r}")


def _check_size(errors: list[str], path: str, value: Any) -> None:
    if value is _MISSING or value is None:
        errors.append(f"{path}: required")
    elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
        errors.append(f"{path}: must be a non-negative integer, got {value!r}")
    elif value > MAX_SIZE:
        errors.append(f"{path}: must be at most {MAX_SIZE}, got {value!r}")


def _check_name(errors: list[str], path: str, value: Any) -> None:
    if value is _MISSING or value is None:
        errors.append(f"{path}: required")
    elif not isinstance(value, str) or not value:
        errors.append(f"{path}: must be a non-empty string, got {value!r}")


def _check_choice(errors: list[str], path: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value is _MISSING or value is None:
        errors.append(f"{path}: required")
    elif not isinstance(value, str) or value not in allowed:
        errors.append(f"{path}: must be one of {', '.join(allowed)}, got {value!r}")


def _check_optional_str(errors: list[str], path: str, value: Any) -> None:
    if value is not _MISSING and value is not None and not isinstance(value, str):
        errors.append(f"{path}: must be a string, got {value!r}")


def _check_name_list(errors: list[str], path: str, value: Any, *, required: bool) -> list[str]:
    """Check a list of non-empty strings; return the valid ones (for cross-checks)."""
    if value is _MISSING or value is None:
        if required:
            errors.append(f"{path}: required")
        return []
    if not isinstance(value, list):
        errors.append(f"{path}: must be a list of strings, got {value!r}")
        return []
    if all(type(item) is str and item for item in value):
        return value  # the common case, without building per-item state (1,000-node lists)
    good: list[str] = []
    for i, item in enumerate(value):
        if isinstance(item, str) and item:
            good.append(item)
        else:
            errors.append(f"{path}[{i}]: must be a non-empty string, got {item!r}")
    return good


def _check_kind(errors: list[str], obj: RawObject, kind: str) -> None:
    # The webhook routes by kind, so a missing kind is not this function's business;
    # a wrong one means the caller handed us the wrong object.
    value = obj.get("kind", _MISSING)
    if value is not _MISSING and value != kind:
        errors.append(f"kind: must be {kind}, got {value!r}")


def validate_available_capacity(obj: RawObject) -> list[str]:
    """Every problem with an AvailableCapacity, each prefixed with its field path."""
    errors: list[str] = []
    _check_kind(errors, obj, AC_KIND)
    _check_name(errors, "metadata.name", _get(_get(obj, "metadata"), "name"))
    spec = _get(obj, "spec")
    if not isinstance(spec, Mapping):
        _object_error(errors, "spec", spec)
        return errors
    _check_name(errors, "spec.location", _get(spec, "location"))
    _check_name(errors, "spec.nodeId", _get(spec, "nodeId"))
    _check_choice(errors, "spec.storageClass", _get(spec, "storageClass"), AC_STORAGE_CLASSES)
    _check_size(errors, "spec.size", _get(spec, "size"))
    labels = field(obj, "metadata", "labels")
    if isinstance(labels, Mapping):
        group = labels.get(STORAGE_GROUP_LABEL, _MISSING)
        _check_optional_str(errors, f"metadata.labels[{STORAGE_GROUP_LABEL}]", group)
    return errors


def _check_request(errors: list[str], path: str, item: Any, seen: set[str]) -> list[str] | None:
    """Check one ``reservationRequests[i]``; return its reservations (``None`` if absent)."""
    if not isinstance(item, Mapping):
        errors.append(f"{path}: must be an object, got {item!r}")
        return None
    request = _get(item, "capacityRequest")
    cpath = f"{path}.capacityRequest"
    if not isinstance(request, Mapping):
        _object_error(errors, cpath, request)
    else:
        req_name = _get(request, "name")
        _check_name(errors, f"{cpath}.name", req_name)
        if isinstance(req_name, str) and req_name:
            if req_name in seen:
                errors.append(f"{cpath}.name: duplicate request name {req_name!r}")
            seen.add(req_name)
        _check_choice(errors, f"{cpath}.storageClass", _get(request, "storageClass"), REQUEST_STORAGE_CLASSES)
        _check_size(errors, f"{cpath}.size", _get(request, "size"))
        _check_optional_str(errors, f"{cpath}.storageGroup", _get(request, "storageGroup"))
    raw = _get(item, "reservations")
    if raw is _MISSING or raw is None:
        return None
    return _check_name_list(errors, f"{path}.reservations", raw, required=False)


def validate_reservation(obj: RawObject) -> list[str]:
    """Every problem with an AvailableCapacityReservation, each with its field path.

    Beyond the shape, a RESERVED reservation must be coherent: its reserved nodes are
    among the requested ones, and every request lists exactly one AC per reserved node.
    """
    errors: list[str] = []
    _check_kind(errors, obj, ACR_KIND)
    _check_name(errors, "metadata.name", _get(_get(obj, "metadata"), "name"))
    created = _get(_get(obj, "metadata"), "creationTimestamp")
    _check_optional_str(errors, "metadata.creationTimestamp", created)
    status_obj = _get(obj, "status")
    if status_obj is not _MISSING and status_obj is not None:
        if isinstance(status_obj, Mapping):
            _check_optional_str(errors, "status.reason", _get(status_obj, "reason"))
            _check_optional_str(errors, "status.message", _get(status_obj, "message"))
        else:
            errors.append(f"status: must be an object, got {status_obj!r}")
    spec = _get(obj, "spec")
    if not isinstance(spec, Mapping):
        _object_error(errors, "spec", spec)
        return errors
    _check_name(errors, "spec.namespace", _get(spec, "namespace"))
    status = _get(spec, "status")
    _check_choice(errors, "spec.status", status, ACR_STATUSES)

    requested: list[str] = []
    reserved: list[str] = []
    node_requests = _get(spec, "nodeRequests")
    if node_requests is _MISSING or node_requests is None:
        errors.append("spec.nodeRequests: required")
    elif not isinstance(node_requests, Mapping):
        _object_error(errors, "spec.nodeRequests", node_requests)
    else:
        requested = _check_name_list(
            errors, "spec.nodeRequests.requested", _get(node_requests, "requested"), required=True
        )
        reserved = _check_name_list(
            errors, "spec.nodeRequests.reserved", _get(node_requests, "reserved"), required=False
        )

    requests = _get(spec, "reservationRequests")
    all_reservations: list[tuple[int, list[str] | None]] = []
    if requests is _MISSING or requests is None:
        errors.append("spec.reservationRequests: required")
    elif not isinstance(requests, list):
        errors.append(f"spec.reservationRequests: must be a list, got {requests!r}")
    elif not requests:
        errors.append("spec.reservationRequests: must hold at least one request")
    else:
        seen: set[str] = set()
        for i, item in enumerate(requests):
            all_reservations.append(
                (i, _check_request(errors, f"spec.reservationRequests[{i}]", item, seen))
            )

    if status == RESERVED:
        if not reserved:
            errors.append("spec.nodeRequests.reserved: a RESERVED reservation needs at least one node")
        requested_set = set(requested)
        for j, node in enumerate(reserved):
            if node not in requested_set:
                errors.append(f"spec.nodeRequests.reserved[{j}]: node {node!r} was not requested")
        for i, acs in all_reservations:
            got = len(acs or [])
            if reserved and got != len(reserved):
                errors.append(
                    f"spec.reservationRequests[{i}].reservations: must list one AC per reserved node "
                    f"({len(reserved)}), got {got}"
                )
    return errors
