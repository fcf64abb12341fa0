"""The deletion guard feature: the admission handlers, their metrics, and the warmer's lifecycle.

A review goes through three parts, each in its own module:

1. the memo (``memo``), asked on the event loop: a current decision answers there and then;
   with none the handler answers ``PendingAnswer`` and the app runs ``compute`` in a worker thread,
   once (the review is not parsed or checked again);
2. the decision, pure over a frozen input (``gather`` fills it from the caches, with the
   reads it made; ``policy.deletion.dependents.decide_provider_delete`` decides);
3. the answer, with the Events it implies, as data (``answer``), which this module writes.

Never allow on stale or missing knowledge.  Before deciding, every kind the decision reads
(``RuleSet.kinds_read``: dependents and every indexed hop) must be *fresh*
(``kube.kinds.KindState``): its watch established after its last list.  A stale kind, or a
CRD watch that cannot tell whether a kind is served, is answered 503 naming the kind and for
how long it has been stale, with one exception: a kind stale only because its watch ended on
the server's timer and the next one is being opened (``KindState.renewing``: one request,
resumed from the same resourceVersion) is waited for, in a worker thread, up to
``renewal_wait`` after it went stale, and the review is judged once it is fresh again (or
answered 503 if it is not, or if the new watch failed), as the API server's own watch cache
waits for freshness before it serves a read.  No API call is made on the request path: a per-request
``limit=1`` list would compare the cache's resourceVersion with etcd's *global* revision,
which a quiet kind never reaches without waiting up to a bookmark interval (~1 min), and it
would put the API server's latency and availability on every DELETE; the freshness state
machine in ``kube.cache`` (re-list after any unexpected watch end) gives the same guarantee
at the cost of a dict read.

Never allow on a connection not proven alive (issue 32).  A watch whose connection died
without a FIN/RST keeps its cache "fresh" until ``kube.liveness`` notices the silence (at
most ``api_silence_limit`` + one probe).  So every *allow* that read the caches (no
dependents, the object not cached, a Namespace without providers) is sent only once a round
trip to the API server that started after the review arrived has succeeded
(``ApiLiveness.prove``, shared by concurrent reviews); when none succeeds within
``allow_proof_timeout`` the answer is the stale 503 naming the kinds read; when one does, the
question is asked again of the caches as they are after it (a round trip held by a partition
and answered once it lifts proves the route alive now, not that the caches saw what happened
meanwhile).  The proof runs in a worker thread (a memoised allow answers ``PendingAnswer``),
never on the event loop.  A
refusal, and an allow by the override annotation or by the warn/audit mode, need no proof:
what the caches missed cannot make them wrong.

Unlike Rook (which accepts the DELETE and then holds the object Terminating behind a
finalizer) the request is refused at once, so nothing is ever half-deleted, and ``kubectl
delete`` prints the dependents.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from kustodian.kube.events import EventRecorder
from kustodian.kube.liveness import ApiLiveness
from kustodian.kube.view import CacheView
from kustodian.logs import about
from kustodian.policy.deletion import DeleteDecision, RuleSet, decide_namespace_teardown, gather_namespace
from kustodian.policy.modes import Mode
from kustodian.policy.objects import RawObject
from kustodian.webhook.features.deletion_guard.answer import (
    DeletionAnswer,
    answer_delete,
    stale_answer,
    unproven_answer,
)
from kustodian.webhook.features.deletion_guard.kinds import NAMESPACE
from kustodian.webhook.features.deletion_guard.memo import DecisionMemo, MemoKey, memo_key
from kustodian.webhook.features.deletion_guard.warmer import Warmer
from kustodian.webhook.outcomes import Outcomes
from kustodian.webhook.registry import PendingAnswer, Registry
from kustodian.webhook.review import AdmissionRequest, Answer, allowed

__all__ = ["DeletionGuard"]

log = logging.getLogger(__name__)

_RENEWAL_POLL = 0.01  # s: how often a review waiting for a renewing watch looks again


class DeletionGuard(Collector):
    """Deny the DELETE of a storage provider (or of a Namespace holding one) that still has
    dependents; a Prometheus collector of its memo's counts."""

    # enforcement mode (issue 20) and where refusals are counted; set by the webhook's wiring
    mode: Mode = Mode.ENFORCE
    outcomes: Outcomes | None = None
    # round trips that prove the caches' API server alive before an allow (None: no API server,
    # as in tests over listed objects and offline tools); how long an allow may wait for one
    liveness: ApiLiveness | None = None
    proof_timeout: float = 1.0
    # a kind stale only because its watch is being renewed (``KindState.renewing``: one request,
    # resumed without a gap) is waited for this long, in a worker thread, before the stale 503
    renewal_wait: float = 1.0
    # told when a DELETE of a provider with dependents is let through (warn, audit, an override):
    # the policy report writer's ``poke``, a flag set; never an API call on the request path
    on_let_through: Callable[[], None] | None = None

    def __init__(self, rules: RuleSet, view: CacheView, recorder: EventRecorder | None,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.rules = rules
        self.view = view
        self.recorder = recorder
        self.now = now  # overrides may carry a deadline (``kustodian.io/allow-delete-until``)
        self.overrides: Counter[tuple[str, str]] = Counter()  # (kind, annotation) -> DELETEs let through
        self._reads = {kind: tuple(sorted(rules.kinds_read(kind))) for kind in rules.provider_kinds()}
        every: set[str] = set(rules.provider_kinds())
        for kinds in self._reads.values():
            every.update(kinds)
        self._namespace_reads = tuple(sorted(every))
        # one clock for every look, the memo's included (``now`` may be replaced, in tests)
        self.memo = DecisionMemo(rules, view, self._now)
        self.warmer = Warmer(self.memo, self._questions)

    def _now(self) -> datetime:
        return self.now()

    # -- counts -----------------------------------------------------------------------------

    @property
    def memo_hits(self) -> int:
        return self.memo.hits

    @property
    def memo_misses(self) -> int:
        return self.memo.computed

    @property
    def applied(self) -> int:
        return self.memo.applied

    @property
    def warmed(self) -> int:
        return self.warmer.warmed

    def collect(self) -> Iterable[Metric]:
        """``kustodian_deletion_guard_memo_total{event}`` (a Prometheus collector): answers read
        ready (``hit``), decisions computed whole (``computed``), and watch events applied to a
        kept decision (``applied``).  ``computed`` growing with every change of a dependent
        would mean the decisions are not being kept live."""
        family = CounterMetricFamily("kustodian_deletion_guard_memo",
                                     "Deletion guard decisions: read ready, computed whole, or a watch "
                                     "event applied to a kept decision", labels=["event"])
        for event, n in (("hit", self.memo.hits), ("computed", self.memo.computed),
                         ("applied", self.memo.applied)):
            family.add_metric([event], float(n))
        yield family
        overrides = CounterMetricFamily("kustodian_deletion_guard_overrides",
                                        "DELETEs of providers with dependents let through by an override "
                                        "annotation (Kustodian's or Rook's)", labels=["kind", "annotation"])
        for (kind, annotation), n in sorted(self.overrides.items()):
            overrides.add_metric([kind, annotation], float(n))
        yield overrides

    # -- the warmer ---------------------------------------------------------------------------

    def start(self, interval: float = 0.1) -> None:
        """Keep decisions warm from a daemon thread (``warmer``)."""
        self.warmer.start(interval)

    def stop(self) -> None:
        self.warmer.stop()

    def warm(self) -> int:
        """One warming pass now; how many decisions were computed."""
        return self.warmer.warm()

    def _questions(self) -> Iterator[tuple[MemoKey, RawObject]]:
        for kind in sorted(self.rules.provider_kinds()):
            if not self.view.has_kind(kind) or self.stale_kinds((*self._reads.get(kind, ()), kind)):
                continue
            for provider in self.view.list(kind):
                yield self.key(kind, provider), provider

    def decision_now(self, kind_key: str, provider: RawObject) -> DeleteDecision:
        """What a DELETE of ``provider`` would get now, from the memo when current (not counted as
        a request's hit); for readers off the request path (provider_metrics)."""
        return self.memo.compute(self.key(kind_key, provider), provider, count=False)

    # -- reading the caches ---------------------------------------------------------------------

    def _renewing_only(self, kinds: Iterable[str]) -> float | None:
        """How much longer to wait when every stale kind of ``kinds`` is only renewing its watch
        and has been for less than ``renewal_wait``; None when one is stale for another reason
        (a re-list, an outage, a kind not served yet: those are answered 503 at once)."""
        oldest = 0.0
        for kind in kinds:
            state = self.view.state(kind)
            if state.stale_for is None:
                continue
            if not state.renewing or state.stale_for >= self.renewal_wait:
                return None
            oldest = max(oldest, state.stale_for)
        return self.renewal_wait - oldest

    def _await_renewal(self, req: AdmissionRequest) -> Answer:
        """In a worker thread: wait until the kinds the decision reads are fresh again, or one of
        them stops renewing, or ``renewal_wait`` has passed since it went stale; then judge as if
        the review arrived now (a proof an allow needs must start after the wait).  Never an
        answer from a stale cache: still stale, it is the 503."""
        reads = self._reads_of(req)
        left = self._renewing_only(reads)
        deadline = time.monotonic() + (left or 0.0)
        while left is not None and time.monotonic() < deadline and self.stale_kinds(reads):
            time.sleep(_RENEWAL_POLL)
            left = self._renewing_only(reads)
        judge = self._judge_namespace if req.kind_key == NAMESPACE else self._judge
        answer = judge(req, time.monotonic(), proven=False, waited=True)
        return answer.compute() if isinstance(answer, PendingAnswer) else answer

    def stale_kinds(self, kinds: Iterable[str]) -> list[tuple[str, float]]:
        """``(kind, seconds)`` for each of ``kinds`` whose cache is not current (503 if any)."""
        out: dict[str, float] = {}
        for kind in kinds:
            state = self.view.state(kind)
            if state.stale_for is not None:
                out[state.stale_kind] = max(out.get(state.stale_kind, 0.0), state.stale_for)
        return sorted(out.items())

    def _terminating(self, namespace: str) -> str | None:
        """``namespace`` when it is being deleted (its delete was admitted), else None."""
        if not namespace:
            return None
        ns = self.view.get(NAMESPACE, "", namespace)
        meta = (ns or {}).get("metadata") or {}
        return namespace if meta.get("deletionTimestamp") else None

    def key(self, kind_key: str, provider: RawObject) -> MemoKey:
        """The memo key of a DELETE of ``provider`` now (its namespace may be terminating)."""
        home = str((provider.get("metadata") or {}).get("namespace") or "")
        return memo_key(kind_key, provider, self._terminating(home))

    # -- admission ----------------------------------------------------------------------------

    def register(self, registry: Registry) -> None:
        for kind in sorted(self.rules.provider_kinds()):
            registry.validate(kind, ["DELETE"], self.on_delete)
        registry.validate(NAMESPACE, ["DELETE"], self.on_namespace_delete)

    def on_delete(self, req: AdmissionRequest) -> Answer | PendingAnswer:
        """The answer from the memo (on the event loop), or ``PendingAnswer`` on its computation
        or on the round trip an allow needs first."""
        return self._judge(req, time.monotonic(), proven=False)

    def on_namespace_delete(self, req: AdmissionRequest) -> Answer | PendingAnswer:
        """A 503 at once when a kind is stale, else ``PendingAnswer``: the walk over the Namespace's
        providers never runs on the event loop."""
        return self._judge_namespace(req, time.monotonic(), proven=False)

    def _reads_of(self, req: AdmissionRequest) -> tuple[str, ...]:
        """The kinds a decision about ``req`` reads: these must be current (a cache never synced is
        not fresh either), and a newly served, still listing kind blocks its own providers, not all."""
        if req.kind_key == NAMESPACE:
            return self._namespace_reads
        reads = self._reads.get(req.kind_key, ())
        return reads if req.subject is not None else (*reads, req.kind_key)  # provider from the cache

    # -- a provider's DELETE --------------------------------------------------------------------

    def _judge(self, req: AdmissionRequest, arrived: float, *, proven: bool,
               waited: bool = False) -> Answer | PendingAnswer:
        """Decide from the caches as they are now.  ``proven``: a round trip that started after the
        review ``arrived`` has succeeded, so an allow may be sent (this never answers pending then).
        ``waited``: a renewing watch was waited for already (:meth:`_await_renewal`)."""
        stale = self.stale_kinds(self._reads_of(req))
        if stale:
            if not (proven or waited) and self._renewing_only(self._reads_of(req)) is not None:
                return PendingAnswer(functools.partial(self._await_renewal, req))
            return self._act(req, stale_answer(self._subject(req), stale))
        provider = req.subject or self.view.get(req.kind_key, req.namespace, req.name)
        if provider is None:
            # oldObject is null (old API servers) and the synced cache does not know the
            # object: it does not exist, and the API server will answer 404 itself.
            if proven or self.liveness is None:
                return allowed()
            return PendingAnswer(functools.partial(self._second_look, req, arrived))
        key = memo_key(req.kind_key, provider, self._terminating(req.namespace))
        decision = self.memo.cached(key, count=not proven) if key.resource_version else None
        if decision is None:
            if not proven:
                return PendingAnswer(functools.partial(self._computed, req, provider, key, arrived))
            decision = self.memo.compute(key, provider, count=False)
        if not proven and self._needs_proof(decision, override_suffices=True):
            return PendingAnswer(functools.partial(self._second_look, req, arrived))
        return self._answered(req, provider, decision)

    def _computed(self, req: AdmissionRequest, provider: RawObject, key: MemoKey, arrived: float) -> Answer:
        decision = self.memo.compute(key, provider)
        if self._needs_proof(decision, override_suffices=True):
            return self._second_look(req, arrived)
        return self._answered(req, provider, decision)

    # -- a Namespace's DELETE -------------------------------------------------------------------

    def _judge_namespace(self, req: AdmissionRequest, arrived: float, *,
                         proven: bool, waited: bool = False) -> Answer | PendingAnswer:
        """As :meth:`_judge`, for the providers the Namespace holds: decided in a worker thread."""
        stale = self.stale_kinds(self._namespace_reads)
        if stale:
            if not (proven or waited) and self._renewing_only(self._namespace_reads) is not None:
                return PendingAnswer(functools.partial(self._await_renewal, req))
            return self._act(req, stale_answer(self._subject(req), stale))
        if not proven:
            return PendingAnswer(functools.partial(self._namespace_first, req, arrived))
        return self._answered(req, self._namespace_object(req), self._namespace_decision(req))

    def _namespace_first(self, req: AdmissionRequest, arrived: float) -> Answer:
        decision = self._namespace_decision(req)
        # a waiver needs the proof too: what the caches missed may be a provider it does not cover
        if self._needs_proof(decision, override_suffices=False):
            return self._second_look(req, arrived)
        return self._answered(req, self._namespace_object(req), decision)

    def _namespace_decision(self, req: AdmissionRequest) -> DeleteDecision:
        return decide_namespace_teardown(gather_namespace(req.name, self.view, self.rules, self.now()))

    @staticmethod
    def _namespace_object(req: AdmissionRequest) -> Mapping[str, Any]:
        return req.subject or {"apiVersion": "v1", "kind": NAMESPACE, "metadata": {"name": req.name}}

    # -- both -----------------------------------------------------------------------------------

    def _needs_proof(self, decision: DeleteDecision, *, override_suffices: bool) -> bool:
        """An allow read from the caches is sent only once proven (issue 32).  A provider's own override
        annotation (read from the request, not the caches) needs no proof: nothing the caches missed
        can make it wrong."""
        if self.liveness is None or not decision.allowed:
            return False
        return not (override_suffices and decision.overridden)

    def _second_look(self, req: AdmissionRequest, arrived: float) -> Answer:
        """The allow the caches gave, once proven (issue 32), for a provider and a Namespace alike: a
        round trip that started after the review ``arrived`` must succeed within the budget, else the
        503 naming the kinds read.  Then the question is asked again of the caches *as they are after
        that round trip*, against the same clock and answered the same way (the warning and Event of
        an override included): a round trip that was held in a partition and answered once it lifted
        proves the route alive now, not that the caches saw what happened meanwhile; the watches cut
        by the silence (``kube.liveness``) make the kinds stale, and the second look sees it."""
        liveness = self.liveness
        budget = self.proof_timeout - (time.monotonic() - arrived)
        if liveness is not None and not liveness.prove(arrived, budget):
            kinds = sorted({*self._reads_of(req), req.kind_key})
            return self._act(req, unproven_answer(self._subject(req), kinds, liveness.silent_for()))
        judge = self._judge_namespace if req.kind_key == NAMESPACE else self._judge
        answer = judge(req, arrived, proven=True)
        assert not isinstance(answer, PendingAnswer)
        return answer

    def _answered(self, req: AdmissionRequest, about: Mapping[str, Any], decision: DeleteDecision) -> Answer:
        kinds = {p.kind for p in decision.providers} if req.kind_key == NAMESPACE else {req.kind_key}
        return self._act(req, answer_delete(req, about, decision, kinds, rules=self.rules, mode=self.mode,
                                            outcomes=self.outcomes))

    @staticmethod
    def _subject(req: AdmissionRequest) -> str:
        if req.kind_key == NAMESPACE:
            return f'Namespace "{req.name}"'
        where = f"{req.namespace}/{req.name}" if req.namespace else req.name
        return f'{req.kind_key.partition(".")[0]} "{where}"'

    def _act(self, req: AdmissionRequest, answered: DeletionAnswer) -> Answer:
        """Write what the answer implies (its Events, a log line for an override); the answer."""
        who = answered.overridden_by
        if who is not None:
            if not req.dry_run:
                self.overrides[(req.kind_key, answered.override or "unknown")] += 1
            log.warning("%s %s/%s: %s", req.kind_key, req.namespace, req.name, answered.answer.warnings[0],
                        extra={**about(req.kind_key, req.namespace, req.name), "user": who})
        if self.recorder is not None:
            for event in answered.events:
                self.recorder.record(event.about, event.type, event.reason, event.message)
        if answered.let_through and not req.dry_run and self.on_let_through is not None:
            self.on_let_through()
        return answered.answer
