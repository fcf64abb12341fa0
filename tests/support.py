"""Small helpers the test modules share: a settable clock and bounded waits on a condition.

Tests wait on conditions (or move a clock they inject), never a fixed time: a sleep is
either too short on a loaded machine or wasted on an idle one.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kustodian.testing.testserver import free_port

__all__ = ["Clock", "ThreadStartGate", "eventually", "free_port", "wait_for", "wait_while_running"]


class Clock:
    """An aware UTC clock the test moves by hand, starting on a whole second.

    Whole seconds keep stamps written with second precision exact (the node-cleanup
    timer rounds up), so deadlines can be asserted to the second.
    """

    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now


def eventually(cond: Callable[[], bool], timeout: float = 10, poll: float = 0.02) -> bool:
    """Poll ``cond`` until true (True) or until ``timeout`` seconds have passed (False).

    The one place the tests wait a fixed time on purpose: the short pause between two looks at
    a condition, never a guess at how long something takes.
    """
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)
    return True


def wait_for(cond: Callable[[], bool], what: str | Callable[[], str], timeout: float = 10,
             poll: float = 0.02) -> None:
    """Poll ``cond`` until true; fail naming ``what`` after ``timeout`` seconds.

    ``what`` may be a function, called only on failure, to describe the state then (a log).
    """
    if not eventually(cond, timeout, poll):
        raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")


def wait_while_running(proc: subprocess.Popen[Any], log: Path, cond: Callable[[], bool], what: str,
                       timeout: float = 30, poll: float = 0.1) -> None:
    """``wait_for`` a condition a process of the test brings about; fail at once, with its log,
    if the process exits first."""
    def met() -> bool:
        if cond():
            return True
        if proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode} before {what}:\n{log.read_text()}")
        return False

    wait_for(met, lambda: f"{what}\n{log.read_text()}", timeout, poll)


_RealThread = threading.Thread  # before any test replaces it


class ThreadStartGate:
    """Holds ``Thread.start()`` of the threads whose name ``match`` accepts at a gate: the window
    between creating a thread and starting it, kept open while a test races a stop against it.
    ``install`` replaces ``threading.Thread`` for the test (``monkeypatch`` undoes it); ``entered``
    is set once a matching thread waits, ``gate.set()`` lets it start."""

    Thread = _RealThread  # the real one, for the test's own threads

    def __init__(self, match: Callable[[str], bool]) -> None:
        self.match = match
        self.entered = threading.Event()
        self.gate = threading.Event()

    def install(self, monkeypatch: Any) -> ThreadStartGate:
        gate = self

        class Gated(_RealThread):
            def start(self) -> None:
                if gate.match(self.name):
                    gate.entered.set()
                    gate.gate.wait(30)
                super().start()

        monkeypatch.setattr(threading, "Thread", Gated)
        return self
