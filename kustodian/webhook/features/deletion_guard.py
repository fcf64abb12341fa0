"""Deletion guard: deny the DELETE of a storage provider that still has dependents.

Unlike Rook (which accepts the DELETE and then holds the object Terminating behind
a finalizer) the request is refused at once, so nothing is ever half-deleted, and
``kubectl delete`` prints the dependents.  Decisions read only the watch caches.
Events (``DeletionBlocked``, ``DeletionOverridden``) are queued off the request
path and never written for ``dryRun`` requests.

Never allow on stale or missing knowledge.  Before deciding, every kind the
decision reads (``RuleSet.kinds_read``: dependents and every indexed hop) must be
*fresh* (``kube.kinds.KindState``): its watch established after its last list.  A
stale kind, or a CRD watch that cannot tell whether a kind is served, is answered
503 naming the kind and for how long it has been stale.  No API call is made on
the request path: a per-request ``limit=1`` list would compare the cache's
resourceVersion with etcd's *global* revision, which a quiet kind never reaches
without waiting up to a bookmark interval (~1 min), and it would put the API
server's latency and availability on every DELETE; the freshness state machine in
``kube.cache`` (re-list after any unexpected watch end) gives the same guarantee
at the cost of a dict read.

Decisions are memoised per provider (uid, resourceVersion, terminating namespace)
together with the version of every index bucket they read; a DELETE whose buckets
did not change reuses the decision and its rendered, capped message, so repeated
reviews (kubectl retries, several webhook configurations, the API server's own
retries) cost a handful of dict reads whatever the number of dependents.  A change
to any bucket read (a PV of *this* pool added or removed) recomputes on the next
request; the warmer thread (``start``) makes that recomputation happen ahead of the
request, so the first DELETE after a change normally finds its answer ready too.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kustodian.kube.events import EventRecorder
from kustodian.kube.view import CacheView
from kustodian.logs import about
from kustodian.policy.deletion import DeleteDecision, RuleSet, decide_delete, decide_namespace_delete
from kustodian.policy.deletion.projection import FieldPath, fields_read
from kustodian.policy.modes import Mode
from kustodian.policy.modes.deletion import refusal_mode
from kustodian.policy.objects import RawObject
from kustodian.policy.store import Indexer
from kustodian.webhook.outcomes import Outcomes, judged
from kustodian.webhook.registry import Registry, SlowPath, off_loop
from kustodian.webhook.review import AdmissionRequest, Answer, allowed, denied

log = logging.getLogger(__name__)

NAMESPACE = "Namespace"
CEPH_CLUSTER = "CephCluster.ceph.rook.io"
MEMO_SIZE = 4096


def needed_kinds(rules: RuleSet) -> dict[str, dict[str, Indexer]]:
    """Every kind the guard reads, with the indexers the rules declare."""
    kinds: dict[str, dict[str, Indexer]] = {k: {} for k in rules.provider_kinds() | rules.dependent_kinds()}
    kinds.setdefault(CEPH_CLUSTER, {})  # cleanupPolicy.allowUninstallWithVolumes
    kinds.setdefault(NAMESPACE, {})  # a terminating Namespace lets its own dependents go (teardown)
    for kind, named in rules.indexers().items():
        kinds.setdefault(kind, {}).update(named)
    return kinds


def cache_projections(rules: RuleSet, read_elsewhere: Iterable[str] = ()) -> dict[str, tuple[FieldPath, ...]]:
    """Per kind, the fields the guard's caches keep (``policy.deletion.projection``); kinds the
    guard reads beyond its rules (Namespace, CephCluster) and ``read_elsewhere`` (kinds another
    feature reads from the same caches) are kept whole."""
    return fields_read(rules, (NAMESPACE, CEPH_CLUSTER, *read_elsewhere))


def stale_message(subject: str, stale: Sequence[tuple[str, float]]) -> str:
    parts = ", ".join(f"{kind} for {secs:.1f}s" for kind, secs in stale)
    return (f"kustodian cannot tell whether {subject} has dependents: its view of {parts} is not current "
            f"(watch re-establishing or kind not served yet); refusing the delete for now "
            f"(retry in a few seconds)")


class _RecordingView:
    """A ``ClusterView`` that notes the version of every bucket it reads (for the memo)."""

    def __init__(self, view: CacheView) -> None:
        self._view = view
        self.reads: list[tuple[str, str | None, str | None, Hashable]] = []

    def has_kind(self, kind: str) -> bool:
        self.reads.append((kind, "", None, self._view.read_version(kind, "")))
        return self._view.has_kind(kind)

    def get(self, kind: str, namespace: str, name: str) -> RawObject | None:
        self.reads.append((kind, None, None, self._view.read_version(kind)))
        return self._view.get(kind, namespace, name)

    def list(self, kind: str, namespace: str | None = None) -> Sequence[RawObject]:
        self.reads.append((kind, None, None, self._view.read_version(kind)))
        return self._view.list(kind, namespace)

    def by_index(self, kind: str, index: str, key: str) -> Sequence[RawObject]:
        # the version is read before the data: a change in between invalidates, never hides
        self.reads.append((kind, index, key, self._view.read_version(kind, index, key)))
        return self._view.by_index(kind, index, key)


@dataclass(frozen=True)
class _Memo:
    reads: tuple[tuple[str, str | None, str | None, Hashable], ...]
    decision: DeleteDecision


class DeletionGuard:
    # enforcement mode (issue 20) and where refusals are counted; set by the webhook's wiring
    mode: Mode = Mode.ENFORCE
    outcomes: Outcomes | None = None

    def __init__(self, rules: RuleSet, view: CacheView, recorder: EventRecorder | None) -> None:
        self.rules = rules
        self.view = view
        self.recorder = recorder
        self._reads = {kind: tuple(sorted(rules.kinds_read(kind))) for kind in rules.provider_kinds()}
        every: set[str] = set(rules.provider_kinds())
        for kinds in self._reads.values():
            every.update(kinds)
        self._namespace_reads = tuple(sorted(every))
        self._memo: dict[tuple[str, ...], _Memo] = {}
        self.memo_hits = 0
        self.memo_misses = 0
        self._flights: dict[tuple[str, ...], threading.Lock] = {}
        self._flights_lock = threading.Lock()
        self.warmed = 0  # decisions computed ahead of any request (``warm``)
        self._warmer: threading.Thread | None = None
        self._stop_warming = threading.Event()

    def register(self, registry: Registry) -> None:
        for kind in sorted(self.rules.provider_kinds()):
            registry.validate(kind, ["DELETE"], self.on_delete)
        registry.validate(NAMESPACE, ["DELETE"], self.on_namespace_delete)

    def _refuse(self, req: AdmissionRequest, obj: Mapping[str, Any], decision: DeleteDecision,
                provider_kinds: Iterable[str]) -> Answer:
        """A refusal answered by the mode (the rules' or the guard's): denied (enforce), allowed
        with a warning (warn) or silently (audit); counted either way."""
        rule = req.kind_key
        mode = refusal_mode(decision, self.rules, provider_kinds, self.mode)
        where = f"{req.namespace}/{req.name}" if req.namespace else req.name
        answer = judged("deletion-guard", rule, mode, decision.message, self.outcomes,
                        subject=f"{rule.partition('.')[0]} {where}")
        reason = {Mode.ENFORCE: "DeletionBlocked", Mode.WARN: "DeletionWarned", Mode.AUDIT: "DeletionAudited"}
        self._event(req, obj, reason[mode], decision.message)
        return answer

    def _event(self, req: AdmissionRequest, obj: Mapping[str, Any], reason: str, message: str) -> None:
        if req.dry_run or self.recorder is None:
            return
        self.recorder.record(obj, "Warning", reason, message)

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

    def _memoised(self, key: tuple[str, ...], *, count: bool = True) -> DeleteDecision | None:
        memo = self._memo.get(key)
        if memo is not None and all(self.view.read_version(k, i, v) == seen for k, i, v, seen in memo.reads):
            if count:
                self.memo_hits += 1
            return memo.decision
        return None

    @staticmethod
    def _key(kind_key: str, provider: RawObject, deleting_namespace: str | None) -> tuple[str, ...]:
        meta = provider.get("metadata") or {}
        return (kind_key, str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""), deleting_namespace or "")

    def decide(self, kind_key: str, provider: RawObject, deleting_namespace: str | None) -> DeleteDecision:
        """``decide_delete``, memoised until a bucket it read changes."""
        key = self._key(kind_key, provider, deleting_namespace)
        rv = key[4]
        found = self._memoised(key) if rv else None
        if found is not None:
            return found
        if not off_loop():
            raise SlowPath  # the app re-runs this review in a worker thread
        if not rv:
            return self._compute(key, kind_key, provider, deleting_namespace)
        return self._single_flight(key, kind_key, provider, deleting_namespace)

    def _single_flight(self, key: tuple[str, ...], kind_key: str, provider: RawObject,
                       deleting_namespace: str | None, *, count: bool = True) -> DeleteDecision:
        # single flight: a burst of reviews for one object (kubectl, API server retries) computes once
        with self._flights_lock:
            flight = self._flights.setdefault(key, threading.Lock())
        with flight:
            found = self._memoised(key, count=count)
            if found is not None:
                return found
            try:
                return self._compute(key, kind_key, provider, deleting_namespace)
            finally:
                with self._flights_lock:
                    self._flights.pop(key, None)

    def _compute(self, key: tuple[str, ...], kind_key: str, provider: RawObject,
                 deleting_namespace: str | None) -> DeleteDecision:
        rv = key[4]
        self.memo_misses += 1
        recording = _RecordingView(self.view)
        decision = decide_delete(kind_key, provider, recording, self.rules,
                                 deleting_namespace=deleting_namespace)
        if rv:
            if len(self._memo) >= MEMO_SIZE:
                with contextlib.suppress(StopIteration, KeyError, RuntimeError):  # racing workers
                    self._memo.pop(next(iter(self._memo)))
            self._memo[key] = _Memo(tuple(recording.reads), decision)
        return decision

    # -- ahead of requests ------------------------------------------------------------------

    def warm(self) -> int:
        """Decide now, for every cached provider whose kinds are fresh, what a DELETE of it would
        get, unless the memo already holds a current answer; returns how many were computed.

        Run by a background thread (``start``) after every change, so even the first DELETE after
        a change usually reads a ready answer; a DELETE that races it computes in a worker thread
        as before (single flight: never twice).  Only adds memo entries, each checked against the
        versions of every bucket it read, so it cannot change any answer.
        """
        done = 0
        for kind in sorted(self.rules.provider_kinds()):
            if self._stop_warming.is_set() or not self.view.has_kind(kind):
                continue
            if self.stale_kinds((*self._reads.get(kind, ()), kind)):
                continue
            for provider in self.view.list(kind):
                home = str((provider.get("metadata") or {}).get("namespace") or "")
                key = self._key(kind, provider, self._terminating(home))
                if not key[4] or self._memoised(key, count=False) is not None:
                    continue
                self._single_flight(key, kind, provider, key[5] or None, count=False)
                done += 1
        self.warmed += done
        return done

    def decision_now(self, kind_key: str, provider: RawObject) -> DeleteDecision:
        """What a DELETE of ``provider`` would get now, from the memo when current (the warmer's
        path: not counted as a request's hit); for readers off the request path (provider_metrics)."""
        home = str((provider.get("metadata") or {}).get("namespace") or "")
        key = self._key(kind_key, provider, self._terminating(home))
        if not key[4]:
            return self._compute(key, kind_key, provider, key[5] or None)
        return self._single_flight(key, kind_key, provider, key[5] or None, count=False)

    def start(self, interval: float = 0.1) -> None:
        """Keep decisions warm from a daemon thread: a pass every ``interval`` seconds costs a few
        dict reads per provider when nothing changed."""
        if self._warmer is not None:
            return

        def loop() -> None:
            while not self._stop_warming.wait(interval):
                try:
                    self.warm()
                except Exception:  # a cache swapped under us: the next pass retries
                    log.debug("warming deletion decisions failed", exc_info=True)

        self._warmer = threading.Thread(target=loop, name="deletion-guard-warmer", daemon=True)
        self._warmer.start()

    def stop(self) -> None:
        self._stop_warming.set()
        if self._warmer is not None:
            self._warmer.join(5)

    def on_delete(self, req: AdmissionRequest) -> Answer:
        # Only the kinds this decision reads must be current (a cache never synced is not
        # fresh either): a newly served, still listing kind blocks its own providers, not all.
        reads = self._reads.get(req.kind_key, ())
        if req.subject is None:
            reads = (*reads, req.kind_key)  # the provider itself comes from the cache
        stale = self.stale_kinds(reads)
        if stale:
            where = f"{req.namespace}/{req.name}" if req.namespace else req.name
            subject = f'{req.kind_key.partition(".")[0]} "{where}"'
            return denied(stale_message(subject, stale), code=503, reason="ServiceUnavailable")
        provider = req.subject or self.view.get(req.kind_key, req.namespace, req.name)
        if provider is None:
            # oldObject is null (old API servers) and the synced cache does not know the
            # object: it does not exist, and the API server will answer 404 itself.
            return allowed()
        decision = self.decide(req.kind_key, provider, self._terminating(req.namespace))
        if not decision.allowed:
            return self._refuse(req, provider, decision, (req.kind_key,))
        if decision.overridden:
            who = req.user_info.username or "an unknown user"
            # the decision already says "is being deleted despite its dependents": add only who
            note = f"{decision.message} (by {who})"
            log.warning("%s %s/%s: %s", req.kind_key, req.namespace, req.name, note,
                        extra={**about(req.kind_key, req.namespace, req.name), "user": who})
            self._event(req, provider, "DeletionOverridden", note)
            return allowed(warnings=(f"kustodian: {note}",))
        return allowed()

    def on_namespace_delete(self, req: AdmissionRequest) -> Answer:
        stale = self.stale_kinds(self._namespace_reads)
        if stale:
            return denied(stale_message(f'Namespace "{req.name}"', stale), code=503,
                          reason="ServiceUnavailable")
        if not off_loop():
            raise SlowPath  # walks every provider in the namespace: never on the event loop
        decision = decide_namespace_delete(req.name, self.view, self.rules)
        if not decision.allowed:
            ns_obj = req.subject or {"apiVersion": "v1", "kind": NAMESPACE, "metadata": {"name": req.name}}
            return self._refuse(req, ns_obj, decision, {p.kind for p in decision.providers})
        return allowed()
