"""Kubernetes Events, recorded off the hot path and rate-limited per object.

``record`` never blocks and never raises: the event is queued for a background
thread, and an object that keeps triggering the same reason gets at most one event
per ``min_interval`` (client-go's EventCorrelator spam filter, simplified).  A
recorder that cannot write events must never change an admission decision.

What the spam filter holds back is folded, not forgotten: the next event for the same
object and reason carries ``count`` = 1 + the occurrences held back since the last one, and
``firstTimestamp`` = the first of them, so a reader summing ``count`` over a window
(``kustodian report --since``) sees every occurrence but those of the last
``min_interval`` before a quiet spell.

What a full queue refuses is lost, as client-go's broadcaster drops what its queue of 1,000 cannot
take (a zone of 30,000 lost PVs warns faster than the API server writes); the loss is logged, at
most once a minute with how many (``lost`` counts them all), never silent.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from kustodian.kube.client import KubeClient
from kustodian.kube.errors import KubeError
from kustodian.kube.resources import EVENTS

log = logging.getLogger(__name__)

_LOST_LOG_INTERVAL = 60.0  # seconds between two warnings about a full queue


def object_reference(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": str(obj.get("apiVersion") or ""),
        "kind": str(obj.get("kind") or ""),
        "name": str(meta.get("name") or ""),
        "namespace": str(meta.get("namespace") or ""),
        "uid": str(meta.get("uid") or ""),
        "resourceVersion": str(meta.get("resourceVersion") or ""),
    }
    return {k: v for k, v in ref.items() if v}


class EventRecorder:
    def __init__(self, client: KubeClient, component: str, *, min_interval: float = 10.0,
                 queue_size: int = 1000, clock: Callable[[], float] = time.monotonic,
                 default_namespace: str = "default") -> None:
        self.client = client
        self.component = component
        self.min_interval = min_interval
        self.default_namespace = default_namespace
        self._clock = clock
        self._last: dict[tuple[str, str, str], float] = {}
        self._held: dict[tuple[str, str, str], tuple[int, str]] = {}  # held back: (count, first stamp)
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=queue_size)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.dropped = 0  # held back by the spam filter (folded into the next) or lost
        self.lost = 0  # refused by a full queue: never written
        self.written = 0
        self._lost_unsaid = 0
        self._lost_said_at: float | None = None

    def record(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> bool:
        """Queue an event about ``obj``; False when rate-limited or the queue is full."""
        ref = object_reference(obj)
        who = ref.get("uid") or f"{ref.get('kind')}/{ref.get('namespace')}/{ref.get('name')}"
        key = (who, reason, event_type)
        now = self._clock()
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.min_interval:
                self.dropped += 1
                held, first = self._held.get(key, (0, stamp))
                self._held[key] = (held + 1, first)
                return False
            self._last[key] = now
            held, first = self._held.pop(key, (0, stamp))
            if len(self._last) > 10_000:  # forget the oldest half; memory stays bounded
                for k in sorted(self._last, key=self._last.__getitem__)[:5_000]:
                    del self._last[k]
                    self._held.pop(k, None)
        namespace = ref.get("namespace") or self.default_namespace
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{ref.get('name', 'object')}.{uuid.uuid4().hex[:16]}",
                         "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message[:1024],
            "type": event_type,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "firstTimestamp": first,
            "lastTimestamp": stamp,
            "count": 1 + held,
        }
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self._lose(now)
            return False
        self._ensure_thread()
        return True

    def _lose(self, now: float) -> None:
        """Count an event a full queue refused, and say so (at once, then at most once a minute)."""
        with self._lock:
            self.dropped += 1
            self.lost += 1
            self._lost_unsaid += 1
            if self._lost_said_at is not None and now - self._lost_said_at < _LOST_LOG_INTERVAL:
                return
            count, self._lost_unsaid, self._lost_said_at = self._lost_unsaid, 0, now
        log.warning("%d Event(s) not written: the queue of %d is full (the API server takes them slower than "
                    "they come); what they say is not recorded, the decisions themselves are not affected",
                    count, self._queue.maxsize)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until every queued event was written (tests, graceful shutdown)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(5)

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            try:
                if event is None:
                    return
                self.client.create(EVENTS, event)
                self.written += 1
            except KubeError as exc:
                self.dropped += 1
                log.warning("could not write event %s: %s", event and event.get("reason"), exc)
            finally:
                self._queue.task_done()
