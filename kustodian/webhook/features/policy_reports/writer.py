"""The policy report writer: a runnable that keeps one report per namespace current.

Every ``interval`` (and about a second after the admission path says it let something
through: ``poke``, a flag set, nothing more on the request path) one pass:

1. asks discovery which report API is served (OpenReports, else wgpolicyk8s); with none it says
   so once (log, ``/readyz`` note, ``kustodian_policy_reports_served`` 0) and writes nothing,
   and starts writing on the first pass after one becomes served;
2. asks each source (the deletion guard, the schedule validator) for its findings, computed from
   the caches (``policy.deletion.findings``, ``policy.reclaim.findings``): level-based, so the
   same on every replica;
3. reads the reports of ours that are stored (one list per kind, by name) and, per namespace,
   builds the report it should hold (``policy.policy_reports.build_report``: capped, stamped)
   and writes it only if it differs: create, update over the ``resourceVersion`` it read,
   delete (with that version as precondition) when nothing is left to report.

Several replicas write at once, with no leader: each writes what it computes from the cluster's
state, every write is compare-and-swap, and a replica that loses (409) reads again and computes
again.  Since every replica computes the same document from the same state, they converge, and
once they agree nothing is written at all.  While a replica's caches lag (a watch event not in
yet) it may write an older view once; the up-to-date replica's next pass writes it back.  A
finding whose caches are not current is never dropped or rewritten: its results are kept as
last written (``SourcePass.stale``).  Results keep the timestamp they were first listed with.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kustodian.kube.errors import Conflict, Forbidden, KubeError, NotFound
from kustodian.kube.policy_reports import ReportStore
from kustodian.policy.policy_reports import (
    APIS,
    Finding,
    ReportApi,
    SourcePass,
    build_report,
    is_ours,
    report_changed,
)
from kustodian.runtime import Periodic

__all__ = ["FindingSource", "PolicyReportWriter"]

log = logging.getLogger(__name__)

ATTEMPTS = 3  # writes of one report per pass, each after a 409 and a fresh read
SETTLE = 1.0  # after a poke: time for the watch to bring the DELETE's effect into the caches
NOT_SERVED = "not written: this cluster serves neither "


class FindingSource(Protocol):
    """Where findings come from: one pass over the caches."""

    name: str

    def collect(self, now: datetime) -> SourcePass: ...


def _version(doc: Mapping[str, Any]) -> str:
    return str((doc.get("metadata") or {}).get("resourceVersion") or "")


def _kept(current: Mapping[str, Any] | None, stale: frozenset[tuple[str, str]]) -> list[Mapping[str, Any]]:
    if current is None or not stale:
        return []
    return [r for r in current.get("results") or []
            if isinstance(r, Mapping) and (r.get("policy"), r.get("rule")) in stale]


class PolicyReportWriter(Collector):
    """Findings into policy reports, one per namespace; a runnable (``loop``) and a collector."""

    def __init__(self, store: ReportStore, sources: Sequence[FindingSource], *, interval: float,
                 max_results: int, now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 settle: float = SETTLE) -> None:
        self.store = store
        self.sources = list(sources)
        self.interval = interval
        self.max_results = max_results
        self.now = now
        self.settle = settle
        self._poked = threading.Event()
        self._took = 0.0  # how long the last pass took
        self._lock = threading.Lock()
        # a pass that takes long (thousands of providers being deleted at once, each decided again)
        # is followed by a rest twice as long: the writer never takes more than a third of a core
        # from the admission path
        self.loop = Periodic("policy-reports", self._pass, lambda: max(self.interval, 2 * self._took),
                             needs_leader=False)
        self.api: ReportApi | None = None  # what the last pass wrote
        self.problem = ""  # why the last pass wrote nothing ("" when it did its work)
        self.passes = 0
        self.writes: Counter[tuple[str, str]] = Counter()  # (operation, outcome)
        self.results: Counter[str] = Counter()  # findings of the last pass by result, listed or not
        self.omitted = 0  # findings the last pass left off reports (over the caps)
        self._foreign: set[tuple[str, str]] = set()  # (api, namespace) of objects named ours we do not own

    # -- the runnable -----------------------------------------------------------------------------

    def poke(self) -> None:
        """Something was just let through: write soon (the admission path's only part: two flags)."""
        self._poked.set()
        self.loop.wake()

    def _pass(self) -> None:
        """One pass of the runnable (a failing one is logged by it, and the next comes)."""
        if self._poked.is_set():
            self._poked.clear()
            if self.loop.stopping.wait(self.settle):  # the watch brings the DELETE's effect in meanwhile
                return
        started = time.monotonic()
        try:
            self.write_once()
        finally:
            self._took = time.monotonic() - started

    def start(self) -> None:
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop()

    # -- one pass ---------------------------------------------------------------------------------

    def status(self) -> str:
        """One line for ``/readyz``: what is written where, or why nothing is."""
        if self.problem:
            return self.problem
        return f"written as {self.api}" if self.api is not None else "not written yet"

    def _say(self, problem: str) -> None:
        """Log ``problem`` once (and once that it is over); ``""``: none."""
        if problem != self.problem:
            if problem:
                log.warning("policy reports: %s", problem)
            elif not self.problem.startswith(NOT_SERVED):  # becoming served is logged with its API
                log.info("policy reports: written again as %s", self.api)
        self.problem = problem

    def write_once(self) -> None:
        """One pass: every namespace's report brought in line with the findings."""
        self.passes += 1
        try:
            served = self.store.served()
        except KubeError as exc:
            self._say(f"not written: cannot tell whether a report API is served: {exc}")
            return
        if not served:
            self.api = None
            self._say(NOT_SERVED + " nor ".join(str(a) for a in APIS)
                      + " (install the OpenReports or wgpolicyk8s CRDs: Kyverno's or Policy Reporter's)")
            return
        api = served[0]
        if api != self.api:
            log.info("policy reports: writing them as %s", api)
        self.api = api
        now = self.now()
        found = [source.collect(now) for source in self.sources]
        stale = frozenset().union(*(p.stale for p in found))
        closed = frozenset().union(*(p.closed for p in found))
        by_namespace: dict[str, list[Finding]] = {}
        for p in found:
            for finding in p.findings:
                by_namespace.setdefault(finding.subject.namespace, []).append(finding)
        try:
            stored = self.store.stored(api)
        except KubeError as exc:
            self._say(f"not written: cannot list the reports ({api}): {exc}")
            return
        results: Counter[str] = Counter()
        omitted = 0
        for namespace in sorted(set(by_namespace) | set(stored)):
            if namespace in closed:
                continue  # being deleted: it takes no new object, and ours goes with it
            written = self._sync(api, namespace, by_namespace.get(namespace, ()), stored.get(namespace),
                                 stale=stale, now=now)
            if written is not None:
                results.update(written[0])
                omitted += written[1]
        self._retire(served[1:])
        with self._lock:
            self.results, self.omitted = results, omitted
        log.debug("policy reports: pass %d: %d findings in %d reports, %d kinds kept as written "
                  "(not current), %d namespaces being deleted", self.passes, sum(results.values()),
                  len(by_namespace), len(stale), len(closed))
        self._say("")

    def _sync(self, api: ReportApi, namespace: str, findings: Iterable[Finding],
              current: Mapping[str, Any] | None, *, stale: frozenset[tuple[str, str]],
              now: datetime) -> tuple[Counter[str], int] | None:
        """Bring one namespace's report in line; what it holds (results by result, omitted)."""
        findings = list(findings)
        for _ in range(ATTEMPTS):
            if current is not None and not is_ours(current):
                self._leave_foreign(api, namespace)
                return None
            desired = build_report(api, self.store.name, namespace, findings, now=now,
                                   max_results=self.max_results, current=current, kept=_kept(current, stale))
            held = Counter({str(k): int(v) for k, v in desired.document["summary"].items() if v})
            try:
                if desired.empty:
                    if current is not None:
                        self._write("delete", api, namespace, None, _version(current))
                    return held, 0
                if current is None:
                    self._write("create", api, namespace, desired.document, "")
                elif report_changed(current, desired.document):
                    self._write("update", api, namespace, desired.document, _version(current))
                return held, desired.omitted
            except Conflict:  # another replica wrote first (or created it): read again, compute again
                try:
                    current = self.store.get(api, namespace)
                except KubeError as exc:
                    log.warning("policy reports: reading %s of %s again failed: %s", api.kind_in(namespace),
                                namespace or "the cluster", exc)
                    return None
            except NotFound:  # the namespace is gone
                return None
            except Forbidden as exc:
                if "being terminated" not in exc.message:  # a namespace being deleted takes no new object
                    log.warning("policy reports: cannot write %s %s: %s", api.kind_in(namespace),
                                f"{namespace}/{self.store.name}" if namespace else self.store.name, exc)
                return None
            except KubeError as exc:
                log.warning("policy reports: writing %s of %s failed: %s", api.kind_in(namespace),
                            namespace or "the cluster", exc)
                return None
        return None

    def _write(self, operation: str, api: ReportApi, namespace: str, doc: Mapping[str, Any] | None,
               version: str) -> None:
        """One compare-and-swap write (create, update over ``version``, delete at ``version``), counted."""
        try:
            if operation == "delete":
                self.store.delete(api, namespace, version)
            elif operation == "update" and doc is not None:
                self.store.replace(api, doc, version)
            elif doc is not None:
                self.store.create(api, doc)
        except Conflict:
            self._count(operation, "conflict")
            raise
        except KubeError:
            self._count(operation, "error")
            raise
        self._count(operation, "ok")

    def _count(self, operation: str, outcome: str) -> None:
        with self._lock:
            self.writes[(operation, outcome)] += 1

    def _leave_foreign(self, api: ReportApi, namespace: str) -> None:
        key = (str(api), namespace)
        if key not in self._foreign:
            self._foreign.add(key)
            log.warning("policy reports: %s %s exists without the label %s; it is not Kustodian's and is "
                        "left alone (no report is written there)", api.kind_in(namespace),
                        f"{namespace}/{self.store.name}" if namespace else self.store.name,
                        "app.kubernetes.io/managed-by=kustodian")

    def _retire(self, others: Iterable[ReportApi]) -> None:
        """Our reports in an API no longer written (OpenReports became served): removed, so each
        namespace keeps one report."""
        for api in others:
            try:
                for namespace, doc in self.store.stored(api).items():
                    if is_ours(doc):
                        self._write("delete", api, namespace, None, _version(doc))
            except KubeError as exc:
                log.debug("policy reports: retiring those written as %s: %s", api, exc)

    # -- metrics ----------------------------------------------------------------------------------

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            writes, results, omitted = dict(self.writes), dict(self.results), self.omitted
        served = GaugeMetricFamily("kustodian_policy_reports_served",
                                   "1 while a policy report API (OpenReports or wgpolicyk8s) is served and "
                                   "written, 0 while neither is served")
        served.add_metric([], 1.0 if self.api is not None else 0.0)
        by_result = GaugeMetricFamily("kustodian_policy_report_results",
                                      "Findings in Kustodian's policy reports by result (listed or left off)",
                                      labels=["result"])
        for result, n in sorted(results.items()):
            by_result.add_metric([result], float(n))
        left_off = GaugeMetricFamily("kustodian_policy_report_results_omitted",
                                     "Findings left off the reports by their caps (counted in their summary)")
        left_off.add_metric([], float(omitted))
        counted = CounterMetricFamily("kustodian_policy_report_writes",
                                      "Policy report writes by operation and outcome (ok, conflict, error)",
                                      labels=["operation", "outcome"])
        for (operation, outcome), n in sorted(writes.items()):
            counted.add_metric([operation, outcome], float(n))
        yield from (served, by_result, left_off, counted)
