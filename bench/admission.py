"""Scenario 1: admission latency and throughput over real TLS with keep-alive.

The server runs in its own process (pinned to CPU 0 when the machine has two or
more) exactly as ``kustodian webhook`` assembles it: the deletion guard and the
reclaim-space mutator on watch caches, which are loaded through
``WatchCache.replace`` with synthetic objects (no API server: the admission path
never calls one).  The load generator runs in this process (pinned to CPU 1): raw
keep-alive TLS sockets, pre-encoded requests.

* latency: open loop at a fixed rate; each latency is measured from the request's
  *scheduled* send time, so a stall is not hidden (no coordinated omission);
* throughput: closed loop, several connections, for a fixed time.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import ssl
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.synthetic import POOL_NS, SC_NAME, cluster_objects

_CLUSTER_SCOPED = {"PersistentVolume", "Namespace", "StorageClass", "Node", "ObjectBucket", "Bucket",
                   "BucketClass"}


def _pin(cpu: int) -> bool:
    try:
        if len(os.sched_getaffinity(0)) >= 2:
            os.sched_setaffinity(0, {cpu})
            return True
    except (AttributeError, OSError):
        pass
    return False


def _serve(tls_dir: str, port: int, sizes: tuple[int, int, int], ready: Any) -> None:
    pinned = _pin(0)
    import logging

    logging.basicConfig(level=logging.WARNING)
    from kube.cache import WatchCache
    from kube.resources import Resource
    from kube.view import CacheView
    from policy.deletion import rook_rules
    from webhook.app import Readiness, create_app
    from webhook.features.deletion_guard import DeletionGuard, needed_kinds
    from webhook.features.reclaim import ReclaimPolicyWebhook
    from webhook.registry import Registry
    from webhook.server import TLSFiles, build_server

    objects = cluster_objects(*sizes)
    rules = rook_rules()
    needs = needed_kinds(rules)
    reclaim = ReclaimPolicyWebhook("kustodian", "kustodian-reclaim-config")
    for kind, idx in reclaim.needed_kinds().items():
        needs.setdefault(kind, {}).update(idx)
    needs.setdefault("Pod", {})
    caches = {}
    for key, named in needs.items():
        kind, _, group = key.partition(".")
        res = Resource(group, "v1", kind.lower() + "s", kind, kind not in _CLUSTER_SCOPED)
        cache = WatchCache(None, res, indexers=named)  # loaded with replace(), never listed
        cache.replace(objects.get(key, []), "1")
        caches[key] = cache
    view = CacheView(caches)
    registry = Registry()
    DeletionGuard(rules, view, None).register(registry)
    reclaim.register(registry, view)
    server, _ = build_server(create_app(registry, readiness=Readiness()), host="127.0.0.1", port=port,
                             tls=TLSFiles(f"{tls_dir}/tls.crt", f"{tls_dir}/tls.key"))
    def report_ready() -> None:
        time.sleep(0.5)
        ready.send({"pinned": pinned, "rss_mib": _rss()})

    threading.Thread(target=report_ready, daemon=True).start()
    server.run()


def _rss() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _request(path: str, review: dict[str, Any]) -> bytes:
    body = json.dumps(review).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: kustodian\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def delete_review() -> bytes:
    pool = {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
            "metadata": {"name": "replicapool", "namespace": POOL_NS}, "spec": {}}
    return _request("/validate", {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "bench", "kind": {"group": "ceph.rook.io", "version": "v1", "kind": "CephBlockPool"},
        "resource": {"group": "ceph.rook.io", "version": "v1", "resource": "cephblockpools"},
        "name": "replicapool", "namespace": POOL_NS, "operation": "DELETE", "userInfo": {"username": "bench"},
        "object": None, "oldObject": pool, "dryRun": True}})


def pvc_review() -> bytes:
    obj = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "new", "namespace": "app-7"},
           "spec": {"storageClassName": SC_NAME, "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}
    return _request("/mutate", {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "bench", "kind": {"group": "", "version": "v1", "kind": "PersistentVolumeClaim"},
        "resource": {"group": "", "version": "v1", "resource": "persistentvolumeclaims"},
        "name": "new", "namespace": "app-7", "operation": "CREATE", "userInfo": {"username": "bench"},
        "object": obj, "oldObject": None, "dryRun": False}})


class Conn:
    def __init__(self, port: int, ctx: ssl.SSLContext) -> None:
        raw = socket.create_connection(("127.0.0.1", port))
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = ctx.wrap_socket(raw, server_hostname="kustodian.kustodian.svc")
        self.buf = b""

    def roundtrip(self, payload: bytes) -> bytes:
        self.sock.sendall(payload)
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        while len(rest) < length:
            rest += self.sock.recv(65536)
        self.buf = rest[length:]
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(head.decode(errors="replace"))
        return rest[:length]

    def close(self) -> None:
        self.sock.close()


def open_loop(port: int, ctx: ssl.SSLContext, payload: bytes, rate: float, seconds: float) -> list[float]:
    conn = Conn(port, ctx)
    latencies = []
    interval = 1.0 / rate
    start = time.perf_counter()
    n = int(rate * seconds)
    for i in range(n):
        scheduled = start + i * interval
        now = time.perf_counter()
        if now < scheduled:
            time.sleep(scheduled - now)
        conn.roundtrip(payload)
        latencies.append(time.perf_counter() - scheduled)
    conn.close()
    return latencies


def closed_loop(port: int, ctx: ssl.SSLContext, payload: bytes, conns: int, seconds: float) -> float:
    counts = [0] * conns
    stop = time.perf_counter() + seconds

    def worker(i: int) -> None:
        c = Conn(port, ctx)
        while time.perf_counter() < stop:
            c.roundtrip(payload)
            counts[i] += 1
        c.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(conns)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


def run(smoke: bool, runs: int) -> list[dict[str, Any]]:
    from certs import issue_ca, issue_serving, write_bundle

    sizes = (2_000, 2_000, 6_000) if smoke else (50_000, 50_000, 150_000)
    seconds = 2.0 if smoke else 10.0
    tls = tempfile.mkdtemp(prefix="bench-tls-")
    now = datetime.now(UTC)
    ca = issue_ca(now=now)
    write_bundle(Path(tls), ca, issue_serving(ca, service="kustodian", namespace="kustodian", now=now))
    ctx = ssl.create_default_context(cafile=f"{tls}/ca.crt")
    spawn = mp.get_context("spawn")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    parent, child = spawn.Pipe()
    proc = spawn.Process(target=_serve, args=(tls, port, sizes, child), daemon=True)
    proc.start()
    if not parent.poll(300):
        proc.kill()
        raise RuntimeError("bench server did not start")
    info = parent.recv()
    pinned = info["pinned"] and _pin(1)
    note = "server CPU0, load CPU1" if pinned else "NOT pinned (fewer than 2 CPUs): shared cores"
    label = f"{sizes[0] // 1000}k PVs/{sizes[1] // 1000}k PVCs/{sizes[2] // 1000}k Pods cached"
    rows: list[dict[str, Any]] = []
    try:
        for name, payload in (("deletion guard (DELETE CephBlockPool, 300 PV dependents)", delete_review()),
                              ("PVC mutation (CREATE, schedule injected)", pvc_review())):
            Conn(port, ctx).roundtrip(payload)  # warm
            p50s, p99s, tputs = [], [], []
            for _ in range(runs):
                lat = open_loop(port, ctx, payload, 300.0, seconds)
                p50s.append(pct(lat, 50) * 1000)
                p99s.append(pct(lat, 99) * 1000)
                tputs.append(closed_loop(port, ctx, payload, 8, seconds))
            rows += [
                {"scenario": f"admission: {name}", "metric": "p50 at 300 req/s (ms)",
                 "value": round(statistics.median(p50s), 2), "target": None, "note": f"{label}; {note}"},
                {"scenario": f"admission: {name}", "metric": "p99 at 300 req/s (ms)",
                 "value": round(statistics.median(p99s), 2), "target": ("<=", 15.0), "note": note},
                {"scenario": f"admission: {name}", "metric": "max throughput, 1 server core (req/s)",
                 "value": round(statistics.median(tputs)), "target": (">=", 1500.0), "note": "8 keep-alive conns"},
            ]
        rows.append({"scenario": "admission: server process", "metric": "RSS with caches loaded (MiB)",
                     "value": round(info["rss_mib"]), "target": ("<=", 512.0), "note": label})
    finally:
        proc.kill()
        proc.join()
    return rows
