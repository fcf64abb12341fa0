"""Scenario 4: the capacity planner at 5,000 nodes x 24 drives, 3,000 ACRs x 3 volumes.

For 3, 100 and 500 candidate nodes per ACR (what the scheduler extender passes):

- ``batch``: ``plan_all`` over the whole cluster, wall clock, AC index build included
  (what a restarted controller does once);
- ``re-plan``: the controller's steady state: a ``CapacityPlanner`` kept from the batch,
  the written decisions synced once, then one new REQUESTED ACR planned (median);
- ``re-plan on one AC change``: the same, after an AC held by a reservation changed
  (``CapacityPlanner.update`` in place, no rebuild), then one new ACR planned (median);
- ``rejected``: pods arriving one by one (each planned against everything before it),
  with and without the release of a bound pod's other nodes (the pod binds to the first
  reserved node): the share of pods rejected, and the share of the cluster's drives (ACs)
  the RESERVED ACRs hold at the end (the "use": a plain volume takes a whole drive).

Each note names the planner's table (``planner.backend()``: ``native`` when the compiled
``_native`` module is built, else ``python``).  Wall clock is the value; process CPU time is in the note (the bench machine is shared),
and so is ``machine_ms``: a fixed loop timed beside each batch, since the VM's speed
drifts (compare batch times of two runs only together with it).

``--largest`` (issue 46): 20,000 nodes x 24 drives and 12,000 ACRs x 3 volumes, the same shape
four times over (the 1 s batch target is the 5,000-node one's; these rows name none).

``policy.capacity.synthetic.synthetic_cluster`` builds the input (seeded: every run plans
the same cluster).  Smoke mode shrinks the cluster to 200 nodes x 24, 200 ACRs.
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime
from typing import Any


def _written(acrs: list[dict[str, Any]], decisions: list[Any], start: int) -> list[dict[str, Any]]:
    from kustodian.policy.capacity import apply_decision

    by_name = {d.acr_name: d for d in decisions}
    out = []
    for i, acr in enumerate(acrs):
        d = by_name.get(acr["metadata"]["name"])
        new = apply_decision(acr, d) if d is not None else acr
        new["metadata"]["resourceVersion"] = str(start + i)
        out.append(new)
    return out


def _arrivals(acs: list[dict[str, Any]], acrs: list[dict[str, Any]], release: bool) -> tuple[float, float]:
    """(share of pods rejected, share of the cluster's drives (ACs) held) for pods arriving in order."""
    from kustodian.policy.capacity import CapacityPlanner, apply_decision, narrow_to_node

    planner = CapacityPlanner(acs)
    node_of = {a["metadata"]["name"]: a["spec"]["NodeId"] for a in acs}.__getitem__
    now = datetime.now(UTC)
    written: list[dict[str, Any]] = []
    rejected = 0
    rv = 1
    for acr in sorted(acrs, key=lambda a: (a["metadata"]["creationTimestamp"], a["metadata"]["name"])):
        (decision,) = planner.plan_requested([*written, acr], now)
        new = apply_decision(acr, decision, now)
        if decision.status == "REJECTED":
            rejected += 1
        elif decision.status == "RESERVED" and release:
            new = narrow_to_node(new, decision.reserved_nodes[0], node_of) or new  # the pod binds there
        rv += 1
        new["metadata"]["resourceVersion"] = str(rv)
        written.append(new)
    held = {ac_name for acr in written if acr["spec"]["Status"] == "RESERVED"
            for item in acr["spec"]["ReservationRequests"] for ac_name in item.get("Reservations", [])}
    return rejected / len(acrs), len(held) / len(acs)


def machine_ms() -> float:
    """Best of 5 of a fixed pure-Python loop shaped like the planner's cheap pass (a
    comprehension of dict lookups and comparisons, 1M checks): how fast this machine runs
    such code right now.  The bench VM's speed drifts by up to half within an hour, so a
    batch time is comparable with another run's only next to this figure."""
    rooms = {f"node-{i:05d}": (i * 7919) % 10_000 for i in range(5_000)}
    nodes = list(rooms)
    get = rooms.get
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for need in range(0, 10_000, 50):
            [node for node in nodes if get(node, -1) >= need]
        best = min(best, time.perf_counter() - t0)
    return best * 1000


LARGEST = (20_000, 24, 12_000)  # issue 46: the capacity planner at 20k nodes (ACRs scaled with the nodes)


def run(smoke: bool, runs: int, largest: bool = False) -> list[dict[str, Any]]:
    try:
        import kustodian.policy.capacity  # noqa: F401
    except ImportError as exc:
        return [{"scenario": "capacity planner", "metric": "plan_all", "value": "not available", "target": None,
                 "note": f"policy.capacity not importable: {exc}"}]

    nodes, drives, n_acrs = (200, 24, 200) if smoke else LARGEST if largest else (5_000, 24, 3_000)
    rows: list[dict[str, Any]] = []
    for candidates in (3, 100, 500):
        rows += rows_for(candidates, nodes, drives, n_acrs, runs)
    return rows


def rows_for(candidates: int, nodes: int, drives: int, n_acrs: int, runs: int) -> list[dict[str, Any]]:
    """The rows of one candidate count (``python -c 'from bench.planner import rows_for; ...'``)."""
    from kustodian.policy.capacity import CapacityPlanner, plan_all
    from kustodian.policy.capacity.planner import backend
    from kustodian.policy.capacity.synthetic import synthetic_cluster

    shape = f"{n_acrs} ACRs x 3 over {nodes} nodes x {drives}"
    rows: list[dict[str, Any]] = []
    acs, acrs = synthetic_cluster(nodes, drives, n_acrs, 3, seed=7, nodes_per_acr=candidates)
    now = datetime.now(UTC)
    times = []
    decisions = []
    cpu = []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        decisions = plan_all(acrs, acs, now)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    reserved = sum(d.status == "RESERVED" for d in decisions)
    rows.append({"scenario": "capacity planner", "metric": f"batch plan {shape}, {candidates} candidates (s)",
                 "value": round(statistics.median(times), 3), "target": ("<=", 1.0) if nodes <= 5_000 else None,
                 "note": f"{backend()} table; {reserved} RESERVED; index build included; CPU {statistics.median(cpu):.3f} s; "
                         f"machine: fixed loop {machine_ms():.0f} ms (bench.planner.machine_ms)"})

    # steady state: the planner kept, the batch as written, one new ACR at a time
    planner = CapacityPlanner(acs)
    first = planner.plan_requested(acrs, now)
    written = _written(acrs, first, 1)
    planner.plan_requested(written, now)  # the written decisions replace the planned holds
    _, extra = synthetic_cluster(nodes, drives, max(runs, 3), 3, seed=99, nodes_per_acr=candidates)
    replan, replan_cpu = [], []
    for i, new in enumerate(extra):
        new["metadata"]["name"] = f"new-{i}"
        t0, c0 = time.perf_counter(), time.process_time()
        (d,) = planner.plan_requested([*written, new], now)
        replan.append(time.perf_counter() - t0)
        replan_cpu.append(time.process_time() - c0)
        planner.plan_requested(written, now)  # the new one goes away again (released)
    rows.append({"scenario": "capacity planner",
                 "metric": f"re-plan on one new ACR, {candidates} candidates (ms)",
                 "value": round(statistics.median(replan) * 1000, 1), "target": ("<=", 50.0),
                 "note": f"{planner.backend} table; incremental CapacityPlanner over {shape}; last: {d.status}; "
                         f"CPU {statistics.median(replan_cpu) * 1000:.1f} ms"})

    # an AC changes (a held drive shrinks, then comes back): applied to the kept planner
    # in place, then one new ACR planned; every RESERVED ACR holding it is charged again
    held = next(name for acr in written if acr["spec"]["Status"] == "RESERVED"
                for item in acr["spec"]["ReservationRequests"] for name in item.get("Reservations", []))
    ac = next(a for a in acs if a["metadata"]["name"] == held)
    ac_times, ac_cpu = [], []
    for i, new in enumerate(extra):
        changed = {**ac, "spec": {**ac["spec"], "Size": ac["spec"]["Size"] // (2 if i % 2 == 0 else 1)}}
        t0, c0 = time.perf_counter(), time.process_time()
        planner.update({held: changed})
        (d,) = planner.plan_requested([*written, new], now)
        ac_times.append(time.perf_counter() - t0)
        ac_cpu.append(time.process_time() - c0)
        planner.plan_requested(written, now)
    planner.update({held: ac})
    rows.append({"scenario": "capacity planner",
                 "metric": f"re-plan on one AC change, {candidates} candidates (ms)",
                 "value": round(statistics.median(ac_times) * 1000, 1), "target": ("<=", 50.0),
                 "note": f"{planner.backend} table; CapacityPlanner.update (no rebuild) + one new ACR over {shape}; last: {d.status}; "
                         f"CPU {statistics.median(ac_cpu) * 1000:.1f} ms"})

    for release in (False, True):
        share, use = _arrivals(acs, acrs, release)
        rows.append({"scenario": "capacity planner",
                     "metric": f"pods rejected, {candidates} candidates, "
                               f"{'release on bind' if release else 'no release'} (%)",
                     "value": round(share * 100, 1), "target": ("<=", 1.0) if release else None,
                     "note": f"drives (ACs) held by reservations at the end: {use * 100:.1f}%"})
    return rows
