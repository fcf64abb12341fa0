"""The one reconcile contract every Kustodian loop follows (controller-runtime's, in small).

``reconcile(key) -> Result``: level-based and idempotent, it reads the caches and
acts; it never asks what event woke it.  The work queue

* deduplicates: a key queued many times before a worker takes it runs once, and a
  key being processed is never processed by two workers at once (it is re-queued
  after the running pass if it was added meanwhile);
* delays: ``enqueue_after`` and ``Result(requeue_after=...)`` park keys in a heap,
  one entry per key (the earliest wins, as in client-go's delaying queue), so a key
  requeued on every event does not pile up timers;
* retries by default (controller-runtime's semantics): ANY exception requeues the key
  with per-key exponential backoff, capped at ``max_backoff``, so a transient 422, a
  403 while RBAC is being rolled out, or a bug hit once never loses the work.  Only
  :class:`kustodian.errors.Terminal` stops at once, and a ``Forbidden``/``Invalid``
  that persists for ``give_up_after`` attempts in a row is treated as terminal: the
  key is dropped, counted in ``kustodian_controller_terminal_errors_total`` and logged
  once with the object; the next event or the periodic resync starts it afresh.
  A conflict (409) is retried at once-ish (the base backoff): it only means "re-read".
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kustodian.errors import Terminal
from kustodian.kube.errors import Forbidden, Invalid, KubeError

log = logging.getLogger(__name__)

# errors that are usually permanent: retried with backoff a few times (a 422 from a webhook being
# rolled out, a 403 while a RoleBinding is created), then given up as terminal
PERSISTENT_ERRORS: tuple[type[Exception], ...] = (Forbidden, Invalid)
KNOWN_ERRORS: tuple[type[Exception], ...] = (KubeError,)  # logged without a traceback


@dataclass(frozen=True)
class Result:
    """What a reconcile pass asks of the queue: nothing, or another pass after ``requeue_after`` s."""

    requeue_after: float | None = None


Reconcile = Callable[[str], "Result | None"]


class ControllerMetrics:
    """``kustodian_controller_reconcile_total{controller,result}`` and the pass latency histogram.

    ``result`` is ``success``, ``requeue`` (success with a requeue), ``retry`` (an error,
    retried with backoff) or ``error`` (terminal: dropped); terminal errors are also
    counted on their own in ``kustodian_controller_terminal_errors_total``.  The queue itself:
    ``kustodian_workqueue_depth{controller}`` (keys ready, waiting for a worker) and
    ``kustodian_workqueue_queue_duration_seconds{controller}`` (how long a key waited for one),
    client-go's workqueue metrics under Kustodian's prefix.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.reconciles = Counter("kustodian_controller_reconcile", "Reconcile passes by result",
                                  ["controller", "result"], registry=registry)
        self.terminal = Counter("kustodian_controller_terminal_errors", "Keys dropped on a terminal error",
                                ["controller"], registry=registry)
        self.latency = Histogram("kustodian_controller_reconcile_duration_seconds",
                                 "Time of one reconcile pass", ["controller"], registry=registry)
        self.depth = Gauge("kustodian_workqueue_depth", "Keys ready and waiting for a worker",
                           ["controller"], registry=registry)
        self.queue_latency = Histogram("kustodian_workqueue_queue_duration_seconds",
                                       "Time a key waits in the queue before a worker takes it",
                                       ["controller"], registry=registry)


class WorkQueue:
    """A deduplicating, delaying, backing-off work queue drained by ``workers`` threads."""

    def __init__(self, name: str, reconcile: Reconcile, workers: int = 2, *,
                 metrics: ControllerMetrics | None = None, base_backoff: float = 0.05,
                 max_backoff: float = 60.0, give_up_after: int = 5,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if workers < 0:
            raise ValueError("a controller cannot have a negative number of workers")
        if workers == 0:  # upstream's --worker-threads=0: the queue fills and nothing reconciles
            log.warning("%s: 0 workers: no key will be reconciled", name)
        self.name = name
        self._reconcile = reconcile
        self._workers = workers
        self._metrics = metrics
        self._base, self._max = base_backoff, max_backoff
        self._give_up_after = give_up_after
        self._forbidden_seen: set[str] = set()
        self._clock = clock
        self._cond = threading.Condition()
        self._ready: deque[str] = deque()  # FIFO of keys ready now
        self._queued: set[str] = set()  # keys in _ready
        self._ready_since: dict[str, float] = {}  # key in _ready -> when it became ready (metrics)
        self._processing: set[str] = set()
        self._dirty: set[str] = set()  # added while processing: run again afterwards
        self._delayed: list[tuple[float, int, str]] = []  # heap; entries not in _waiting are stale
        self._waiting: dict[str, float] = {}  # key -> when it is due (its live heap entry)
        self._seq = 0
        self._failures: dict[str, int] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = False
        if metrics is not None:
            metrics.depth.labels(name).set_function(lambda: float(len(self._ready)))

    # -- queue ----------------------------------------------------------------------------------

    def enqueue(self, key: str) -> None:
        with self._cond:
            self._add_locked(key)

    def enqueue_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.enqueue(key)
            return
        with self._cond:
            due = self._clock() + delay
            current = self._waiting.get(key)
            if current is not None and current <= due:
                return  # an earlier pass is already planned; that one re-decides
            self._waiting[key] = due
            self._seq += 1
            heapq.heappush(self._delayed, (due, self._seq, key))
            self._cond.notify()

    def pending(self) -> int:
        """Keys ready, delayed or running (for tests and diagnostics)."""
        with self._cond:
            return len(self._queued) + len(self._waiting) + len(self._processing)

    def _add_locked(self, key: str) -> None:
        if key in self._processing:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.append(key)
            self._ready_since[key] = time.perf_counter()
            self._cond.notify()

    def _take(self) -> str | None:
        with self._cond:
            while not self._stopping:
                now = self._clock()
                while self._delayed and self._delayed[0][0] <= now:
                    due, _, key = heapq.heappop(self._delayed)
                    if self._waiting.get(key) == due:
                        del self._waiting[key]
                        self._add_locked(key)
                if self._ready:
                    key = self._ready.popleft()
                    self._queued.discard(key)
                    since = self._ready_since.pop(key, None)
                    if self._metrics is not None and since is not None:
                        self._metrics.queue_latency.labels(self.name).observe(time.perf_counter() - since)
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
                self._add_locked(key)

    # -- workers --------------------------------------------------------------------------------

    def _backoff(self, key: str) -> tuple[int, float]:
        # only the worker holding ``key`` touches its entry: no lock needed
        n = self._failures.get(key, 0) + 1
        self._failures[key] = n
        return n, float(min(self._max, self._base * (2 ** (n - 1))))

    def _log_forbidden_once(self, key: str, exc: Forbidden, delay: float) -> None:
        """A 403 names the permission the ServiceAccount lacks: say it once, loudly, not per key."""
        with self._cond:
            first = exc.message not in self._forbidden_seen
            self._forbidden_seen.add(exc.message)
        if first:
            log.warning("%s: missing permission (RBAC): %s; retrying %s in %.2fs", self.name, exc.message,
                        key, delay, extra={"controller": self.name, "key": key})
        else:
            log.debug("%s: %s: still forbidden: %s", self.name, key, exc.message)

    def _terminal(self, key: str, exc: BaseException, why: str) -> None:
        self._failures.pop(key, None)
        if self._metrics is not None:
            self._metrics.terminal.labels(self.name).inc()
        log.error("%s: reconcile of %s failed permanently (%s); dropped until the next event or resync: %s",
                  self.name, key, why, exc, extra={"controller": self.name, "key": key})

    def process_one(self, key: str) -> None:
        """One reconcile pass of ``key`` with the retry policy applied (the workers' body)."""
        started = time.perf_counter()
        outcome = "success"
        try:
            result = self._reconcile(key)
            self._failures.pop(key, None)
            if result is not None and result.requeue_after is not None:
                outcome = "requeue"
                self.enqueue_after(key, result.requeue_after)
        except Terminal as exc:
            outcome = "error"
            self._terminal(key, exc, "terminal error")
        except Exception as exc:
            attempt, delay = self._backoff(key)
            if isinstance(exc, PERSISTENT_ERRORS) and attempt >= self._give_up_after:
                outcome = "error"
                self._terminal(key, exc, f"{type(exc).__name__} {attempt} times in a row")
            else:
                outcome = "retry"
                if isinstance(exc, Forbidden):
                    self._log_forbidden_once(key, exc, delay)
                elif attempt == 1 and not isinstance(exc, KNOWN_ERRORS):
                    # a bug: the traceback once, then one line per retry
                    log.exception("%s: reconcile of %s raised; retrying in %.2fs", self.name, key, delay,
                                  extra={"controller": self.name, "key": key})
                else:
                    log.info("%s: %s: retrying in %.2fs (attempt %d): %s", self.name, key, delay,
                             attempt, exc,
                             extra={"controller": self.name, "key": key})
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

    def start(self) -> WorkQueue:
        with self._cond:
            self._stopping = False
        for i in range(self._workers):
            t = threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Let running passes finish (up to ``timeout``), start no new one."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout)
        self._threads = [t for t in self._threads if t.is_alive()]

    def wait_idle(self, timeout: float) -> bool:
        """True once nothing is ready or running (delayed keys may remain); for tests and CLIs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._cond:
                if not self._ready and not self._processing:
                    return True
            time.sleep(0.01)
        return False
