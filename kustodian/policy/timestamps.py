"""RFC 3339 as Kubernetes writes it (``metav1.Time``), parsed and formatted in one place.

A stamp without a zone is not RFC 3339 and is refused (``None``), never guessed to be UTC or
local time: a timer read one hour off could delete data an hour early.  Years past 9999 or
other values ``datetime`` cannot hold are refused the same way, not raised.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["format_rfc3339", "parse_rfc3339"]


def format_rfc3339(when: datetime) -> str:
    """``2024-05-01T12:00:00Z``: UTC, whole seconds, like ``metav1.Time``."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: object) -> datetime | None:
    """The aware UTC datetime written in ``text``, or ``None`` when it is not RFC 3339 with a zone."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)
        if parsed.tzinfo is None:
            return None
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
