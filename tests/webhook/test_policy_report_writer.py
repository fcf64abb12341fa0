"""The policy report writer against the real API server and the real report CRDs.

The cluster's state is held in the guard's caches, loaded through ``WatchCache.replace`` (the
deletion guard, its memo and the writer are the real ones; ``tests/e2e/test_policy_reports.py``
plays the same story through a real DELETE): so 10,000 providers being deleted cost no 30,000
API objects, and the report they make is written to, and read back from, the API server.

* 10,000 providers: each report stays under 1 MiB as stored (both APIs), the summary counts every
  finding, the annotation says how many were left off, the largest kept (the 10,000 decisions are
  made once for the module, by the decision the guard's memo keeps);
* two replicas writing at once: the one that lost the race gets 409, reads again, computes the
  same document and writes nothing more; once they agree neither writes at all;
* a kind whose cache is not current keeps its results as written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.policy_reports import ReportStore
from kustodian.policy.deletion import DeleteDecision, RuleSet, decide_delete
from kustodian.policy.modes import Mode
from kustodian.policy.objects import RawObject
from kustodian.policy.policy_reports import (
    OMITTED_ANNOTATION,
    OPENREPORTS,
    REPORT_BYTES,
    WGPOLICYK8S,
    ReportApi,
    SourcePass,
)
from kustodian.policy.store import ClusterView
from kustodian.webhook.features.deletion_guard import DeletionGuard
from kustodian.webhook.features.policy_reports import DeletionFindings, PolicyReportWriter
from tests.conftest import KubeApi
from tests.policy.deletion.builders import blockpool, rbd_pv
from tests.policy_reports import serve, unserve
from tests.webhook.test_deletion_guard_freshness import POOL, with_meta, world

pytestmark = pytest.mark.api

DELETED = "2026-11-26T10:00:00Z"
NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)
PROVIDERS = 10_000


def terminating(name: str, namespace: str) -> dict[str, Any]:
    pool = with_meta(blockpool(name, namespace))
    pool["metadata"]["deletionTimestamp"] = DELETED
    return pool


def guard_over(namespace: str, providers: int, dependents: Any = lambda i: 1) -> tuple[DeletionGuard,
                                                                                      dict[str, WatchCache]]:
    pools = [terminating(f"pool-{i:05d}", namespace) for i in range(providers)]
    pvs = [with_meta(rbd_pv(f"pv-{namespace}-{i:05d}-{j}", pool=f"pool-{i:05d}", cluster_id=namespace))
           for i in range(providers) for j in range(dependents(i))]
    guard, caches = world({POOL: pools, "PersistentVolume": pvs})
    guard.mode = Mode.WARN
    return guard, caches


def writer(client: KubeClient, guard: DeletionGuard, *, max_results: int = 1000,
           store: ReportStore | None = None) -> PolicyReportWriter:
    return PolicyReportWriter(store or ReportStore(client, "kustodian"), [DeletionFindings(guard)], interval=60,
                              max_results=max_results, now=lambda: NOW)


@pytest.fixture(scope="module", params=["openreports", "wgpolicyk8s"])
def report_api(request: pytest.FixtureRequest, kube_api: KubeApi, upstream: Path) -> Iterator[ReportApi]:
    """One report API served: OpenReports (both served, as with Kyverno 1.15+), or wgpolicyk8s alone."""
    unserve(kube_api)
    serve(kube_api, upstream, "wgpolicyk8s")
    if request.param == "openreports":
        serve(kube_api, upstream, "openreports")
    yield OPENREPORTS if request.param == "openreports" else WGPOLICYK8S
    unserve(kube_api)


@dataclass
class Decided:
    """The guard's view of the world, deciding each DELETE afresh (``decide_delete``, the decision the
    guard's memo keeps): 10,000 decisions once, without a memo sized for fewer."""

    guard: DeletionGuard

    @property
    def rules(self) -> RuleSet:
        return self.guard.rules

    @property
    def view(self) -> ClusterView:
        return self.guard.view

    @property
    def mode(self) -> Mode:
        return Mode.WARN

    def stale_kinds(self, kinds: Iterable[str]) -> list[tuple[str, float]]:
        return self.guard.stale_kinds(kinds)

    def decision_now(self, kind_key: str, provider: RawObject) -> DeleteDecision:
        return decide_delete(kind_key, provider, self.guard.view, self.guard.rules, now=NOW)


@dataclass
class Replay:
    """A source that found ``found`` (the pass over 10,000 providers, computed once for the module)."""

    found: SourcePass
    name: str = "replay"

    def collect(self, now: datetime) -> SourcePass:
        return self.found


@pytest.fixture(scope="module")
def ten_thousand() -> SourcePass:
    """10,000 CephBlockPools being deleted, 1 to 7 PersistentVolumes each: the deletion guard's findings."""
    guard, _ = guard_over("kt-ten-thousand", PROVIDERS, lambda i: i % 7 + 1)
    found = DeletionFindings(Decided(guard)).collect(NOW)
    assert len(found.findings) == PROVIDERS and not found.stale
    return found


def stored(kube_api: KubeApi, api: ReportApi, namespace: str) -> dict[str, Any]:
    kind = api.plural if namespace else api.cluster_plural
    doc: dict[str, Any] = json.loads(kube_api.kubectl("get", f"{kind}.{api.group}", "kustodian", "-n", namespace,
                                                      "-o", "json").stdout)
    return doc


@pytest.mark.timeout(600)  # the module's 10,000 decisions are made in the first one's setup
@pytest.mark.parametrize("max_results", [1000, 5000], ids=["default-cap", "largest-cap"])
def test_ten_thousand_providers_keep_each_report_under_one_mebibyte(
        kube_api: KubeApi, report_api: ReportApi, ten_thousand: SourcePass, max_results: int) -> None:
    namespace = "kt-ten-thousand"
    kube_api.kubectl("create", "namespace", namespace, check=False)
    hook = PolicyReportWriter(ReportStore(kube_api.client, "kustodian"), [Replay(ten_thousand)], interval=60,
                              max_results=max_results, now=lambda: NOW)
    hook.write_once()
    assert hook.problem == "" and hook.api == report_api
    doc = stored(kube_api, report_api, namespace)
    size = len(json.dumps(doc, separators=(",", ":")).encode())  # as stored, managedFields included
    assert size < REPORT_BYTES, size
    assert doc["summary"]["fail"] == PROVIDERS  # every finding counted, listed or left off
    listed = len(doc["results"])
    assert 0 < listed <= max_results
    assert int(doc["metadata"]["annotations"][OMITTED_ANNOTATION]) == PROVIDERS - listed
    counts = [int(r["properties"]["dependents"]) for r in doc["results"]]
    assert counts == sorted(counts, reverse=True) and counts[0] == 7  # the most dependents kept
    assert hook.omitted == PROVIDERS - listed and hook.results["fail"] == PROVIDERS
    # as stored is as written (nothing pruned): the next pass writes nothing
    before = dict(hook.writes)
    hook.write_once()
    assert hook.writes == before


class RacingStore(ReportStore):
    """A replica's store that lets another replica write right after each read: the race made sure."""

    def __init__(self, client: KubeClient, name: str) -> None:
        super().__init__(client, name)
        self.other: PolicyReportWriter | None = None

    def stored(self, api: ReportApi) -> dict[str, Any]:
        found = super().stored(api)
        if self.other is not None:
            self.other.write_once()
        return found


def test_two_replicas_writing_at_once_converge(kube_api: KubeApi, report_api: ReportApi, namespace: str) -> None:
    guard, caches = guard_over(namespace, 3, lambda i: i + 1)
    racing = RacingStore(kube_api.client, "kustodian")
    a, b = writer(kube_api.client, guard, store=racing), writer(kube_api.client, guard)
    racing.other = b
    a.write_once()  # b creates it between a's read and a's create: a gets 409, reads, finds it right
    assert b.writes[("create", "ok")] == 1
    assert a.writes[("create", "conflict")] == 1 and a.writes[("create", "ok")] == 0
    first = stored(kube_api, report_api, namespace)
    assert {r["resources"][0]["name"]: r["properties"]["dependents"] for r in first["results"]} == {
        "pool-00000": "1", "pool-00001": "2", "pool-00002": "3"}

    # a dependent goes: b updates between a's read and a's update; a gets 409, reads, writes nothing more
    pvs = caches["PersistentVolume"]
    pvs.replace([o for o in pvs.list() if o["metadata"]["name"] != f"pv-{namespace}-00002-0"], "2")
    a.write_once()
    assert b.writes[("update", "ok")] == 1
    assert a.writes[("update", "conflict")] == 1 and a.writes[("update", "ok")] == 0
    second = stored(kube_api, report_api, namespace)
    assert {r["resources"][0]["name"]: r["properties"]["dependents"] for r in second["results"]}["pool-00002"] == "2"
    assert [r["timestamp"] for r in second["results"]] == [r["timestamp"] for r in first["results"]]

    # they agree: neither writes
    racing.other = None
    before = (dict(a.writes), dict(b.writes))
    a.write_once()
    b.write_once()
    assert (dict(a.writes), dict(b.writes)) == before
    assert stored(kube_api, report_api, namespace)["metadata"]["resourceVersion"] == \
        second["metadata"]["resourceVersion"]

    # the dependents go: the report goes (nothing left to report in this namespace)
    pvs.replace([o for o in pvs.list() if not o["metadata"]["name"].startswith(f"pv-{namespace}-")], "3")
    a.write_once()
    gone = kube_api.kubectl("get", f"{report_api.plural}.{report_api.group}", "kustodian", "-n", namespace,
                            check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_a_kind_not_current_keeps_its_results_as_written(kube_api: KubeApi, report_api: ReportApi,
                                                         namespace: str) -> None:
    guard, caches = guard_over(namespace, 2)
    hook = writer(kube_api.client, guard)
    hook.write_once()
    written = stored(kube_api, report_api, namespace)
    assert len(written["results"]) == 2
    caches["PersistentVolume"].stop()  # the PVs' watch is down: nothing known about the dependents now
    caches[POOL].replace([o for o in caches[POOL].list() if o["metadata"]["name"] != "pool-00000"], "2")
    hook.write_once()
    kept = stored(kube_api, report_api, namespace)
    assert kept["results"] == written["results"]  # neither dropped nor rewritten on knowledge not current
    assert kept["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
