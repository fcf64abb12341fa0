"""``python -m bench`` / ``kustodian-bench``: measure Kustodian against the targets of issue #9.

Separate from the tests on purpose: numbers are reported as they are (medians of
``--runs``), never asserted, and a missed target is printed as "no".  ``--smoke``
runs every scenario once on tiny inputs in well under a minute so CI keeps the
harness working; it exits 0 unless a scenario is broken.  Scenarios that need a real
API server (kube-testserver) print "skipped: no API server" under ``--smoke`` when
there is none, and make a full run fail.  A scenario, or a phase of one, that fails is a row
naming the error: the table keeps every other row (each printed to stderr as it comes) and
the run exits 1 at the end.

Output: a markdown table on stdout (Scenario | Metric | Value | Target | Met? |
Command | Notes), the same rows as JSON (``--out``) and the open-loop latency
distributions as a plot (``--plot``, matplotlib with the Agg backend).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

from bench.rows import Row, failure

SCENARIOS = ["admission", "kopf", "cache", "memory", "planner", "orphans", "node-loss", "catch-up", "controllers",
             "scale", "backstop", "growth"]
LARGEST = {"planner", "orphans", "node-loss"}  # what --largest changes
NEEDS_API = {"kopf", "cache", "memory", "node-loss", "catch-up", "controllers", "scale", "backstop", "growth"}


def _met(row: Row) -> str:
    target = row.get("target")
    value = row["value"]
    if not target or not isinstance(value, int | float):
        return ""
    op, bound = target
    ok = value <= bound if op == "<=" else value >= bound
    return "yes" if ok else "**no**"


def _fmt_target(row: Row) -> str:
    target = row.get("target")
    return f"{'≤' if target[0] == '<=' else '≥'} {target[1]:g}" if target else ""


def table(rows: list[Row]) -> str:
    lines = ["| Scenario | Metric | Value | Target | Met? | Command | Notes |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['scenario']} | {r['metric']} | {r['value']} | {_fmt_target(r)} | {_met(r)} | "
                     f"`{r.get('command', '')}` | {r.get('note', '')} |")
    lines.append("")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines.append(f"{platform.processor() or platform.machine()}, {cpus} CPUs, Python {platform.python_version()}")
    return "\n".join(lines)


def collect(name: str, scenario: Callable[[], Iterable[Row]], command: str) -> list[Row]:
    """A scenario's rows, each printed (to stderr) as it comes, so a later failure loses none; a
    scenario that raises ends with a row naming the error (``failed``: the run exits 1)."""
    out: list[Row] = []
    try:
        for row in scenario():
            row["command"] = command
            print(f"  {row['scenario']} | {row['metric']} | {row['value']}", file=sys.stderr, flush=True)
            out.append(row)
    except Exception as exc:  # the rows so far and the other scenarios still count
        traceback.print_exc()
        row = {**failure(name, exc), "command": command}
        print(f"  {row['scenario']} | {row['metric']} | {row['value']}", file=sys.stderr, flush=True)
        out.append(row)
    return out


def plot(latencies: dict[str, list[float]], path: str) -> None:
    """Latency CDFs of the open-loop runs (the median-p99 run of each), log x axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, values in latencies.items():
        s = sorted(values)
        n = len(s)
        ax.plot(s, [(i + 1) / n for i in range(n)], label=f"{label} (n={n})")
    ax.axvline(15.0, color="grey", linestyle="--", linewidth=1, label="p99 target 15 ms")
    ax.axhline(0.99, color="grey", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("latency from scheduled send (ms), open loop at 300 req/s")
    ax.set_ylabel("fraction of requests")
    ax.set_title("Admission latency over TLS keep-alive")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, one run: keeps the harness alive")
    parser.add_argument("--runs", type=int, default=5, help="runs per scenario; medians are reported")
    parser.add_argument("--only", action="append", choices=SCENARIOS, metavar="NAME",
                        help=f"run only this scenario (repeatable): {', '.join(SCENARIOS)}")
    parser.add_argument("--out", default="bench/results.json", help="write the rows as JSON here ('' for none)")
    parser.add_argument("--plot", default="bench/latency.png", help="latency CDF plot ('' for none)")
    parser.add_argument("--sizes", default="100k,250k,500k",
                        help="cluster sizes of the scale scenario: PVs, and as many PVCs (e.g. 100k,250k)")
    parser.add_argument("--scale-plot", default="bench/scale.png", help="the scale scenario's plot ('' for none)")
    parser.add_argument("--growth-plot", default="bench/growth.png",
                        help="the growth scenario's plot: node cleanup, orphan scan, planner ('' for none)")
    parser.add_argument("--largest", action="store_true",
                        help="issue 46's largest shapes for planner (20k nodes), orphans (1M directories) and "
                             "node-loss (30k PVs on 1,000 Nodes lost at once)")
    args = parser.parse_args(argv)
    if args.largest and (args.smoke or (args.only and not LARGEST & set(args.only))):
        parser.error("--largest changes only " + ", ".join(sorted(LARGEST)) + " and not under --smoke: "
                     "with " + ("--smoke" if args.smoke else "--only " + " --only ".join(args.only)) + " it would do nothing")
    runs = 1 if args.smoke else max(1, args.runs)

    from bench import (
        admission,
        backstop,
        cache,
        controllers,
        growth,
        kopf_peer,
        node_loss,
        orphans,
        planner,
        scale,
    )
    from kustodian.testing.testserver import find_script

    scenarios: dict[str, Callable[[], Iterable[Row]]] = {
        "admission": lambda: admission.run(args.smoke, runs),
        "kopf": lambda: kopf_peer.run(args.smoke, runs),
        "cache": lambda: cache.cold_list(args.smoke, runs),
        "memory": lambda: cache.memory(args.smoke) + scale.default_install_memory(args.smoke, runs),
        "planner": lambda: planner.run(args.smoke, runs, args.largest),
        "orphans": lambda: orphans.run(args.smoke, runs, args.largest),
        "node-loss": lambda: node_loss.run(args.smoke, runs, args.largest),
        "catch-up": lambda: cache.catch_up(args.smoke, runs),
        "controllers": lambda: controllers.run(args.smoke, runs),
        "scale": lambda: scale.run(args.smoke, runs, scale.parse_sizes(args.sizes)),
        "backstop": lambda: backstop.run(args.smoke, runs),
        "growth": lambda: growth.run(args.smoke, runs),
    }
    have_api = find_script() is not None
    rows: list[Row] = []
    ran: set[str] = set()  # a plot is drawn only from a scenario of this invocation
    for name, scenario in scenarios.items():
        if args.only and name not in args.only:
            continue
        command = f"python -m bench --only {name} " + ("--smoke" if args.smoke else f"--runs {runs}")
        if name == "scale" and not args.smoke:
            command += f" --sizes {args.sizes}"
        if name in LARGEST and args.largest and not args.smoke:
            command += " --largest"
        if name in NEEDS_API and not have_api:
            if not args.smoke:
                print(f"bench: {name} needs kube-testserver (../shared/kube-testserver), not found",
                      file=sys.stderr)
                return 1
            new: list[Row] = [{"scenario": name, "metric": "-", "value": "skipped: no API server",
                               "target": None, "note": "kube-testserver not found", "command": command}]
            print(f"  {name} | - | skipped: no API server", file=sys.stderr, flush=True)
        else:
            t0 = time.perf_counter()
            print(f"bench: {name} ...", file=sys.stderr, flush=True)
            new = collect(name, scenario, command)
            ran.add(name)
            print(f"bench: {name} done in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
        rows += new
    print(table(rows))
    invoked = "python -m bench " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"command": invoked.strip(), "smoke": args.smoke, "runs": runs,
                                              "rows": rows}, indent=2))
    if args.plot and admission.LATENCIES:
        plot(admission.LATENCIES, args.plot)
    if args.scale_plot and "scale" in ran and len(scale.FIGURES) >= 2:
        scale.plot(args.scale_plot)
    if args.growth_plot and "growth" in ran and growth.FIGURES and all(len(f) >= 2 for f in growth.FIGURES.values()):
        growth.plot(args.growth_plot)
    failed = [f"{r['scenario']}: {r['value']}" for r in rows if r.get("failed")]
    for line in failed:
        print(f"bench: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
