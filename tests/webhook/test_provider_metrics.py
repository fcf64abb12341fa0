"""The per-provider dependents metric over the guard's caches (loaded through
``WatchCache.replace``, no API server): capped series, the fold, stale kinds keep their last
counts.  The real /metrics endpoint is scraped in ``tests/e2e/test_report_refusals.py``."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kustodian.kube.cache import WatchCache
from kustodian.webhook.features.provider_metrics import ProviderDependents
from tests.policy.deletion.builders import blockpool, rbd_pv
from tests.webhook.test_deletion_guard_freshness import POOL, with_meta, world

COUNTS = {"p3": 3, "p2": 2, "p1": 1, "p0": 0}


def pools_world() -> tuple[ProviderDependents, dict[str, WatchCache]]:
    pools = [with_meta(blockpool(p)) for p in COUNTS]
    pvs = [with_meta(rbd_pv(f"pv-{p}-{i}", pool=p)) for p, n in COUNTS.items() for i in range(n)]
    guard, caches = world({POOL: pools, "PersistentVolume": pvs})
    return ProviderDependents(guard, max_series=3, interval=60), caches


def scrape(metrics: ProviderDependents) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(metrics)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(generate_latest(registry).decode()) for s in f.samples}


def series(name: str, ns: str = "rook-ceph", kind: str = POOL) -> tuple[str, tuple[tuple[str, str], ...]]:
    return ("kustodian_protected_provider_dependents", (("kind", kind), ("name", name), ("namespace", ns)))


def test_over_the_cap_the_smallest_fold_into_one_series() -> None:
    metrics, _ = pools_world()
    cap = metrics.refresh()
    assert metrics.complete
    assert [(r.name, n) for r, n in cap.kept] == [("p3", 3), ("p2", 2)]
    got = scrape(metrics)
    dependents = {k: v for k, v in got.items() if k[0] == "kustodian_protected_provider_dependents"}
    assert dependents == {series("p3"): 3.0, series("p2"): 2.0, series("", "", "_folded"): 1.0}
    assert got[("kustodian_protected_provider_series_folded", ())] == 2.0
    assert got[("kustodian_protected_providers", ())] == 4.0


def test_under_the_cap_every_provider_has_its_own_series() -> None:
    metrics, _ = pools_world()
    metrics.max_series = 10
    metrics.refresh()
    got = scrape(metrics)
    assert {k[1][1][1]: v for k, v in got.items() if k[0] == "kustodian_protected_provider_dependents"} == {
        p: float(n) for p, n in COUNTS.items()}
    assert got[("kustodian_protected_provider_series_folded", ())] == 0.0


def test_a_stale_kind_keeps_its_last_counts_never_a_guessed_zero() -> None:
    metrics, caches = pools_world()
    metrics.refresh()
    pvs = caches["PersistentVolume"]
    pvs.replace([], "2")
    pvs.stop()  # no longer following the API server
    cap = metrics.refresh()
    assert not metrics.complete
    assert [(r.name, n) for r, n in cap.kept] == [("p3", 3), ("p2", 2)]
