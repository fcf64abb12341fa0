"""Scenario 2: the same deletion guard written with kopf, the framework a Python user would pick.

Both servers make the *same decision* (``policy.deletion.decide_delete`` over the same
50k/50k/150k objects held in memory), get the same requests over TLS with
keep-alive from the same load generator, one after the other in one run, each
pinned to CPU 0 with the load on CPU 1.  What differs is the framework around the
decision: Kustodian's FastAPI/uvicorn path versus kopf's admission server (aiohttp,
``@kopf.on.validate``), which needs a running operator and therefore a cluster:
kopf runs standalone against kube-testserver with the Rook CRDs installed, and
``settings.admission.managed`` is off (no webhook configuration is written).  kopf's
``WebhookServer`` serves our certificate (``certfile``/``pkeyfile``); the handler id
``deletion-guard`` is its URL path.  kopf's per-denial ERROR log line is silenced (it
favours kopf).  The load is ``bench.admission.measure``: a separate process pinned to
CPU 1, open loop at 300 req/s and closed loop with 8 connections, medians of the runs.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import time
from typing import Any

from bench import admission
from bench.synthetic import cluster_objects


def _kopf_server(tls_dir: str, port: int, sizes: tuple[int, int, int], kubeconfig: str, ready: Any) -> None:
    pinned = admission._pin(0)
    os.environ["KUBECONFIG"] = kubeconfig
    import logging

    import kopf

    from kustodian.policy.deletion import decide_delete, rook_rules
    from kustodian.policy.store import ListView

    logging.basicConfig(level=logging.WARNING)
    # kopf logs every AdmissionError at ERROR (one stderr line per denied request); Kustodian
    # logs no line per request, so kopf's per-request log is silenced to compare frameworks.
    logging.getLogger("kopf.objects").setLevel(logging.CRITICAL)
    rules = rook_rules()
    view = ListView(cluster_objects(*sizes), rules.indexers())

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.admission.server = kopf.WebhookServer(addr="127.0.0.1", port=port, certfile=f"{tls_dir}/tls.crt",
                                                       pkeyfile=f"{tls_dir}/tls.key")
        settings.admission.managed = None
        settings.posting.enabled = False

    @kopf.on.validate("ceph.rook.io", "v1", "cephblockpools", id="deletion-guard", operations=["DELETE"])
    def guard(**kwargs: Any) -> None:
        decision = decide_delete("CephBlockPool.ceph.rook.io", kwargs["old"], view, rules)
        if not decision.allowed:
            raise kopf.AdmissionError(decision.message, code=403)

    def report_ready() -> None:
        for _ in range(600):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    ready.send({"pinned": pinned, "rss_mib": 0.0})
                    return
            except OSError:
                time.sleep(0.1)

    import threading

    threading.Thread(target=report_ready, daemon=True).start()
    kopf.run(standalone=True, clusterwide=True)


def run(smoke: bool, runs: int) -> list[dict[str, Any]]:
    from kustodian.kube.client import KubeClient
    from kustodian.kube.config import load_config
    from kustodian.kube.resources import CRDS
    from kustodian.testing.crds import rook_crds
    from kustodian.testing.testserver import TestServer, find_script

    sizes = (2_000, 2_000, 6_000) if smoke else (50_000, 50_000, 150_000)
    seconds = 1.5 if smoke else 10.0
    script = find_script()
    if script is None:
        raise RuntimeError("kube-testserver not found (../shared/kube-testserver)")
    tls = admission.make_tls()
    server = TestServer(script).start()
    spawn = mp.get_context("spawn")
    results: dict[str, admission.Measured] = {}
    try:
        client = KubeClient(load_config(str(server.kubeconfig)))
        for crd in rook_crds():
            client.create(CRDS, crd)
        time.sleep(2)  # Established
        client.close()
        proc, port, _ = admission.start_server(tls, sizes)
        try:
            results["kustodian"] = admission.measure(tls, port, admission.delete_review(), runs, seconds)
            results["kustodian-empty"] = admission.measure(tls, port, admission.delete_review("emptypool"), runs,
                                                           seconds)
        finally:
            proc.kill()
            proc.join()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        parent, child = spawn.Pipe()
        proc = spawn.Process(target=_kopf_server, args=(tls, port, sizes, str(server.kubeconfig), child),
                             daemon=True)
        proc.start()
        try:
            if not parent.poll(300):
                raise RuntimeError("kopf server did not start")
            parent.recv()
            time.sleep(1.0)
            payload = admission.delete_review().replace(b"POST /validate ", b"POST /deletion-guard ")
            results["kopf"] = admission.measure(tls, port, payload, runs, seconds)
            empty = admission.delete_review("emptypool").replace(b"POST /validate ", b"POST /deletion-guard ")
            results["kopf-empty"] = admission.measure(tls, port, empty, runs, seconds)
        finally:
            proc.kill()
            proc.join()
    finally:
        server.destroy()
    k, f = results["kustodian"], results["kopf"]
    ke, fe = results["kustodian-empty"], results["kopf-empty"]
    admission.LATENCIES["kopf deletion guard"] = f.latencies_ms
    admission.LATENCIES.setdefault("Kustodian deletion guard", k.latencies_ms)
    label = f"same decision, {sizes[0] // 1000}k/{sizes[1] // 1000}k/{sizes[2] // 1000}k objects, same run"
    note = admission.pin_note(True, f.load_pinned)
    return [
        # the median too: kopf's can sit below Kustodian's on the latency plot while its tail is longer
        {"scenario": "admission vs kopf", "metric": "kopf deletion guard: p50 at 300 req/s (ms)",
         "value": round(f.p50_ms, 2), "target": None,
         "note": f"Kustodian p50 {k.p50_ms:.2f} ms in the same run; {note}"},
        {"scenario": "admission vs kopf", "metric": "kopf deletion guard: p99 at 300 req/s (ms)",
         "value": round(f.p99_ms, 2), "target": None, "note": f"kopf {_version()}; {note}"},
        {"scenario": "admission vs kopf", "metric": "kopf deletion guard: max throughput (req/s)",
         "value": round(f.throughput), "target": None, "note": label},
        {"scenario": "admission vs kopf", "metric": "throughput ratio Kustodian / kopf (x)",
         "value": round(k.throughput / f.throughput, 1), "target": (">=", 5.0),
         "note": f"Kustodian {round(k.throughput)} req/s"},
        {"scenario": "admission vs kopf", "metric": "p99 ratio Kustodian / kopf",
         "value": round(k.p99_ms / f.p99_ms, 2), "target": ("<=", 0.2), "note": f"Kustodian p99 {k.p99_ms:.2f} ms"},
        # the same comparison where the decision is cheap (no dependents): framework cost alone
        {"scenario": "admission vs kopf, pool without dependents", "metric": "throughput ratio Kustodian / kopf (x)",
         "value": round(ke.throughput / fe.throughput, 1), "target": (">=", 5.0),
         "note": f"Kustodian {round(ke.throughput)} req/s, kopf {round(fe.throughput)} req/s"},
        {"scenario": "admission vs kopf, pool without dependents", "metric": "p99 ratio Kustodian / kopf",
         "value": round(ke.p99_ms / fe.p99_ms, 2), "target": ("<=", 0.2),
         "note": f"Kustodian p99 {ke.p99_ms:.2f} ms, kopf p99 {fe.p99_ms:.2f} ms"},
    ]


def _version() -> str:
    from importlib.metadata import version

    return version("kopf")
