"""Keeps the deletion backstop's record current: one writer among the webhook replicas, a pass
shortly after every change, a confirmation at least every ``confirm_interval``.

**One writer, elected.**  Every replica could compute the record, but with several writers the
record would be only as right as the least current of them: a replica whose caches look fresh
but lag (a watch on a connection dying silently, before ``kube.liveness`` notices) would *remove*
the entry of a pool that just got its first volume, and compare-and-swap writes would only make
it remove it cleanly.  So the replicas campaign for a Lease (``kube.leader.LeaderElector``, the
Manager's own election) and only its holder writes, each write fenced on the Lease (never sent
once its renew deadline passed) and a compare-and-swap on the shard's resourceVersion (a
Conflict re-reads the record before anything else is written).  The election is the writer's
own, not the webhook Manager's: losing the Lease stops this writer and it campaigns again; the
replica keeps serving reviews (a Manager that loses its Lease exits).  While no replica leads
(a failover: at most the Lease duration, 15 s) the record is not updated, and keeps protecting
what it holds.

**How it runs.**  As three runnables of the webhook's Manager: the campaign for the Lease, the
pass loop (a ``runtime.Periodic``, idle while another replica writes) and the reader (another).

**When.**  A handler on every watch cache the guard reads wakes the pass loop; it waits
``debounce`` for the rest of a burst, then passes: the guard's decision for every cached
provider (its memo: a few dict reads per unchanged provider), the entries they call for, the
shards that differ written.  A change of the set of caches or of their freshness (a CRD
installed, a re-list done: no event, so the leader looks twice a second) calls for one too.
With no change, a pass every ``confirm_interval / 2`` re-confirms shards confirmed longer ago
than that, so the record's age stays below ``confirm_interval`` while it is kept.

**Never from stale knowledge.**  A kind that is not fresh keeps its entries
(``RecordKnowledge.fresh``); an entry is removed only by a pass that began after a round trip to
the API server succeeded (``ApiLiveness.prove``, as the guard's own allows), else the pass only
adds; a shard that does not exist is created only from a complete pass (every kind fresh), since
a shard once written is the policy's knowledge (and can never be deleted), never a guess; and
the record is confirmed only by a complete, proven pass.  A shard that would outgrow 1 MiB
(``SHARD_LIMIT``) is not written (the stored one is kept, ``kustodian_deletion_backstop_writes_total{result=
"oversize"}``).

Every replica, leader or not, reads the record back every ``confirm_interval / 2`` for
``kustodian_deletion_backstop_record_age_seconds``, so the age is known while any replica runs.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kustodian.kube.cache import WatchCache
from kustodian.kube.errors import Conflict, KubeError
from kustodian.kube.leader import LeaderElector
from kustodian.policy.deletion import RecordState, merged, plan_record
from kustodian.runtime import SYSTEM_TIMER, Loop, Periodic, Runnable, Timer
from kustodian.webhook.features.backstop.gather import BackstopGuard, RecordGatherer
from kustodian.webhook.features.backstop.store import RecordStore

__all__ = ["LeaseSpec", "PassResult", "RecordWriter"]

log = logging.getLogger(__name__)


class LeaseSpec(NamedTuple):
    """The writer's Lease (in the record's namespace) and the election's timing."""

    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True)
class PassResult:
    """What one pass did: the entries it called for, the shards written, whether it confirmed."""

    entries: int = 0
    written: int = 0
    complete: bool = False
    proven: bool = False
    confirmed: bool = False
    failed: bool = False
    seconds: float = 0.0


class RecordWriter(Collector):
    """The record's writer and reader as runnables of the webhook's Manager (``runnables``), and a
    Prometheus collector of the record.

    Three runnables, none needing the Manager's leader (the webhook's Manager elects none):
    ``election`` campaigns for the writer's own Lease (a Loop around ``LeaderElector.run``),
    ``writer`` is the pass loop (a ``Periodic``, woken by every change, idle unless this replica
    holds the Lease), and ``reader`` reads the record back on every replica (a ``Periodic``).
    """

    def __init__(self, guard: BackstopGuard, store: RecordStore, *, lease: LeaseSpec | None,
                 debounce: float = 0.05, confirm_interval: float = 60.0, proof_timeout: float = 1.0,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 timer: Timer = SYSTEM_TIMER) -> None:
        self.guard = guard
        self.store = store
        self.lease = lease
        self.debounce = debounce
        self.confirm_interval = confirm_interval
        self.proof_timeout = proof_timeout
        self.now = now
        self.timer = timer
        self.gatherer = RecordGatherer(guard)
        self.state: RecordState | None = None  # the record as last read or written
        self.leading = threading.Event()
        self.writes: Counter[str] = Counter()  # written, conflict, failed, fenced, oversize
        self.passes = 0
        self.last_pass = PassResult()
        self.election = Loop("deletion-backstop-election", self._campaign, needs_leader=False,
                             on_stop=self._resign)
        self.writer = Periodic("deletion-backstop-writer", self._tick, self._next_tick, needs_leader=False,
                               timer=timer)
        self.reader = Periodic("deletion-backstop-reader", self._read_once, confirm_interval / 2,
                               needs_leader=False, timer=timer)
        self._dirty = threading.Event()
        self._hooked: weakref.WeakSet[WatchCache] = weakref.WeakSet()
        self._elector: LeaderElector | None = None
        self._state_lock = threading.Lock()  # the reader never replaces what a leader read or wrote
        self._signature: Hashable = None
        self._due = 0.0  # (timer) the next pass without a change: a confirmation
        self._retry_at = 0.0  # (timer) no pass before this, after one that failed
        self._announced = False
        self._term = 0  # leaderships begun: a pass that straddles two reads the record again
        self._warned = ""

    @property
    def runnables(self) -> list[Runnable]:
        """In start order: the reader, the pass loop, then the campaign that lets it write."""
        return [self.reader, self.writer, self.election]

    def start(self) -> None:
        """Every runnable (a test or a bench without a Manager)."""
        for runnable in self.runnables:
            runnable.start()

    def stop(self) -> None:
        for runnable in reversed(self.runnables):
            runnable.stop()

    # -- changes ------------------------------------------------------------------------------

    def _changed(self, *_: object) -> None:
        self._dirty.set()
        self.writer.wake()

    def _hook(self) -> bool:
        """Hear every cache the guard reads (caches come and go with CRDs); True when the set of
        caches or their freshness changed since the last look (a pass is due)."""
        caches = list(self.guard.view.caches.values())
        for cache in caches:
            if cache not in self._hooked:
                self._hooked.add(cache)
                cache.add_handler(self._changed)
        signature = tuple((id(c), c.fresh, c.synced.is_set()) for c in caches)
        changed, self._signature = signature != self._signature, signature
        return changed

    # -- leading ------------------------------------------------------------------------------

    def _campaign(self, stop: threading.Event) -> None:
        """Campaign for the Lease until stopped; a lost leadership campaigns again.  Without a
        Lease (tests, one replica by configuration) this replica writes until stopped."""
        lease = self.lease
        if lease is None:
            self._begin()
            stop.wait()
            self._end()
            return
        while not stop.is_set():
            elector = LeaderElector(self.store.client, namespace=self.store.namespace, name=lease.name,
                                    identity=lease.identity, lease_duration=lease.lease_duration,
                                    renew_deadline=lease.renew_deadline, retry_period=lease.retry_period)
            self._elector = elector
            if stop.is_set():
                return
            elector.run(lambda lost: self._begin(), self._end)
            if stop.wait(lease.retry_period):
                return

    def _resign(self) -> None:
        elector = self._elector
        if elector is not None:
            elector.stop()  # its run returns and releases the Lease

    def _begin(self) -> None:
        """Leading: the record is read again before anything is written (another writer may have
        changed it), then the pass loop writes."""
        with self._state_lock:
            self._term += 1
            self.state = None
            self._announced = False
            self.leading.set()
        self._dirty.set()
        self.writer.wake()

    def _end(self) -> None:
        self.leading.clear()

    def _fence(self) -> bool:
        elector = self._elector
        return self.lease is None or (elector is not None and elector.fence())

    def _next_tick(self) -> float:
        """The pass loop's wait: idle (until woken) while another replica writes; else until the
        next confirmation or retry, looking at the caches' set and freshness twice a second."""
        if not self.leading.is_set():
            return self.confirm_interval / 2
        now = self.timer.monotonic()
        return max(0.0, min(0.5, max(self._due, self._retry_at) - now))

    def _tick(self) -> None:
        """One turn of the pass loop: a pass when something changed or a confirmation is due."""
        if not self.leading.is_set():
            return
        if self._hook():
            self._dirty.set()
        now = self.timer.monotonic()
        if now < self._retry_at or (not self._dirty.is_set() and now < self._due):
            return
        if self._dirty.is_set():
            self.timer.wait(self.writer.stopping, self.debounce)  # the rest of a burst joins this pass
            self._dirty.clear()
        if not self.leading.is_set() or self.writer.stopping.is_set():
            return
        try:
            result = self.pass_once()
        except KubeError as exc:  # reading the record: nothing is written until it can be read
            self._warn(f"cannot read the deletion backstop's record {self.store.record}: {exc}; "
                       "nothing is written until it can be read")
            result = PassResult(failed=True)
        except Exception:  # a cache swapped under the pass: again soon
            log.exception("a pass of the deletion backstop's writer failed; retrying")
            result = PassResult(failed=True)
        now = self.timer.monotonic()
        if result.failed:
            self._dirty.set()
            self._retry_at = now + 1.0
        self._due = now + (self.confirm_interval / 2 if result.complete and result.proven
                           else min(1.0, self.confirm_interval / 2))

    # -- one pass -----------------------------------------------------------------------------

    def pass_once(self) -> PassResult:
        """Gather, merge with the record as known, write the shards that differ (or whose
        confirmation is due).  Only while leading (or without a Lease)."""
        term = self._term
        state = self.state
        if state is None:
            state = self.state = self.store.read()
        if not self._announced:
            self._announced = True
            log.info("writing the deletion backstop's record %s/%s-0..%d", self.store.namespace,
                     self.store.record, self.store.shards - 1)
        started = time.monotonic()
        liveness = self.guard.liveness
        proven = liveness is None or liveness.prove(started, self.proof_timeout)
        gathered = self.gatherer.gather(self.now())
        previous = state.entries
        entries = merged(gathered.entries, previous, gathered.fresh) if proven else {**previous,
                                                                                    **gathered.entries}
        confirm = gathered.complete and proven
        plan = plan_record(entries, len(state.shards))
        now = self.now()
        due = timedelta(seconds=self.confirm_interval / 2)
        written, failed = 0, False
        for shard, data in zip(state.shards, plan.shards, strict=True):
            if data is None:
                self.writes["oversize"] += 1
                self._warn(f"shard {shard.index} of the deletion backstop's record would exceed a "
                           "shard's 1 MiB: it is not written (what it held stays protected; new entries "
                           "in it are not recorded)")
                continue
            if not shard.exists and not confirm:
                continue  # a shard is first published from complete knowledge only
            reconfirm = confirm and (shard.confirmed_at is None or now - shard.confirmed_at >= due)
            if shard.exists and data == shard.data and not reconfirm:
                continue
            if not self._fence():
                self.writes["fenced"] += 1
                failed = True
                break
            try:
                new = self.store.write(shard, data, now if confirm else shard.confirmed_at)
            except Conflict as exc:  # another writer (a failover): read again, decide again
                self.writes["conflict"] += 1
                log.warning("the deletion backstop's record changed under its writer (%s); reading it again",
                            exc)
                self.state = None
                self._dirty.set()
                failed = True
                break
            except KubeError as exc:
                self.writes["failed"] += 1
                self._warn(f"writing shard {shard.index} of the deletion backstop's record failed: {exc}")
                self._dirty.set()
                failed = True
                break
            state = RecordState(tuple(new if s.index == new.index else s for s in state.shards))
            self.state = state
            self.writes["written"] += 1
            written += 1
        if term != self._term:  # a leadership began meanwhile: it reads the record afresh
            self.state = None
        elif self.state is None:  # a conflict: the record is read again before the next pass
            try:
                self.state = self.store.read()
            except KubeError:
                self.state = state
        self.passes += 1
        result = PassResult(plan.entries, written, gathered.complete, proven, confirm and not failed, failed,
                            time.monotonic() - started)
        self.last_pass = result
        return result

    # -- every replica: the record read back ---------------------------------------------------

    def _read_once(self) -> None:
        if self.leading.is_set():
            return  # the writer's own reads and writes keep it
        try:
            state = self.store.read()
        except KubeError as exc:
            self._warn(f"cannot read the deletion backstop's record {self.store.record}: {exc}")
            return
        with self._state_lock:
            if not self.leading.is_set():
                self.state = state

    def _warn(self, message: str) -> None:
        if message != self._warned:
            self._warned = message
            log.warning("%s", message)

    # -- metrics ------------------------------------------------------------------------------

    def collect(self) -> Iterable[Metric]:
        state = self.state
        if state is not None:
            age = state.age(self.now())
            family = GaugeMetricFamily(
                "kustodian_deletion_backstop_record_age_seconds",
                "Seconds since the deletion backstop's record was last confirmed from fresh caches "
                "(+Inf: a shard is missing or never confirmed)")
            family.add_metric([], float("inf") if age is None else age.total_seconds())
            yield family
            entries = GaugeMetricFamily("kustodian_deletion_backstop_record_entries",
                                        "Providers and namespaces the deletion backstop's record protects")
            entries.add_metric([], float(len(state.entries)))
            yield entries
            size = GaugeMetricFamily("kustodian_deletion_backstop_record_bytes",
                                     "Bytes of the deletion backstop's record (keys and values, all shards)")
            size.add_metric([], float(state.size()))
            yield size
        writes = CounterMetricFamily("kustodian_deletion_backstop_writes",
                                     "Shard writes of the deletion backstop's record by result",
                                     labels=["result"])
        for result in ("written", "conflict", "failed", "fenced", "oversize"):
            writes.add_metric([result], float(self.writes[result]))
        yield writes
        leader = GaugeMetricFamily("kustodian_deletion_backstop_writer",
                                   "1 on the webhook replica that writes the deletion backstop's record")
        leader.add_metric([], 1.0 if self.leading.is_set() else 0.0)
        yield leader
        seconds = GaugeMetricFamily("kustodian_deletion_backstop_pass_seconds",
                                    "Duration of the writer's last pass over every provider")
        seconds.add_metric([], self.last_pass.seconds)
        yield seconds
