"""Scenario 3: the watch cache — cold list of PVs against a real API server, memory, GC pauses.

Cold list: ``WatchCache`` (httpx + orjson, raw dicts, slimmed) against the official
client's ``CoreV1Api.list_persistent_volume`` (model objects), both paginated with
limit 500 against the same kube-testserver holding the same PVs.

Memory and GC: a fresh process loads 50k PVs, 50k PVCs and 150k Pods into caches
through ``WatchCache.replace``; RSS is read from /proc and every garbage-collector
pass is timed through ``gc.callbacks``.

The webhook's own memory after a full list is measured one way only, the production one: a
real ``kustodian webhook`` process listing from kube-testserver (``bench.scale``).
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.synthetic import pod, pv, pvc


def _memory_child(sizes: tuple[int, int, int], out: Any) -> None:
    from kustodian.kube.cache import WatchCache
    from kustodian.kube.resources import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, PODS

    pauses: list[float] = []
    started: list[float] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            pauses.append(time.perf_counter() - started.pop())

    gc.callbacks.append(on_gc)
    caches = []
    for res, make, n in ((PERSISTENT_VOLUMES, pv, sizes[0]), (PERSISTENT_VOLUME_CLAIMS, pvc, sizes[1]),
                         (PODS, pod, sizes[2])):
        cache = WatchCache(None, res)  # loaded with replace(), never listed
        cache.replace((make(i) for i in range(n)), "1")  # as a list arrives: decoded items, one swap
        caches.append(cache)
    gc.callbacks.remove(on_gc)
    with open("/proc/self/status") as fh:
        rss = next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS:"))
    out.send({"rss_mib": rss, "worst_gc_ms": max(pauses, default=0.0) * 1000, "gc_passes": len(pauses),
              "objects": sum(len(c) for c in caches)})


def memory(smoke: bool) -> list[dict[str, Any]]:
    sizes = (2_000, 2_000, 6_000) if smoke else (50_000, 50_000, 150_000)
    spawn = mp.get_context("spawn")
    parent, child = spawn.Pipe()
    proc = spawn.Process(target=_memory_child, args=(sizes, child))
    proc.start()
    info = parent.recv()
    proc.join()
    label = f"{sizes[0] // 1000}k PVs + {sizes[1] // 1000}k PVCs + {sizes[2] // 1000}k Pods"
    return [
        {"scenario": "cache: memory", "metric": "RSS with caches loaded (MiB)", "value": round(info["rss_mib"]),
         "target": ("<=", 512.0), "note": label},
        {"scenario": "cache: memory", "metric": "worst GC pause while loading (ms)",
         "value": round(info["worst_gc_ms"], 2), "target": ("<=", 10.0), "note": f"{info['gc_passes']} GC passes"},
    ]


def cold_list(smoke: bool, runs: int) -> list[dict[str, Any]]:
    from kustodian.kube.cache import WatchCache
    from kustodian.kube.client import KubeClient
    from kustodian.kube.config import load_config
    from kustodian.kube.resources import PERSISTENT_VOLUMES

    count = 1_000 if smoke else 50_000
    server = _start_server()
    try:
        client = KubeClient(load_config(str(server.kubeconfig)))
        created_in = _create_pvs(client, count)

        ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
        from kubernetes import client as k8s
        from kubernetes import config as k8s_config

        api_client = k8s_config.new_client_from_config(str(server.kubeconfig))  # type: ignore[no-untyped-call]
        core = k8s.CoreV1Api(api_client)
        for _ in range(runs):
            t0, c0 = time.perf_counter(), time.process_time()
            cache = WatchCache(client, PERSISTENT_VOLUMES)
            cache.run_once_synced()
            assert len(cache) == count
            ours.append(time.perf_counter() - t0)
            ours_cpu.append(time.process_time() - c0)
            del cache
            t0, c0 = time.perf_counter(), time.process_time()
            n, cont = 0, None
            while True:
                page = core.list_persistent_volume(limit=500, _continue=cont)
                n += len(page.items)
                cont = page.metadata._continue if page.metadata else None
                if not cont:
                    break
            assert n == count
            theirs.append(time.perf_counter() - t0)
            theirs_cpu.append(time.process_time() - c0)
        api_client.close()
        client.close()
    finally:
        server.destroy()
    a, b = statistics.median(ours), statistics.median(theirs)
    ac, bc = statistics.median(ours_cpu), statistics.median(theirs_cpu)
    note = f"{count} PVs on kube-testserver, limit 500; created in {created_in:.0f}s"
    return [
        {"scenario": "cache: cold list + sync", "metric": "client CPU, Kustodian WatchCache (s)",
         "value": round(ac, 3), "target": None, "note": "process CPU time of the listing client"},
        {"scenario": "cache: cold list + sync", "metric": "client CPU, official client models (s)",
         "value": round(bc, 3), "target": None, "note": "same run"},
        {"scenario": "cache: cold list + sync", "metric": "client CPU ratio (x)", "value": round(bc / ac, 1),
         "target": (">=", 10.0), "note": "what the client itself costs, server time excluded"},
        {"scenario": "cache: cold list + sync", "metric": "Kustodian WatchCache (s)", "value": round(a, 3),
         "target": ("<=", 3.0), "note": note},
        {"scenario": "cache: cold list + sync", "metric": "official client list_persistent_volume (s)",
         "value": round(b, 3), "target": None, "note": "model objects"},
        {"scenario": "cache: cold list + sync", "metric": "wall-clock speed-up (x)", "value": round(b / a, 1),
         "target": (">=", 10.0), "note": "same run; both wait on the same API server"},
    ]


def catch_up(smoke: bool, runs: int) -> list[dict[str, Any]]:
    """API server restarted under a webhook-shaped PV cache: how long until it is fresh again.

    The cache is built as ``kustodian webhook`` builds it (the rules' indexers, only the fields
    they read, reconnection backoff capped at ``kube.kinds.RETRY_MAX``).  Each run stops the API server (etcd keeps running), starts it again and times
    from the moment it answers again until the cache has re-listed and re-established its
    watch (``fresh``); until then the guard answers 503 for decisions that read PVs.  Only PVs
    are listed: no rule reads PVCs or Pods, so the webhook has no cache of them to refill.
    """
    from kustodian.kube.cache import WatchCache
    from kustodian.kube.client import KubeClient
    from kustodian.kube.config import load_config
    from kustodian.kube.kinds import RETRY_MAX
    from kustodian.kube.resources import NAMESPACES, PERSISTENT_VOLUMES
    from kustodian.kube.slim import projection
    from kustodian.policy.deletion import rook_rules
    from kustodian.webhook.features.deletion_guard import cache_projections, needed_kinds

    count = 1_000 if smoke else 50_000
    server = _start_server()
    try:
        client = KubeClient(load_config(str(server.kubeconfig)))
        created_in = _create_pvs(client, count)
        rules = rook_rules()
        cache = WatchCache(client, PERSISTENT_VOLUMES, indexers=needed_kinds(rules)["PersistentVolume"],
                           transform=projection(cache_projections(rules)["PersistentVolume"]),
                           backoff_max=RETRY_MAX).start()
        deadline = time.monotonic() + 300
        while not cache.fresh and time.monotonic() < deadline:
            time.sleep(0.05)
        times, lists = [], []
        for _ in range(runs):
            times.append(_time_restart(server, client, cache, NAMESPACES))
            lists.append(cache.list_seconds)
        assert len(cache) == count
        relists = cache.relists
        cache.stop()
        client.close()
    finally:
        server.destroy()
    note = (f"{count} PVs on kube-testserver (created in {created_in:.0f}s), webhook-shaped cache; "
            f"{relists} lists in all")
    return [
        {"scenario": "cache: API server restart", "metric": "API server back -> PV cache fresh (s)",
         "value": round(statistics.median(times), 2), "target": None, "note": note},
        {"scenario": "cache: API server restart", "metric": "worst run (s)", "value": round(max(times), 2),
         "target": None, "note": f"max over {runs} runs; includes the watch's retry backoff"},
        {"scenario": "cache: API server restart", "metric": "re-list duration (s)",
         "value": round(statistics.median(lists), 2), "target": None,
         "note": ("median; the cache may start its re-list before the poll sees the API server "
                  "back, so this can exceed the row above")},
    ]


def _start_server() -> Any:
    """A private kube-testserver for one scenario (the caller destroys it)."""
    from kustodian.testing.testserver import TestServer, find_script

    script = find_script()
    if script is None:
        raise RuntimeError("kube-testserver not found (../shared/kube-testserver)")
    return TestServer(script).start()


def _create_pvs(client: Any, count: int) -> float:
    from kustodian.kube.resources import PERSISTENT_VOLUMES

    def create(start: int) -> None:
        for i in range(start, min(count, start + 250)):
            obj = pv(i)
            obj["metadata"] = {"name": obj["metadata"]["name"]}
            obj.pop("status")
            client.create(PERSISTENT_VOLUMES, obj)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(create, range(0, count, 250)))
    return time.perf_counter() - t0


def _time_restart(server: Any, client: Any, cache: Any, namespaces: Any) -> float:
    """Restart the API server; seconds from its first answer (polled every 10 ms from another
    thread, as the start script returns later) until ``cache`` is fresh again."""
    import threading

    marks: dict[str, float] = {}
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            now = time.monotonic()
            if "down" in marks and "back" not in marks:
                try:
                    client.get(namespaces, "default", timeout=1.0)
                    marks["back"] = time.monotonic()
                except Exception:
                    pass
            elif "down" not in marks and not cache.fresh:
                marks["down"] = now
            if "back" in marks and cache.fresh:
                marks["fresh"] = time.monotonic()
                return
            time.sleep(0.01)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    server.restart_apiserver()
    watcher.join(300)
    done.set()
    if "fresh" not in marks:
        raise RuntimeError("the cache did not catch up within 300 s")
    return max(0.0, marks["fresh"] - marks["back"])
