"""Time, passed in: every decision takes ``now`` and every loop a ``Clock`` (tests move it by hand).

A leaf module (stdlib only) so that every layer uses the same two names instead of its own copy.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["Clock", "utc_now"]

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """An aware UTC ``datetime``: never a naive one, which would compare wrongly with API stamps."""
    return datetime.now(UTC)
