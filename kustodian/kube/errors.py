"""Errors raised by the Kubernetes adapter.

Every ``httpx`` failure and every non-2xx answer of the API server is wrapped once,
here, so business code never tests ``status == 404``.  ``KubeError`` sits under
:class:`kustodian.errors.KustodianError`; this is its branch of the one tree drawn (and
checked by a test) in :mod:`kustodian.errors`::

    KubeError
     ├── ApiError                 the server answered with a failure Status
     │    ├── NotFound            404
     │    ├── Conflict            409 (stale resourceVersion / failed precondition)
     │    │    └── AlreadyExists  409, reason AlreadyExists
     │    ├── Forbidden           401, 403 (also: denied by an admission webhook)
     │    ├── Gone                410 (resourceVersion too old: re-list)
     │    └── Invalid             400, 422
     ├── Unavailable              5xx, 429, timeouts, refused or dropped connections
     └── Fenced                   a destructive call refused before it was sent: this replica
                                  may no longer hold its Lease
"""

from __future__ import annotations

from typing import Any

from kustodian.errors import KustodianError


class KubeError(KustodianError):
    """Base of every error raised by :mod:`kube`."""


class ApiError(KubeError):
    """The API server answered with a failure ``Status``."""

    def __init__(self, status: int, reason: str, message: str, details: Any = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.details = details


class NotFound(ApiError):
    pass


class Conflict(ApiError):
    pass


class AlreadyExists(Conflict):
    pass


class Forbidden(ApiError):
    pass


class Gone(ApiError):
    pass


class Invalid(ApiError):
    pass


class Unavailable(KubeError):
    """The API server could not be reached or asked us to come back later; retry with backoff."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def from_status(status: int, body: Any) -> KubeError:
    """Build the right error from an HTTP status and a decoded ``Status`` body (or anything)."""
    reason = ""
    message = ""
    details = None
    if isinstance(body, dict):
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or "")
        details = body.get("details")
    message = message or f"HTTP {status}"
    if status == 404:
        return NotFound(status, reason or "NotFound", message, details)
    if status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
        return cls(status, reason or "Conflict", message, details)
    if status in (401, 403):
        return Forbidden(status, reason or "Forbidden", message, details)
    if status == 410:
        return Gone(status, reason or "Expired", message, details)
    if status in (400, 422):
        return Invalid(status, reason or "Invalid", message, details)
    if status == 429 or status >= 500:
        return Unavailable(f"{status} {reason}: {message}".strip(), status)
    return ApiError(status, reason or "Unknown", message, details)


class Fenced(KubeError):
    """A destructive call refused before it was sent: this replica may no longer hold its Lease."""
