"""Scenario ``scale``: the default install's webhook on clusters of 100k, 250k and 500k PVs + PVCs.

One method, the production one: kube-testserver holds the cluster (``bench.bulk``: the PVs and
PVCs written into its etcd, served by the real API server; Rook's own CRDs; one CephBlockPool
with 50,000 PV dependents at every size), and a real ``kustodian webhook`` process started with
the chart's default arguments (``bench.process``) lists it over HTTPS as it would in a cluster.
Everything is read from outside the process: ``/proc/<pid>`` and its HTTPS port.

Per size and run:

* cold start: spawn -> ``/readyz`` 200 (wall and the process's CPU seconds: on a shared machine
  the wall clock also counts other jobs' time), RSS once ready and the peak while listing
  (VmHWM), the longest ``/healthz`` answer while listing (probed every 10 ms, open loop: an
  event-loop stall counts in full);
* a guarded DELETE of the 50,000-dependent pool at 300 req/s (``bench.admission.measure``: open
  loop, load pinned to CPU 1, the webhook to CPU 0): p50 / p99;
* ``/healthz`` p99 at 50 req/s beside that load while 20 PVs a second of that pool are created and
  deleted through the API server (watch events the webhook applies);
* catch-up: the API server restarted (etcd kept), from its first answer to the webhook's
  ``/readyz`` 200 again; then the same with etcd compacted past the webhook's resourceVersion
  while the API server is down (a 410 for any resumed watch); the longest ``/healthz`` answer
  while it re-lists.

Rows carry the median over ``--runs``; the growth rows give the slope per added 100k PVs of a
least-squares line through the sizes' medians.
"""

from __future__ import annotations

import math
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

RATE = 300.0
SIZES = (100_000, 250_000, 500_000)
TARGETS = {"rss": ("<=", 1024.0), "p99": ("<=", 5.0), "cold": ("<=", 60.0), "catch": ("<=", 30.0),
           "stall": ("<=", 50.0)}
FIGURES: dict[int, dict[str, float]] = {}  # size -> medians, for the plot and the growth rows
PHASE_ERRORS: dict[tuple[int, str], str] = {}  # (size, figure) -> why that phase failed (its figure is NaN)


def parse_sizes(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split(","):
        size = part.strip().lower()
        mult = 1_000 if size.endswith("k") else 1
        out.append(int(float(size.rstrip("k")) * mult))
    return tuple(out)


def _churn(client: Any, stop: threading.Event, counter: list[int]) -> None:
    """20 PVs a second of bigpool created then deleted through the API server (10 alive at most)."""
    from bench import bulk
    from bench.synthetic import api_pv
    from kustodian.kube.resources import PERSISTENT_VOLUMES

    made: list[str] = []
    i = 90_000_000
    while not stop.wait(1 / 20):
        try:
            if len(made) < 10:
                i += 1
                obj = bulk.stored(api_pv(i, pool="bigpool"))
                obj["metadata"] = {"name": obj["metadata"]["name"]}
                client.create(PERSISTENT_VOLUMES, obj)
                made.append(obj["metadata"]["name"])
            else:
                client.delete(PERSISTENT_VOLUMES, made.pop(0))
            counter[0] += 1
        except Exception:  # a slow API server under load: the next tick tries again
            continue


def _restart(server: Any, hook: Any, prober: Any, compact: bool) -> tuple[float, float]:
    """(API server back -> webhook ready, longest /healthz answer meanwhile in ms)."""
    import httpx

    marks: dict[str, float] = {}

    def between() -> None:
        if compact:
            server.etcd_bump_and_compact()

    done = threading.Event()

    def poll_back() -> None:
        while not done.is_set():
            try:
                httpx.get(f"{server.url}/version", verify=False, timeout=1.0)
                if "down" in marks:
                    marks.setdefault("back", time.monotonic())
                    return
            except httpx.HTTPError:
                marks.setdefault("down", time.monotonic())
            time.sleep(0.01)

    watcher = threading.Thread(target=poll_back, daemon=True)
    watcher.start()
    server.restart_apiserver(between)
    watcher.join(120)
    done.set()
    back = marks.get("back", time.monotonic())
    ready = hook.wait_ready(900, after=back)
    return ready - back, max(prober.window(back, ready), default=0.0)


def one_run(server: Any, client: Any, size: int, smoke: bool) -> dict[str, float]:
    from bench import admission, process
    from kustodian.kube.resources import Resource

    hook = process.Webhook.start(server.kubeconfig)
    prober = process.Prober(hook.port).start()
    out: dict[str, float] = {}
    try:
        ready = hook.wait_ready(1800)
        st = hook.at_ready
        out |= {"cold": ready - hook.started, "cold_cpu": st["cpu"], "rss": st["VmRSS"], "peak": st["VmHWM"],
                "stall": max(prober.window(hook.started, ready), default=0.0)}
        print(f"scale: {size // 1000}k: ready in {out['cold']:.0f}s ({out['cold_cpu']:.0f}s CPU), RSS {out['rss']:.0f} MiB, "
              f"peak {out['peak']:.0f} MiB, longest /healthz {out['stall']:.0f} ms", file=sys.stderr, flush=True)
        time.sleep(2)
        idle = prober.window(ready + 0.5, time.monotonic())
        out["idle_max"] = max(idle, default=0.0)
        pools = Resource("ceph.rook.io", "v1", "cephblockpools", "CephBlockPool", True)
        payload = process.delete_review(client.get(pools, "bigpool", "rook-ceph"), "cephblockpools")
        seconds = 2.0 if smoke else 10.0
        tls = str(hook.workdir / "tls")
        cpu0, wait0, t0 = *process.sched_ns(hook.proc.pid), time.monotonic()
        m = admission.measure(tls, hook.port, payload, 1, seconds)
        cpu1, wait1, t1 = *process.sched_ns(hook.proc.pid), time.monotonic()
        answers = (admission.RATE + m.throughput) * seconds + admission.WARM_UP  # open loop, closed loop, warm-up
        out |= {"p50": m.p50_ms, "p99": m.p99_ms, "cpu_per_answer_us": (cpu1 - cpu0) / 1e3 / answers,
                "runq_share": (wait1 - wait0) / 1e9 / (t1 - t0)}
        print(f"scale: {size // 1000}k: DELETE at 300 req/s p50 {m.p50_ms:.2f} ms, p99 {m.p99_ms:.2f} ms; the webhook's "
              f"CPU {out['cpu_per_answer_us']:.0f} µs an answer, waiting for its CPU {out['runq_share']:.2f} s a second",
              file=sys.stderr, flush=True)
        stop, events = threading.Event(), [0]
        churn = threading.Thread(target=_churn, args=(client, stop, events), daemon=True)
        churn.start()
        try:
            out["healthz_p99"] = admission.measure(tls, hook.port, payload, 1, seconds,
                                                   load=admission._load_beside).p99_ms
        except RuntimeError as exc:  # the webhook fell behind the load: said in the row, the rest still measured
            out["healthz_p99"] = math.inf
            print(f"scale: {size // 1000}k: /healthz beside the DELETEs under churn: {exc}", file=sys.stderr)
        stop.set()
        churn.join(10)
        out["churn_events"] = events[0]
        for key, compact in (("catch", False), ("catch410", True)):
            try:
                out[key], out[f"{key}_stall"] = _restart(server, hook, prober, compact=compact)
            except Exception as exc:  # a phase that fails is a row naming it; the figures above still count
                traceback.print_exc()
                out[key] = out[f"{key}_stall"] = math.nan
                PHASE_ERRORS[(size, key)] = f"{type(exc).__name__}: {exc}"
                continue
            print(f"scale: {size // 1000}k: API server restart{', etcd compacted,' if compact else ''} -> ready "
                  f"in {out[key]:.1f} s, longest /healthz meanwhile {out[f'{key}_stall']:.0f} ms",
                  file=sys.stderr, flush=True)
        end = hook.status()
        out["rss_end"], out["peak_end"] = end["VmRSS"], end["VmHWM"]
    finally:
        prober.stop()
        hook.stop()
    return out


def _median(values: list[float]) -> float:
    """The median; NaN (a phase that failed) when any run's is."""
    return math.nan if any(math.isnan(v) for v in values) else statistics.median(values)


def run(smoke: bool, runs: int, sizes: tuple[int, ...] | None = None) -> Iterator[dict[str, Any]]:
    """Each size's rows as soon as it is measured (a later size that fails keeps them)."""
    from bench import bulk
    from kustodian.kube.client import KubeClient
    from kustodian.kube.config import load_config
    from kustodian.kube.resources import NAMESPACES

    for size in (2_000,) if smoke else (sizes or SIZES):
        server = bulk.big_server()
        try:
            client = KubeClient(load_config(str(server.kubeconfig)))
            filled = bulk.fill(server, client, size, size)
            client.create(NAMESPACES, {"metadata": {"name": "kustodian"}})
            results = [one_run(server, client, size, smoke) for _ in range(runs)]
            client.close()
        finally:
            server.destroy()
        med = {k: _median([r[k] for r in results]) for k in results[0]}
        FIGURES[size] = med
        yield from _rows(size, med, runs, filled)
    if len(FIGURES) >= 2:
        yield from _growth()


def _rows(size: int, med: dict[str, float], runs: int, filled: Any) -> list[dict[str, Any]]:
    k = f"{size // 1000}k PVs + {size // 1000}k PVCs"
    where = (f"kube-testserver filled in {filled.seconds:.0f}s (API server {filled.apiserver_mib:.0f} MiB, etcd "
             f"{filled.etcd_mib:.0f} MiB); real `kustodian webhook`, chart defaults, CPU 0; median of {runs}")
    sc = f"scale: {k}"

    def row(metric: str, value: float | str, target: tuple[str, float] | None, note: str,
            key: str = "") -> dict[str, Any]:
        if isinstance(value, float) and math.isnan(value):  # the phase failed: the row says how, the run exits 1
            return {"scenario": sc, "metric": metric, "value": f"failed: {PHASE_ERRORS.get((size, key), '?')}",
                    "target": target, "note": note, "failed": True}
        return {"scenario": sc, "metric": metric, "value": round(value, 2) if isinstance(value, float) else value, "target": target, "note": note}

    return [
        row("cold start to ready (s)", med["cold"], TARGETS["cold"], where),
        row("cold start: the process's CPU (s)", med["cold_cpu"], None, "user + system, /proc/<pid>/stat"),
        row("RSS once ready (MiB)", med["rss"], TARGETS["rss"], "VmRSS at the first /readyz 200"),
        row("peak RSS while listing (MiB)", med["peak"], None, "VmHWM"),
        row("longest /healthz answer while listing (ms)", med["stall"], TARGETS["stall"],
            f"probed every 10 ms, open loop; idle, after ready: {med['idle_max']:.1f} ms (the machine's own noise)"),
        row("DELETE, 50,000 dependents: p50 at 300 req/s (ms)", med["p50"], None, "open loop, 4 conns, TLS"),
        row("DELETE, 50,000 dependents: p99 at 300 req/s (ms)", med["p99"], TARGETS["p99"], "load pinned CPU 1"),
        row("DELETE: the webhook's CPU per answer (µs)", med["cpu_per_answer_us"], None,
            "schedstat over the DELETE passes (open and closed loop); the decision is kept, the dependents do not enter it"),
        row("DELETE: the webhook's seconds runnable but waiting for its CPU, per second", round(med["runq_share"], 2),
            None, "schedstat, its threads summed; near 1: other jobs held its CPU, a queue is then starvation, not cost"),
        row("/healthz p99 beside the DELETEs, PVs changing (ms)",
            med["healthz_p99"] if math.isfinite(med["healthz_p99"]) else "did not finish (the load generator's "
            "time ran out: the webhook fell behind 300 DELETEs/s)", ("<=", 5.0),
            f"{med['churn_events']:.0f} PV creates/deletes through the API server at 20/s"),
        row("API server restart -> ready again (s)", med["catch"], TARGETS["catch"],
            f"a re-list (a watch that ends early always re-lists); longest /healthz meanwhile "
            f"{med['catch_stall']:.1f} ms", "catch"),
        row("API server restart, etcd compacted meanwhile (410) -> ready again (s)", med["catch410"],
            TARGETS["catch"], f"longest /healthz meanwhile {med['catch410_stall']:.1f} ms", "catch410"),
        row("peak RSS over the run, both re-lists included (MiB)", med["peak_end"], TARGETS["rss"],
            f"VmHWM; VmRSS at the end {med['rss_end']:.0f} MiB: a re-list builds the new view beside the old "
            f"one, and memory freed after it mostly stays with the process"),
    ]


def _growth() -> list[dict[str, Any]]:
    xs = sorted(FIGURES)
    rows = []
    for key, metric in (("cold", "cold start (s)"), ("cold_cpu", "cold start CPU (s)"), ("rss", "RSS once ready (MiB)"),
                        ("peak", "peak RSS while listing (MiB)"), ("catch", "catch-up after a restart (s)"),
                        ("p99", "DELETE p99 (ms)")):
        ys = [FIGURES[x][key] for x in xs]
        if not all(math.isfinite(y) for y in ys):  # a phase that failed or did not finish at some size
            continue
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
        rows.append({"scenario": "scale: growth", "metric": f"{metric} per added 100k PVs + 100k PVCs",
                     "value": round(slope * 100_000, 2), "target": None,
                     "note": f"least-squares slope over {', '.join(f'{x // 1000}k' for x in xs)}"})
    return rows


def plot(path: str) -> None:
    """RSS and cold start against cluster size, with the targets (the performance page's figure)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = sorted(FIGURES)
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.8))
    k = [x / 1000 for x in xs]
    a.plot(k, [FIGURES[x]["rss"] for x in xs], "o-", label="RSS once ready")
    a.plot(k, [FIGURES[x]["peak"] for x in xs], "s--", label="peak while listing")
    a.axhline(1024, color="grey", linestyle="--", linewidth=1, label="target 1 GiB")
    a.set_xlabel("PVs (and as many PVCs), thousands")
    a.set_ylabel("MiB")
    a.legend(fontsize=8)
    b.plot(k, [FIGURES[x]["cold"] for x in xs], "o-", label="cold start, wall")
    b.plot(k, [FIGURES[x]["cold_cpu"] for x in xs], "s--", label="cold start, CPU")
    b.plot(k, [FIGURES[x]["catch"] for x in xs], "^-", label="catch-up after a restart")
    b.axhline(60, color="grey", linestyle="--", linewidth=1, label="cold start target 60 s")
    b.set_xlabel("PVs (and as many PVCs), thousands")
    b.set_ylabel("seconds")
    b.legend(fontsize=8)
    for ax in (a, b):
        ax.grid(True, alpha=0.3)
    fig.suptitle("kustodian webhook (chart defaults) listing from kube-testserver")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def default_install_memory(smoke: bool, runs: int) -> list[dict[str, Any]]:
    """The default install's webhook RSS after a full list of 50k PVs + 50k PVCs (issue 46: one
    method, the production one): a real process per run against one filled kube-testserver."""
    from bench import bulk, process
    from kustodian.kube.client import KubeClient
    from kustodian.kube.config import load_config
    from kustodian.kube.resources import NAMESPACES

    size = 2_000 if smoke else 50_000
    server = bulk.big_server()
    got = []
    try:
        client = KubeClient(load_config(str(server.kubeconfig)))
        bulk.fill(server, client, size, size)
        client.create(NAMESPACES, {"metadata": {"name": "kustodian"}})
        client.close()
        for _ in range(runs):
            hook = process.Webhook.start(server.kubeconfig)
            try:
                ready = hook.wait_ready(1800)
                got.append((hook.at_ready["VmRSS"], hook.at_ready["VmHWM"], ready - hook.started,
                            hook.at_ready["cpu"]))
            finally:
                hook.stop()
    finally:
        server.destroy()
    rss, peak, wall, cpu = (statistics.median(g[i] for g in got) for i in range(4))
    k = f"{size // 1000}k PVs + {size // 1000}k PVCs"
    note = ("real `kustodian webhook` with the chart's default arguments (Rook's CRDs installed), listing "
            f"from kube-testserver over HTTPS; VmRSS at the first /readyz 200; median of {runs}")
    return [{"scenario": "webhook: memory (default install)", "metric": f"RSS after a full list, {k} (MiB)",
             "value": round(rss), "target": None if smoke else ("<=", 150.0), "note": note},
            {"scenario": "webhook: memory (default install)", "metric": f"peak RSS while listing, {k} (MiB)",
             "value": round(peak), "target": None,
             "note": f"VmHWM; ready after {wall:.1f}s wall, {cpu:.1f}s of the process's CPU"}]
