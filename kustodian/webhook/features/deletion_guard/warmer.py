"""Deletion decisions computed ahead of requests, by a daemon thread.

After every change the warmer decides, for every cached provider whose kinds are fresh, what
a DELETE of it would get, unless the memo already holds a current answer; so even the first
DELETE after a change usually reads a ready answer on the event loop.  A DELETE that races
it computes in a worker thread as before (single flight: never twice).  It only adds memo
entries, each checked against the versions of every bucket it read, so it cannot change any
answer.  ``start``/``stop`` run it while the caches run, as a runtime
:class:`~kustodian.runtime.periodic.Periodic` (the webhook's Manager starts and stops it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kustodian.policy.objects import RawObject
from kustodian.runtime import Periodic
from kustodian.webhook.features.deletion_guard.memo import DecisionMemo, MemoKey

__all__ = ["Warmer"]

log = logging.getLogger(__name__)

#: every DELETE question worth answering ahead now: (key, provider) of each cached provider
Questions = Callable[[], Iterable[tuple[MemoKey, RawObject]]]


class Warmer:
    def __init__(self, memo: DecisionMemo, questions: Questions) -> None:
        self.memo = memo
        self.questions = questions
        self.warmed = 0  # decisions computed ahead of any request
        self._loop: Periodic | None = None

    def warm(self) -> int:
        """One pass: compute every decision the memo lacks; how many were computed."""
        done = 0
        loop = self._loop
        for key, provider in self.questions():
            if loop is not None and loop.stopping.is_set():
                break
            if not key.resource_version or self.memo.cached(key, count=False) is not None:
                continue
            self.memo.compute(key, provider, count=False)
            done += 1
        self.warmed += done
        return done

    def start(self, interval: float = 0.1) -> None:
        """A pass every ``interval`` seconds; costs a few dict reads per provider when nothing changed."""
        if self._loop is not None:
            return
        self._loop = Periodic("deletion-guard-warmer", self._pass, interval, needs_leader=False,
                              immediate=False)
        self._loop.start()

    def _pass(self) -> None:
        try:
            self.warm()
        except Exception:  # a cache swapped under us: the next pass retries (not worth an error)
            log.debug("warming deletion decisions failed", exc_info=True)

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.stop()
