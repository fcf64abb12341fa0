"""Validation of csi-baremetal AvailableCapacity and AvailableCapacityReservation objects.

The webhook refuses bad objects before the planner ever sees them, the planner treats a
malformed ACR as a plain rejection instead of a crash, and ``kustodian capacity plan
--from DIR`` reports them.  Like cert-manager's ``field.ErrorList``, every problem is
collected with its field path (``spec.ReservationRequests[1].CapacityRequest.Size: must
be a non-negative integer, got -5``); the caller joins them into one message.

Upstream's objects are protobuf structs serialised with ``omitempty``: a zero ``Size``
(the AC of a drive that is not clean), an empty ``Reservations`` or ``Reserved`` list
and an empty ``StorageGroup`` are *absent*, so absence means zero/empty here, never
"required".  What upstream always writes (names, node IDs, classes, the status) is
required.

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
    # (a plain dict, what the JSON decoder gives, skips the slower ABC check)
    return obj.get(key, _MISSING) if type(obj) is dict or isinstance(obj, Mapping) else _MISSING


def _object_error(errors: list[str], path: str, value: Any) -> None:
    missing = value is _MISSING or value is None
    errors.append(f"{path}: required" if missing else f"{path}: must be an object, got {value!r}")


def _check_size(errors: list[str], path: str, value: Any) -> None:
    if value is _MISSING or value is None:
        return  # omitempty: a zero size is not written
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
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
    try:
        "".join(value)  # raises unless every item is a string: the common case, at C speed
    except TypeError:
        pass  # (a 500-node list per ACR, 3,000 ACRs a batch)
    else:
        if all(value):  # no empty name (a length check per item, no comparison)
            return value
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
    _check_name(errors, "spec.Location", _get(spec, "Location"))
    _check_name(errors, "spec.NodeId", _get(spec, "NodeId"))
    _check_choice(errors, "spec.storageClass", _get(spec, "storageClass"), AC_STORAGE_CLASSES)
    _check_size(errors, "spec.Size", _get(spec, "Size"))
    labels = field(obj, "metadata", "labels")
    if labels is not None and not isinstance(labels, Mapping):
        errors.append(f"metadata.labels: must be an object, got {labels!r}")
    elif isinstance(labels, Mapping):
        group = labels.get(STORAGE_GROUP_LABEL, _MISSING)
        _check_optional_str(errors, f"metadata.labels[{STORAGE_GROUP_LABEL}]", group)
    return errors


def _check_request(errors: list[str], path: str, item: Any, seen: set[str]) -> list[str] | None:
    """Check one ``ReservationRequests[i]``; return its reservations (``None`` if absent)."""
    if type(item) is not dict and not isinstance(item, Mapping):
        errors.append(f"{path}: must be an object, got {item!r}")
        return None
    request = _get(item, "CapacityRequest")
    cpath = f"{path}.CapacityRequest"
    if type(request) is not dict and not isinstance(request, Mapping):
        _object_error(errors, cpath, request)
    else:
        req_name = _get(request, "Name")
        _check_name(errors, f"{cpath}.Name", req_name)
        if isinstance(req_name, str) and req_name:
            if req_name in seen:
                errors.append(f"{cpath}.Name: duplicate request name {req_name!r}")
            seen.add(req_name)
        _check_choice(errors, f"{cpath}.StorageClass", _get(request, "StorageClass"), REQUEST_STORAGE_CLASSES)
        _check_size(errors, f"{cpath}.Size", _get(request, "Size"))
        _check_optional_str(errors, f"{cpath}.StorageGroup", _get(request, "StorageGroup"))
    raw = _get(item, "Reservations")
    if raw is _MISSING or raw is None:
        return None
    return _check_name_list(errors, f"{path}.Reservations", raw, required=False)


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
    annotations = _get(_get(obj, "metadata"), "annotations")
    if annotations is not _MISSING and annotations is not None and not isinstance(annotations, Mapping):
        errors.append(f"metadata.annotations: must be an object, got {annotations!r}")
    spec = _get(obj, "spec")
    if not isinstance(spec, Mapping):
        _object_error(errors, "spec", spec)
        return errors
    # omitempty again: the extender's ACR for a pod without a namespace has none ("default")
    _check_optional_str(errors, "spec.Namespace", _get(spec, "Namespace"))
    status = _get(spec, "Status")
    _check_choice(errors, "spec.Status", status, ACR_STATUSES)

    requested: list[str] = []
    reserved: list[str] = []
    node_requests = _get(spec, "NodeRequests")
    if node_requests is _MISSING or node_requests is None:
        errors.append("spec.NodeRequests: required")
    elif not isinstance(node_requests, Mapping):
        _object_error(errors, "spec.NodeRequests", node_requests)
    else:
        requested = _check_name_list(
            errors, "spec.NodeRequests.Requested", _get(node_requests, "Requested"), required=True
        )
        reserved = _check_name_list(
            errors, "spec.NodeRequests.Reserved", _get(node_requests, "Reserved"), required=False
        )

    requests = _get(spec, "ReservationRequests")
    all_reservations: list[tuple[int, list[str] | None]] = []
    if requests is _MISSING or requests is None:
        errors.append("spec.ReservationRequests: required")
    elif not isinstance(requests, list):
        errors.append(f"spec.ReservationRequests: must be a list, got {requests!r}")
    elif not requests:
        errors.append("spec.ReservationRequests: must hold at least one request")
    else:
        seen: set[str] = set()
        for i, item in enumerate(requests):
            all_reservations.append(
                (i, _check_request(errors, f"spec.ReservationRequests[{i}]", item, seen))
            )

    if status == RESERVED:
        if not reserved:
            errors.append("spec.NodeRequests.Reserved: a RESERVED reservation needs at least one node")
        requested_set = set(requested)
        for j, node in enumerate(reserved):
            if node not in requested_set:
                errors.append(f"spec.NodeRequests.Reserved[{j}]: node {node!r} was not requested")
        for i, acs in all_reservations:
            got = len(acs or [])
            if reserved and got != len(reserved):
                errors.append(
                    f"spec.ReservationRequests[{i}].Reservations: must list one AC per reserved node "
                    f"({len(reserved)}), got {got}"
                )
    return errors
