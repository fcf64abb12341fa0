"""What a process runs, as controller-runtime's ``Runnable``: started once, stopped once, one flag.

Everything long-running in a Kustodian process (the HTTPS server, followed CRD kinds, a
cert manager, a disk monitor, a timer, a controller's work queue) is a :class:`Runnable`
added to the process's one :class:`~kustodian.runtime.manager.Manager`.  ``needs_leader``
says when the Manager starts it:

* ``False``: at once, before leader election and before any cache has synced (the HTTPS
  server, which answers "not ready" until the caches are in; the cert manager, without
  which the server cannot start);
* ``True``: only while this replica leads (every replica leads when leader election is
  off), and only once every cache has synced: acting on a partial view is the one thing a
  controller must never do.

``start()`` returns at once (a runnable that blocks runs in its own thread: :class:`Loop`);
``stop()`` returns once it has stopped, or a bounded time later.  A runnable whose start
begins a sync the Manager should wait for before the controllers start (caches that appear
only once their resource is served) also implements :class:`Syncs`.

This module and the Manager are the only places that start threads for a lifecycle or wait
for caches; a test greps the package for any other.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from kustodian.kube.cache import WatchCache, wait_all_synced

__all__ = ["Loop", "Runnable", "Service", "Syncs", "sync_report"]

log = logging.getLogger(__name__)


@runtime_checkable
class Runnable(Protocol):
    """Something a process runs: ``start`` returns at once, ``stop`` once it has stopped."""

    name: str
    needs_leader: bool

    def start(self) -> None: ...

    def stop(self) -> None: ...


@runtime_checkable
class Syncs(Protocol):
    """A leader runnable the Manager waits for, with the caches, before any controller starts."""

    name: str

    def wait_synced(self, timeout: float) -> bool: ...


class Loop:
    """``run(stop)`` in a thread of its own, until ``stop`` is set (it must return then).

    ``on_stop`` is called when stopping, for a loop that blocks elsewhere than on the event
    (a server).  A ``critical`` loop that returns or raises before it was stopped makes the
    Manager stop the process with exit code 1 (a server that could not bind its port).
    """

    def __init__(self, name: str, run: Callable[[threading.Event], object], *, needs_leader: bool = True,
                 on_stop: Callable[[], object] | None = None, join_timeout: float = 5.0,
                 critical: bool = False) -> None:
        self.name = name
        self.needs_leader = needs_leader
        self.critical = critical
        self.on_exit: Callable[[str], None] | None = None  # set by the Manager for a critical loop
        self._run = run
        self._on_stop = on_stop
        self._join_timeout = join_timeout
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"Loop({self.name!r}, needs_leader={self.needs_leader})"

    @property
    def stopping(self) -> threading.Event:
        return self._stop

    def start(self) -> None:
        if self._thread is not None:
            return
        thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        thread.start()
        self._thread = thread  # recorded once started: stop() never joins a thread not yet started

    def _main(self) -> None:
        why = "returned"
        try:
            self._run(self._stop)
        except BaseException as exc:
            why = f"failed: {type(exc).__name__}: {exc}"
            if not self._stop.is_set():
                log.exception("%s %s", self.name, why)
        if self.critical and not self._stop.is_set() and self.on_exit is not None:
            self.on_exit(f"{self.name} {why}")

    def stop(self) -> None:
        self._stop.set()
        if self._on_stop is not None:
            self._on_stop()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self._join_timeout)

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


class Service:
    """A component with a ``start``/``stop`` of its own (followed kinds, a warmer), as a runnable."""

    def __init__(self, name: str, start: Callable[[], object], stop: Callable[[], object], *,
                 needs_leader: bool) -> None:
        self.name = name
        self.needs_leader = needs_leader
        self._start = start
        self._stop = stop

    def __repr__(self) -> str:
        return f"Service({self.name!r}, needs_leader={self.needs_leader})"

    def start(self) -> None:
        self._start()

    def stop(self) -> None:
        self._stop()


def sync_report(name: str, caches: Callable[[], Iterable[WatchCache]], timeout: float) -> Loop:
    """A loop that logs once every cache has synced, or which have not after ``timeout``.

    For a process that serves before its caches are in (the webhook answers "not ready"
    meanwhile): a sync that takes too long is worth a warning, not an exit.
    """

    def report(stop: threading.Event) -> None:
        current = list(caches())
        if wait_all_synced(current, timeout):
            log.info("all %d caches synced; ready", len(current))
        elif not stop.is_set():
            pending = sorted(c.kind_key for c in current if not c.synced.is_set())
            log.warning("caches not synced after %ss (not ready): %s", timeout, ", ".join(pending))

    return Loop(name, report, needs_leader=False, join_timeout=0.1)
