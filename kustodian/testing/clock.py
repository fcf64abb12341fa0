"""A manual timer for periodic runnables: tests move time forward, nothing sleeps.

``runtime.periodic.Periodic`` waits through a ``Timer``; handed a :class:`ManualTimer`, its
waits end only when the test calls :meth:`ManualTimer.advance` past them (or wakes or stops
the loop), so a test of "every N seconds" takes no N seconds and never races a wall clock::

    timer = ManualTimer()
    loop = Periodic("beat", beat, interval=10.0, timer=timer)
    loop.start()
    timer.wait_for_waits(1)      # the first pass ran, the loop waits for its next
    timer.advance(10.0)          # the next pass is due
    timer.wait_for_waits(2)      # ... it ran, and the loop waits again
"""

from __future__ import annotations

import threading
import time

__all__ = ["ManualTimer"]


class _PokingEvent(threading.Event):
    """An event whose ``set()`` also wakes the timer's waiters (an Event has no callback)."""

    def __init__(self, timer: ManualTimer) -> None:
        super().__init__()
        self._timer = timer

    def set(self) -> None:
        super().set()
        self._timer.poke()


class ManualTimer:
    """Time that moves only when told to (``advance``); waits end when it passes their deadline."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._cond = threading.Condition()
        self.sleepers = 0  # waits in progress
        self.waits: list[float] = []  # every wait asked for, in seconds (jitter and intervals, for tests)

    def monotonic(self) -> float:
        with self._cond:
            return self._now

    def event(self) -> threading.Event:
        return _PokingEvent(self)

    def poke(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def wait(self, event: threading.Event, seconds: float) -> bool:
        with self._cond:
            deadline = self._now + max(0.0, seconds)
            self.waits.append(seconds)
            self.sleepers += 1
            self._cond.notify_all()
            try:
                while not event.is_set() and self._now < deadline:
                    self._cond.wait()
            finally:
                self.sleepers -= 1
                self._cond.notify_all()
            return event.is_set()

    def advance(self, seconds: float) -> None:
        """Move time forward: every wait whose deadline is passed now ends."""
        with self._cond:
            self._now += seconds
            self._cond.notify_all()

    def wait_for_waits(self, count: int, timeout: float = 10.0) -> None:
        """Block until ``count`` waits have begun since the start (a loop parked after its pass),
        bounded by ``timeout`` real seconds: a condition, never a fixed sleep."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.waits) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.waits)} of {count} waits begun after {timeout}s")
                self._cond.wait(left)
