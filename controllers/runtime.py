"""The one reconcile contract every Kustodian loop follows (controller-runtime's, in small).

``reconcile(key) -> Result``: level-based and idempotent, it reads the caches and
acts; it never asks what event woke it.  The work queue

* deduplicates: a key queued many times before a worker takes it runs once, and a
  key being processed is never processed by two workers at once (it is re-queued
  after the running pass if it was added meanwhile);
* delays: ``enqueue_after`` and ``Result(requeue_after=...)`` park keys in a heap;
* backs off: a temporary error (``Unavailable``, ``Conflict``) retries the key with
  per-key exponential backoff; any other exception is logged with its traceback
  and also retried with backoff (a bug must not silently drop work), capped.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

from kube.errors import Conflict, Unavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Result:
    requeue_after: float | None = None


Reconcile = Callable[[str], "Result | None"]


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.reconciles = Counter("kustodian_controller_reconcile", "Reconcile passes by result",
                                  ["controller", "result"], registry=registry)
        self.latency = Histogram("kustodian_controller_reconcile_duration_seconds",
                                 "Time of one reconcile pass", ["controller"], registry=registry)


class Controller:
    def __init__(self, name: str, reconcile: Reconcile, *, workers: int = 2,
                 metrics: ControllerMetrics | None = None, base_backoff: float = 0.05,
                 max_backoff: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self._reconcile = reconcile
        self._workers = workers
        self._metrics = metrics
        self._base, self._max = base_backoff, max_backoff
        self._clock = clock
        self._cond = threading.Condition()
        self._ready: list[str] = []  # FIFO of keys ready now
        self._queued: set[str] = set()  # keys in _ready
        self._processing: set[str] = set()
        self._dirty: set[str] = set()  # added while processing: run again afterwards
        self._delayed: list[tuple[float, int, str]] = []
        self._seq = 0
        self._failures: dict[str, int] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = False

    # -- queue ----------------------------------------------------------------------------------

    def enqueue(self, key: str) -> None:
        with self._cond:
            if key in self._processing:
                self._dirty.add(key)
                return
            if key not in self._queued:
                self._queued.add(key)
                self._ready.append(key)
                self._cond.notify()

    def enqueue_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.enqueue(key)
            return
        with self._cond:
            self._seq += 1
            heapq.heappush(self._delayed, (self._clock() + delay, self._seq, key))
            self._cond.notify()

    def pending(self) -> int:
        with self._cond:
            return len(self._ready) + len(self._delayed) + len(self._processing)

    def _take(self) -> str | None:
        with self._cond:
            while not self._stopping:
                now = self._clock()
                while self._delayed and self._delayed[0][0] <= now:
                    _, _, key = heapq.heappop(self._delayed)
                    if key in self._processing:
                        self._dirty.add(key)
                    elif key not in self._queued:
                        self._queued.add(key)
                        self._ready.append(key)
                if self._ready:
                    key = self._ready.pop(0)
                    self._queued.discard(key)
                    self._processing.add(key)
                    return key
                timeout = (self._delayed[0][0] - now) if self._delayed else None
                self._cond.wait(timeout)
            return None

    def _done(self, key: str) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                if key not in self._queued:
                    self._queued.add(key)
                    self._ready.append(key)
                    self._cond.notify()

    # -- workers --------------------------------------------------------------------------------

    def _backoff(self, key: str) -> float:
        n = self._failures.get(key, 0) + 1
        self._failures[key] = n
        return float(min(self._max, self._base * (2 ** (n - 1))))

    def process_one(self, key: str) -> None:
        started = time.perf_counter()
        outcome = "success"
        try:
            result = self._reconcile(key)
            self._failures.pop(key, None)
            if result is not None and result.requeue_after is not None:
                outcome = "requeue"
                self.enqueue_after(key, result.requeue_after)
        except (Unavailable, Conflict) as exc:
            outcome = "retry"
            delay = self._backoff(key)
            log.info("%s: %s: temporary error, retrying in %.2fs: %s", self.name, key, delay, exc)
            self.enqueue_after(key, delay)
        except Exception:
            outcome = "error"
            delay = self._backoff(key)
            log.exception("%s: reconcile of %s failed; retrying in %.2fs", self.name, key, delay)
            self.enqueue_after(key, delay)
        finally:
            if self._metrics is not None:
                self._metrics.reconciles.labels(self.name, outcome).inc()
                self._metrics.latency.labels(self.name).observe(time.perf_counter() - started)

    def _work(self) -> None:
        while True:
            key = self._take()
            if key is None:
                return
            try:
                self.process_one(key)
            finally:
                self._done(key)

    def start(self) -> Controller:
        for i in range(self._workers):
            t = threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout)

    def wait_idle(self, timeout: float) -> bool:
        """True once nothing is ready or running (delayed keys may remain); for tests and CLIs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._cond:
                if not self._ready and not self._processing:
                    return True
            time.sleep(0.01)
        return False
