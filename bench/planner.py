"""Scenario 4: the capacity planner, 1,000 ACRs x 3 volumes over 1,000 nodes x 12 drives."""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime
from typing import Any


def run(smoke: bool, runs: int) -> list[dict[str, Any]]:
    from policy.capacity import plan_all
    from policy.capacity.synthetic import synthetic_cluster

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
