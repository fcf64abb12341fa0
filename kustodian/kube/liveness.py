"""Proof that the API server answers *now*, and what to do when it has gone silent.

A watch on a connection that dies without a FIN or an RST (a blackholed route, an API
server instance that vanished behind a virtual IP, a NAT entry that expired under an idle
watch) looks alive: the read simply blocks, and the cache keeps saying "fresh" from a
frozen view.  Two defences, both here:

* **Detection without waiting for a request** (``check``, run every ``interval``, from one
  start to the next, by a runtime ``Periodic``): a cheap round trip (``GET /version``, which the default
  ``system:public-info-viewer`` role lets every client make) through the same client the
  caches use.  When none has succeeded for ``silence_limit`` seconds the server is *silent*:
  every cache it feeds is marked stale and its watch is cut (``WatchCache.restart``), since
  a blackholed watch never recovers by itself; the re-list that follows waits for the
  server.  ``problem()`` says so for ``/readyz``.  With the defaults (2 s, 6 s, a 2 s probe
  timeout) a silent server is declared within 8 s of its last answer.  When a round trip
  succeeds again the caches that are still stale retry at once instead of finishing their
  backoff.
* **Proof per decision** (``prove``): a caller that is about to *allow* on what the caches
  say asks for a round trip that started at or after ``since`` (when its request arrived)
  and succeeded.  Concurrent callers share one such probe (single flight); a probe that
  started before a caller arrived does not count for it.  A refusal needs no proof.

Residual window, said plainly: a round trip proves the *path* to the API server alive,
not each watch's own socket.  A watch socket can still be dead while a new connection
succeeds when only that socket lost its state (a NAT entry or a vanished backend behind a
virtual IP); TCP keepalive on every socket (``KubeClient``: probes after 5 s idle, every
2 s, 3 lost = dead, and ``TCP_USER_TIMEOUT``) bounds that case to about 11 s, but a
userspace proxy that keeps the client's side of the socket open while its own upstream
is gone would hide it (the keepalive is answered by the proxy).  Events the server had
already sent but that were still in flight or unread when the decision was made are not
covered by any proof: admission is never linearisable with a watch.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kustodian.kube.cache import WatchCache

__all__ = ["ApiLiveness", "RoundTrip"]

log = logging.getLogger(__name__)

RoundTrip = Callable[[float], object]
"""One round trip to the API server bounded by the given seconds; raises when it fails."""


@dataclass
class _Probe:
    started: float
    done: threading.Event = field(default_factory=threading.Event)
    ok: bool = False


class ApiLiveness:
    """Round trips to one API server: proof for allows, detection of a silent server."""

    def __init__(self, round_trip: RoundTrip, *, caches: Callable[[], Iterable[WatchCache]] = tuple,
                 interval: float = 2.0, silence_limit: float = 6.0, probe_timeout: float = 2.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._round_trip = round_trip
        self._caches = caches
        self.interval = interval
        self.silence_limit = silence_limit
        self.probe_timeout = probe_timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._latest: _Probe | None = None
        self._ok_started = -math.inf  # start of the latest round trip that succeeded
        self.last_ok_at = clock()  # end of it (the start counts as an answer: nothing is silent yet)
        self.last_error = ""
        self.silent = False  # no answer for ``silence_limit``: the caches were restarted
        self.probes = 0
        self.failures = 0

    # -- proof ------------------------------------------------------------------------------

    def prove(self, since: float, timeout: float, *, attempts: int = 2) -> bool:
        """True once a round trip that started at or after ``since`` has succeeded; False when
        ``attempts`` of them failed (one that fails at once, such as a pooled connection the server
        had just closed, leaves time for another) or ``timeout`` seconds passed first."""
        deadline = self._clock() + timeout
        for _ in range(attempts):
            with self._lock:
                if self._ok_started >= since:
                    return True
                probe = self._latest
                mine = probe is None or probe.done.is_set() or probe.started < since
                if mine:
                    probe = self._latest = _Probe(self._clock())
            assert probe is not None
            remaining = deadline - self._clock()
            if remaining <= 0:
                if mine:
                    self._finish(probe, False, "no time left for a round trip")
                return False
            if mine:
                self._run(probe, remaining)
            elif not probe.done.wait(remaining):
                return False
            if probe.ok:
                return True
        return False

    def silent_for(self) -> float:
        """Seconds since the last round trip that succeeded ended."""
        return max(0.0, self._clock() - self.last_ok_at)

    def _run(self, probe: _Probe, timeout: float) -> None:
        self.probes += 1
        try:
            self._round_trip(timeout)
        except Exception as exc:  # every failure means the same here: not proven
            self._finish(probe, False, f"{type(exc).__name__}: {exc}")
        else:
            self._finish(probe, True, "")

    def _finish(self, probe: _Probe, ok: bool, error: str) -> None:
        with self._lock:
            probe.ok = ok
            if ok:
                self._ok_started = max(self._ok_started, probe.started)
                self.last_ok_at = max(self.last_ok_at, self._clock())
            else:
                self.failures += 1
                self.last_error = error
        probe.done.set()

    # -- detection --------------------------------------------------------------------------

    def check(self) -> bool:
        """One round trip now, then judge the silence; whether the server answered."""
        ok = self.prove(self._clock(), self.probe_timeout)
        self.judge()
        return ok

    def judge(self) -> None:
        """Restart every cache once the server has been silent too long; wake them when it is back."""
        silence = self.silent_for()
        if silence > self.silence_limit and not self.silent:
            self.silent = True
            reason = (f"the API server has not answered a round trip for {silence:.1f}s "
                      f"({self.last_error or 'no answer'})")
            log.warning("%s: every cache it feeds is stale and its watch restarted", reason)
            for cache in list(self._caches()):
                cache.restart(reason)
        elif self.silent and silence <= self.silence_limit:
            self.silent = False
            log.warning("the API server answers again; stale caches re-list now")
            for cache in list(self._caches()):
                if not cache.fresh:
                    cache.retry_now()

    def problem(self) -> str | None:
        """For ``/readyz``: None while the server answers, else why not."""
        if not self.silent:
            return None
        return (f"no round trip to the API server has succeeded for {self.silent_for():.1f}s "
                f"({self.last_error or 'no answer'})")
