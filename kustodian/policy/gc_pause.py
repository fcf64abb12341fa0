"""``gc_paused()``: the cyclic garbage collector off while a bulk job builds acyclic data.

Decoded JSON (a cache's list) and the capacity planner's index hold no reference cycles, so
the collector has nothing to find there; left on, it walks the growing heap again and again
(185 ms of pauses loading 250k objects, ~0.15 s of a 3,000-ACR batch plan).  Not I/O and not a
clock: policy code may use it.

The collector is one switch for the whole process, and the webhook lists its kinds in one
thread each at once.  So the pause is counted process-wide: the collector comes back when the
*last* pause ends, in whichever thread, and only if it was on when the first began.  (A count
kept per thread let the first small kind to finish switch it back on under the PV list: every
full collection then walked the half-built list while holding the GIL, the webhook's longest
``/healthz`` at 500k PVs.)
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["gc_paused"]


class _Pauses:
    """Pauses begun and not yet ended, in every thread, and whether the collector was on when
    the outermost began."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.resume = False

    def begin(self) -> None:
        with self.lock:
            if self.depth == 0:
                self.resume = gc.isenabled()
                gc.disable()
            self.depth += 1

    def end(self) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0 and self.resume:
                gc.enable()


_PAUSES = _Pauses()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    _PAUSES.begin()
    try:
        yield
    finally:
        _PAUSES.end()
