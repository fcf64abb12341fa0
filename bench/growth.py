"""How the other paths of issue 46 grow: node cleanup, the orphan scan, the capacity planner.

Each path runs at three sizes up to its largest shape (``LADDERS``), each size in a fresh
process (``python -c 'bench.growth.point(...)'``) that makes its input once and runs the job
``--runs`` times, so the peak RSS a size reports (``VmHWM``) is that size's alone: the job, its
input and the bench's own driving of it, not what another size left in the allocator.  The rows: each size's time, CPU and peak
RSS, then each path's growth (least-squares slope over the sizes) per added unit, and the plot
``bench/growth.png`` (``--growth-plot``).

- node cleanup: ``bench.node_loss.zone_runs``, a zone lost at once, 30 local PVs a Node:
  every Node deleted together, until the last PVC is gone (kube-testserver started by the
  child, on the same CPUs; its memory is not the child's);
- orphan scan: ``bench.orphans.make_disk``, a full scan of one disk and an unchanged rescan;
- capacity planner: ``plan_all`` over the whole cluster, 100 candidate nodes an ACR (the
  middle of ``bench.planner``'s three), and the controller's steady state, one new ACR
  planned against the kept planner.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

# path -> sizes; the growth is said per ``UNIT`` of the path's size
LADDERS: dict[str, tuple[int, ...]] = {  # the quick paths first: the API-server one takes longest
    "orphan scan": (250_000, 500_000, 1_000_000),  # replica directories on one disk
    "capacity planner": (5_000, 10_000, 20_000),  # nodes x 24 drives; 0.6 ACRs x 3 volumes a node
    "node cleanup": (3_000, 10_000, 30_000),  # local PVs + PVCs, 30 a Node (100, 333, 1,000 Nodes)
}
SMOKE: dict[str, tuple[int, ...]] = {"orphan scan": (1_000, 2_000), "capacity planner": (100, 200),
                                     "node cleanup": (60, 120)}
UNIT = {"node cleanup": (10_000, "10k PVCs"), "orphan scan": (100_000, "100k directories"),
        "capacity planner": (1_000, "1,000 nodes")}
SIZE_LABEL = {"node cleanup": "local PVs + PVCs (30 a Node)", "orphan scan": "replica directories on one disk",
              "capacity planner": "nodes x 24 drives (0.6 ACRs x 3 a node)"}
PER_NODE = 30
# what each point reports: key -> (metric, unit)
MEASURES: dict[str, dict[str, tuple[str, str]]] = {
    "node cleanup": {"wall": ("every Node lost -> the last PVC deleted", "s"),
                     "cpu": ("the process's CPU meanwhile", "s"), "rss": ("peak RSS of the process", "MiB")},
    "orphan scan": {"wall": ("full scan", "s"), "cpu": ("full scan's CPU", "s"),
                    "rescan": ("unchanged rescan", "ms"), "rss": ("peak RSS of the process", "MiB")},
    "capacity planner": {"wall": ("batch plan, 100 candidates", "s"), "cpu": ("batch plan's CPU", "s"),
                         "replan": ("re-plan on one new ACR", "ms"), "rss": ("peak RSS of the process", "MiB")},
}
FIGURES: dict[str, dict[int, dict[str, float]]] = {}  # path -> size -> figures, for the plot


def _peak_mib() -> float:
    """This process's peak RSS: ``VmHWM``, the high-water mark of its own memory map.  Not
    ``ru_maxrss``: Linux carries that over an exec from the process that spawned this one, so
    a small size would report the parent's RSS."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _node_cleanup(size: int, runs: int) -> tuple[list[dict[str, float]], float]:
    from bench.node_loss import zone_runs

    walls, _, cpus = zone_runs(runs, max(1, size // PER_NODE), size)
    return [{"wall": wall, "cpu": cpu} for wall, cpu in zip(walls, cpus, strict=True)], _peak_mib()


def _orphan_scan(size: int, runs: int) -> tuple[list[dict[str, float]], float]:
    from bench.orphans import make_disk
    from kustodian.controllers.orphans.scan import scan_disk

    disk = make_disk(size)  # one disk, scanned ``runs`` times (making it is most of the time)
    out = []
    try:
        for _ in range(runs):
            t0, c0 = time.perf_counter(), time.process_time()
            first = scan_disk(disk, "disk-1", "uuid-1", None)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            t0 = time.perf_counter()
            scan_disk(disk, "disk-1", "uuid-1", first)
            rescan = (time.perf_counter() - t0) * 1000
            if len(first.entries) != size:
                raise RuntimeError(f"the scan found {len(first.entries)} replica directories of {size}")
            del first
            out.append({"wall": wall, "cpu": cpu, "rescan": rescan})
        peak = _peak_mib()  # before the disk is removed: rmtree holds a whole directory's entries
    finally:
        shutil.rmtree(disk, ignore_errors=True)
    return out, peak


def _capacity_planner(size: int, runs: int) -> tuple[list[dict[str, float]], float]:
    from bench.planner import _written
    from kustodian.policy.capacity import CapacityPlanner, plan_all
    from kustodian.policy.capacity.synthetic import synthetic_cluster

    n_acrs = size * 3 // 5
    acs, acrs = synthetic_cluster(size, 24, n_acrs, 3, seed=7, nodes_per_acr=100)
    _, extra = synthetic_cluster(size, 24, 3, 3, seed=99, nodes_per_acr=100)
    now = datetime.now(UTC)
    out = []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        plan_all(acrs, acs, now)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        planner = CapacityPlanner(acs)
        written = _written(acrs, planner.plan_requested(acrs, now), 1)
        planner.plan_requested(written, now)
        replan = []
        for i, new in enumerate(extra):
            new["metadata"]["name"] = f"new-{i}"
            t0 = time.perf_counter()
            planner.plan_requested([*written, new], now)
            replan.append((time.perf_counter() - t0) * 1000)
            planner.plan_requested(written, now)
        del planner, written
        out.append({"wall": wall, "cpu": cpu, "replan": statistics.median(replan)})
    return out, _peak_mib()


JOBS = {"node cleanup": _node_cleanup, "orphan scan": _orphan_scan, "capacity planner": _capacity_planner}


def point(path: str, size: int, runs: int) -> None:
    """In the child: measure one size of one path ``runs`` times; print each run's figures and the
    process's peak RSS at the end of the measured work, before any teardown (JSON, the last line)."""
    got, peak = JOBS[path](size, runs)
    print(json.dumps({"runs": got, "rss": peak}), flush=True)


def _measure(path: str, size: int, runs: int) -> tuple[list[dict[str, float]], float]:
    """Each run's figures and the peak RSS of the one process that made them."""
    code = f"from bench.growth import point; point({path!r}, {size}, {runs})"
    proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, check=False,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{path} at {size:,}: the measuring process exited {proc.returncode} "
                           "(its traceback is above, on stderr)")
    got = json.loads(lines[-1])
    return got["runs"], float(got["rss"])


def slope(xs: list[int], ys: list[float]) -> float:
    """Least-squares slope of ``ys`` over ``xs``."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def run(smoke: bool, runs: int) -> Iterator[dict[str, Any]]:
    """Every path at each size of its ladder, ``runs`` times (medians), then the growth rows;
    each row as it comes, so a size that fails loses none measured before it."""
    ladders = SMOKE if smoke else LADDERS
    FIGURES.clear()
    for path, sizes in ladders.items():
        FIGURES[path] = {}
        for size in sizes:
            each, peak = _measure(path, size, runs)
            med = {key: statistics.median(e[key] for e in each) for key in each[0]}
            med["rss"] = peak
            FIGURES[path][size] = med
            for key, (metric, unit) in MEASURES[path].items():
                if key == "rss":
                    note = f"{size:,} {SIZE_LABEL[path]}; VmHWM of the one fresh process that made the {runs} run(s)"
                else:
                    note = f"{size:,} {SIZE_LABEL[path]}; one fresh process; median of {runs}"
                    if runs > 1:
                        note += ": " + ", ".join(f"{e[key]:.3g}" for e in each)
                yield {"scenario": f"{path}: growth", "metric": f"{metric} at {size:,} ({unit})",
                       "value": round(med[key], 2), "target": None, "note": note}
        yield from growth_rows(path)


def growth_rows(path: str) -> list[dict[str, Any]]:
    xs = sorted(FIGURES[path])
    per, per_label = UNIT[path]
    rows = []
    for key, (metric, unit) in MEASURES[path].items():
        ys = [FIGURES[path][x][key] for x in xs]
        if len(xs) < 2 or not all(math.isfinite(y) for y in ys):
            continue
        rows.append({"scenario": f"{path}: growth", "metric": f"{metric} per added {per_label} ({unit})",
                     "value": round(slope(xs, ys) * per, 3), "target": None,
                     "note": f"least-squares slope over {', '.join(f'{x:,}' for x in xs)}; "
                             f"{ys[-1] / ys[0]:.2f}x for {xs[-1] / xs[0]:.2f}x the size"})
    return rows


def plot(path: str) -> None:
    """One panel a path: its time (left axis) and peak RSS (right axis) against its size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(FIGURES), figsize=(4.2 * len(FIGURES), 3.8))
    for ax, (name, figures) in zip(list(getattr(axes, "flat", [axes])), FIGURES.items(), strict=True):
        xs = sorted(figures)
        metric, unit = MEASURES[name]["wall"]
        ax.plot(xs, [figures[x]["wall"] for x in xs], "o-", color="tab:blue", label=f"{metric} ({unit})")
        ax.plot(xs, [figures[x]["cpu"] for x in xs], "s--", color="tab:cyan", label=f"its CPU ({unit})")
        ax.set_xlabel(SIZE_LABEL[name])
        ax.set_ylabel("seconds")
        ax.set_title(name)
        ax.grid(True, alpha=0.3)
        mem = ax.twinx()
        mem.plot(xs, [figures[x]["rss"] for x in xs], "^:", color="tab:red", label="peak RSS (MiB)")
        mem.set_ylabel("MiB")
        lines = ax.get_lines() + mem.get_lines()
        ax.legend(lines, [str(line.get_label()) for line in lines], fontsize=7, loc="upper left")
    fig.suptitle("The other paths at three sizes each (python -m bench --only growth)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
