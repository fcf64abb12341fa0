"""Scenario 4: the capacity planner, 1,000 ACRs x 3 volumes over 1,000 nodes x 12 drives.

``policy.capacity.synthetic.synthetic_cluster`` builds the input (seeded, so every run
plans the same cluster); ``plan_all`` is timed alone, wall clock, median of the runs.
When ``policy.capacity`` is not importable the row says "not available".
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime
from typing import Any


def run(smoke: bool, runs: int) -> list[dict[str, Any]]:
    try:
        from kustodian.policy.capacity import plan_all
        from kustodian.policy.capacity.synthetic import synthetic_cluster
    except ImportError as exc:
        return [{"scenario": "capacity planner", "metric": "plan_all 1000 ACRs x 3 over 1000 nodes x 12 (s)",
                 "value": "not available", "target": None, "note": f"policy.capacity not importable: {exc}"}]

    nodes, acrs = (100, 100) if smoke else (1_000, 1_000)
    acs, reqs = synthetic_cluster(nodes, 12, acrs, 3, seed=7)
    now = datetime.now(UTC)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        decisions = plan_all(reqs, acs, now)
        times.append(time.perf_counter() - t0)
    reserved = sum(d.status == "RESERVED" for d in decisions)
    return [{"scenario": "capacity planner", "metric": f"plan_all {acrs} ACRs x 3 over {nodes} nodes x 12 (s)",
             "value": round(statistics.median(times), 3), "target": ("<=", 1.0),
             "note": f"{reserved} RESERVED"}]
