"""``python -m bench`` / ``kustodian-bench``: measure Kustodian against the targets of issue #9.

Separate from the tests on purpose: numbers are reported (medians of ``--runs``),
never asserted.  ``--smoke`` runs every scenario on tiny inputs in well under a
minute so CI keeps the harness working.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Row = dict[str, Any]


def _met(row: Row) -> str:
    target = row.get("target")
    if not target:
        return ""
    op, bound = target
    ok = row["value"] <= bound if op == "<=" else row["value"] >= bound
    return "yes" if ok else "**no**"


def _fmt_target(row: Row) -> str:
    target = row.get("target")
    return f"{'≤' if target[0] == '<=' else '≥'} {target[1]:g}" if target else ""


def table(rows: list[Row], command: str) -> str:
    lines = ["| Scenario | Metric | Value | Target | Met | Notes |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['scenario']} | {r['metric']} | {r['value']} | {_fmt_target(r)} | {_met(r)} | "
                     f"{r.get('note', '')} |")
    lines.append("")
    lines.append(f"Command: `{command}` on {platform.processor() or platform.machine()}, "
                 f"Python {platform.python_version()}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny inputs, one run: keeps the harness alive")
    parser.add_argument("--runs", type=int, default=5, help="runs per scenario; medians are reported")
    parser.add_argument("--only", action="append", choices=["admission", "cache", "memory", "planner",
                                                             "orphans", "node-loss"],
                        help="run only these (repeatable)")
    parser.add_argument("--out", default="", help="write the rows as JSON here")
    args = parser.parse_args(argv)
    runs = 1 if args.smoke else args.runs

    from bench import admission, cache, node_loss, orphans, planner

    scenarios: dict[str, Callable[[], list[Row]]] = {
        "admission": lambda: admission.run(args.smoke, runs),
        "cache": lambda: cache.cold_list(args.smoke, runs),
        "memory": lambda: cache.memory(args.smoke),
        "planner": lambda: planner.run(args.smoke, runs),
        "orphans": lambda: orphans.run(args.smoke, runs),
        "node-loss": lambda: node_loss.run(args.smoke, runs),
    }
    rows: list[Row] = []
    for name, scenario in scenarios.items():
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        new = scenario()
        rows += new
        print(f"bench: {name} done in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
        for row in new:  # progress, in case a later scenario fails
            print(f"  {row['scenario']} | {row['metric']} | {row['value']}", file=sys.stderr, flush=True)
    if not args.only:
        rows.append({"scenario": "admission: kopf peer", "metric": "throughput / p99 ratios",
                     "value": "not measured", "target": None,
                     "note": "kopf's admission server needs a running operator; not built yet (issue #9)"})
    command = "python -m bench " + " ".join(sys.argv[1:] if argv is None else argv)
    print(table(rows, command.strip()))
    if args.out:
        Path(args.out).write_text(json.dumps({"command": command, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
