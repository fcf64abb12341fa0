"""A loop that runs every N seconds, written once (client-go's ``wait.JitterUntil``).

Every periodic job of a process (the disk monitor, the orphan sizer, the heartbeat, the
capacity timer, a reconciler's resync, the deletion guard's warmer, the provider metrics, the
certificate reloader and renewal, the API liveness probe) is a :class:`Periodic` added to
the process's Manager; the component supplies only the body::

    manager.add_runnable(Periodic("heartbeat", heartbeat.beat_once, interval=10.0))
    monitor = Periodic("disk-monitor", agent.scan_once, interval=60.0, join_timeout=10)
    monitor.wake()  # the next pass now, not at the end of the interval

What it does, so a body never re-implements it:

* ``body()`` runs in a thread of its own, first at once (``immediate=True``) or after one
  interval; the interval is counted from the end of a pass (``sliding=True``, the default),
  or from its start (``sliding=False``: a probe that must run every N seconds whatever a
  round trip cost);
* ``jitter`` (a share of the interval, 0 to 1) spreads passes of many replicas: each wait is
  ``interval * (1 + jitter * random())``, as ``wait.Jitter`` makes it;
* ``interval`` may be a function, asked after each pass for the seconds until the next (a
  certificate renewed at a time of its own, a refresh that retries sooner until every kind is
  fresh); what the body returns is ignored;
* a pass that raises is logged with its traceback and the loop goes on: a periodic job
  outlives any one bad pass;
* ``wake()`` cuts the current wait short (a change worth looking at now); a wake during a
  pass runs one more pass right after it;
* ``stop()`` ends the wait at once and joins the thread (bounded by ``join_timeout``); a body
  that loops over many items reads :attr:`stopping` to end early;
* ``needs_leader`` is the Manager's one flag (:mod:`kustodian.runtime.runnables`).

Time is injected: waits go through a :class:`Timer` (the system's by default), so a test hands
in a manual one (``kustodian.testing.clock.ManualTimer``), moves it forward and never sleeps.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["SYSTEM_TIMER", "Periodic", "SystemTimer", "Timer"]

log = logging.getLogger(__name__)


class Timer(Protocol):
    """Where a periodic loop reads the time and waits: the system's, or a test's manual one."""

    def monotonic(self) -> float: ...

    def event(self) -> threading.Event:
        """A new event whose ``set()`` ends a :meth:`wait` on it at once."""
        ...

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Block until ``event`` is set or ``seconds`` have passed on this timer; whether it is set."""
        ...


class SystemTimer:
    """The monotonic clock and ``Event.wait``."""

    def monotonic(self) -> float:
        return time.monotonic()

    def event(self) -> threading.Event:
        return threading.Event()

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.wait(max(0.0, seconds))


SYSTEM_TIMER = SystemTimer()

Interval = float | Callable[[], float]


class Periodic:
    """``body()`` every ``interval`` seconds in a thread of its own, until stopped (see the module doc)."""

    def __init__(self, name: str, body: Callable[[], object], interval: Interval, *, jitter: float = 0.0,
                 needs_leader: bool = True, immediate: bool = True, sliding: bool = True,
                 timer: Timer = SYSTEM_TIMER, join_timeout: float = 5.0,
                 on_stop: Callable[[], object] | None = None) -> None:
        if not callable(interval) and not interval > 0:
            raise ValueError(f"{name}: the interval must be positive, not {interval}")
        if not 0.0 <= jitter <= 1.0:
            raise ValueError(f"{name}: jitter is a share of the interval (0 to 1), not {jitter}")
        self.name = name
        self.needs_leader = needs_leader
        self.interval = interval
        self.jitter = jitter
        self.immediate = immediate
        self.sliding = sliding
        self.passes = 0  # passes run to their end (or their exception); read by tests and diagnostics
        self._body = body
        self._timer = timer
        self._join_timeout = join_timeout
        self._on_stop = on_stop
        self._stop = threading.Event()
        self._wake = timer.event()  # set by wake() and by stop(): ends the current wait
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        every = "a varying interval" if callable(self.interval) else f"every {self.interval:g}s"
        return f"Periodic({self.name!r}, {every}, needs_leader={self.needs_leader})"

    @property
    def stopping(self) -> threading.Event:
        """Set once the loop is told to stop: a long pass may end early."""
        return self._stop

    def start(self) -> None:
        if self._thread is not None:
            return
        thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        thread.start()
        self._thread = thread  # recorded once started: stop() never joins a thread not yet started

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._on_stop is not None:
            self._on_stop()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self._join_timeout)

    def wake(self) -> None:
        """Run the next pass now (or right after the one running)."""
        self._wake.set()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def delay(self) -> float:
        """The wait before the next pass: the interval (asked now, when it is a function), jittered."""
        base = max(0.0, self.interval() if callable(self.interval) else self.interval)
        return base * (1.0 + self.jitter * random.random()) if self.jitter else base

    def _run(self) -> None:
        timer = self._timer
        if not self.immediate and self._pause(self.delay()):
            return
        while not self._stop.is_set():
            started = timer.monotonic()
            try:
                self._body()
            except Exception:  # the loop outlives any one bad pass
                log.exception("%s: a pass failed", self.name)
            self.passes += 1
            wait = self.delay()
            if not self.sliding:
                wait -= timer.monotonic() - started
            if self._pause(wait):
                return

    def _pause(self, seconds: float) -> bool:
        """Wait ``seconds`` (or until woken); True when the loop is to stop."""
        if self._stop.is_set():
            return True
        self._timer.wait(self._wake, seconds)
        self._wake.clear()
        if self._stop.is_set():
            self._wake.set()  # stays set: a wait after stop() returns at once
            return True
        return False
