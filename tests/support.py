"""Small helpers the test modules share: a settable clock and a bounded wait."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from kustodian.testing.testserver import free_port

__all__ = ["Clock", "free_port", "wait_for"]


class Clock:
    """An aware UTC clock the test moves by hand, starting on a whole second.

    Whole seconds keep stamps written with second precision exact (the node-cleanup
    timer rounds up), so deadlines can be asserted to the second.
    """

    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now


def wait_for(cond: Callable[[], bool], what: str, timeout: float = 10, poll: float = 0.02) -> None:
    """Poll ``cond`` until true; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(poll)
