"""Scenario: ``kustodian controllers`` with every component on, listed from a real API server.

A kube-testserver holds 50,000 PersistentVolumes, 50,000 PersistentVolumeClaims and 150,000
Pods (shaped as an API server lists them, written straight into its etcd: creating 250,000
objects through the API takes longer than the measurement), 200 Nodes, 500 Namespaces and
csi-baremetal's CRDs.  ``python -m kustodian controllers`` then runs as a process of its own
with reclaim propagation, node cleanup and capacity reservations all on, its API server a
plain-HTTP proxy in front of the test server (``kustodian.testing.apiproxy``) that writes
down every request.  Leader election is off (one replica: nothing to elect, and a Lease lost
on a loaded machine would end the measurement).  Once every cache has synced and the
controllers run (``/readyz``), the process's RSS (and its peak) is read from ``/proc`` and the
watch requests the API server saw are counted per resource: with one cache per kind per
process, every kind is watched once.

To compare two trees on the same API server and the same objects, name the other one in
``BENCH_BASELINE_TREE`` (a directory holding its ``kustodian`` package, a checkout of an
older commit say): its ``kustodian controllers`` is measured first, the current tree's after
it, and both sets of rows are reported.  Reports as it is, asserts nothing (``--runs`` is
ignored: one process is one measurement).
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.synthetic import api_pv, api_pvc

Row = dict[str, Any]
NAMESPACE_COUNT = 500
NODE_COUNT = 200
LOCAL_SC = "local-disks"


def api_pod(i: int, pvcs: int) -> dict[str, Any]:
    """A StatefulSet's pod as an API server lists it: owner, containers, status, one claim."""
    ns, claim = f"app-{i % NAMESPACE_COUNT}", f"data-{i % max(pvcs, 1)}"
    stamp = f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": f"web-{i}", "namespace": ns, "uid": f"{i:08x}-0005-4000-8000-{i:012x}",
            "creationTimestamp": stamp, "generateName": "web-",
            "labels": {"app": f"web-{i % 1000}", "apps.kubernetes.io/pod-index": str(i % 3),
                       "controller-revision-hash": f"web-{i % 1000}-6d9f7c5b8", "statefulset.kubernetes.io/pod-name":
                           f"web-{i}"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": f"web-{i % 1000}",
                                 "uid": f"{i % 1000:08x}-0006-4000-8000-000000000000", "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": {
            "nodeName": f"node-{i % NODE_COUNT}", "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "serviceAccountName": "default", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "containers": [{"name": "web", "image": "registry.k8s.io/nginx-slim:0.27", "imagePullPolicy": "IfNotPresent",
                            "ports": [{"containerPort": 80, "name": "web", "protocol": "TCP"}],
                            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
                            "volumeMounts": [{"mountPath": "/usr/share/nginx/html", "name": "www"}],
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File"}],
            "volumes": [{"name": "www", "persistentVolumeClaim": {"claimName": claim}},
                        {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}],
        },
        "status": {
            "phase": "Running", "qosClass": "Burstable", "hostIP": f"10.0.{i % NODE_COUNT // 256}.{i % 256}",
            "podIP": f"10.244.{i // 256 % 256}.{i % 256}", "startTime": stamp,
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": stamp}
                           for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "containerStatuses": [{"name": "web", "ready": True, "restartCount": 0, "started": True,
                                   "image": "registry.k8s.io/nginx-slim:0.27",
                                   "imageID": "registry.k8s.io/nginx-slim@sha256:" + "ab" * 32,
                                   "containerID": f"containerd://{i:064x}",
                                   "state": {"running": {"startedAt": stamp}}}],
        },
    }


def api_node(i: int) -> dict[str, Any]:
    name = f"node-{i}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"{i:08x}-0007-4000-8000-000000000000",
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
                         "annotations": {"nodes.csi-baremetal.dell.com/uuid": f"{i:08x}-0008-4000-8000-0000"}},
            "spec": {}, "status": {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}


def local_pv(i: int) -> dict[str, Any]:
    """Every fifth PV a local volume on a Node (what node cleanup opts in), the rest RBD volumes."""
    obj = api_pv(i, pool="bigpool")
    if i % 5 == 0:
        node = f"node-{i % NODE_COUNT}"
        obj["spec"].pop("csi")
        obj["spec"]["storageClassName"] = LOCAL_SC
        obj["spec"]["local"] = {"path": f"/mnt/disks/vol{i}"}
        obj["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}
    return obj


def _stored(obj: dict[str, Any]) -> bytes:
    meta = obj["metadata"]
    meta.pop("resourceVersion", None)  # the API server's is etcd's revision
    meta.pop("managedFields", None)  # half of what etcd would hold; a cache drops them on arrival
    return orjson.dumps(obj)


def _fill_etcd(etcd_url: str, items: Any, key: Any, batch: int = 100) -> None:
    """Write objects into the API server's etcd (``/registry/...``), ``batch`` per transaction."""

    def put(chunk: list[dict[str, Any]]) -> None:
        ops = [{"requestPut": {"key": base64.b64encode(key(o).encode()).decode(),
                               "value": base64.b64encode(_stored(o)).decode()}} for o in chunk]
        for attempt in range(8):  # a busy etcd answers 503 now and then: retry, never skip
            resp = httpx.post(f"{etcd_url}/v3/kv/txn", json={"success": ops}, timeout=120)
            if resp.status_code != 503 or attempt == 7:
                resp.raise_for_status()
                return
            time.sleep(0.5 * 2 ** attempt)

    # made as they are written: the objects are never all held at once
    with ThreadPoolExecutor(4) as pool:
        pending: list[Any] = []
        chunk: list[dict[str, Any]] = []
        for obj in items:
            chunk.append(obj)
            if len(chunk) == batch:
                pending.append(pool.submit(put, chunk))
                chunk = []
                if len(pending) >= 16:
                    pending.pop(0).result()
        if chunk:
            pending.append(pool.submit(put, chunk))
        for done in pending:
            done.result()


def cluster(server: Any, sizes: tuple[int, int, int], upstream: Path) -> float:
    """The objects, the CRDs and the StorageClass; how long it took (s)."""
    from kustodian.kube.client import KubeClient
    from kustodian.kube.config import load_config
    from kustodian.kube.resources import CRDS, NODES, STORAGE_CLASSES

    started = time.perf_counter()
    pvs, pvcs, pods = sizes
    etcd = server.etcd_url
    _fill_etcd(etcd, ({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": f"app-{i}", "uid": f"{i:08x}-0009-4000-8000-000000000000"},
                       "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
                      for i in range(NAMESPACE_COUNT)), lambda o: f"/registry/namespaces/{o['metadata']['name']}")
    _fill_etcd(etcd, (local_pv(i) for i in range(pvs)),
               lambda o: f"/registry/persistentvolumes/{o['metadata']['name']}")
    _fill_etcd(etcd, (api_pvc(i) for i in range(pvcs)),
               lambda o: f"/registry/persistentvolumeclaims/{o['metadata']['namespace']}/{o['metadata']['name']}")
    _fill_etcd(etcd, (api_pod(i, pvcs) for i in range(pods)),
               lambda o: f"/registry/pods/{o['metadata']['namespace']}/{o['metadata']['name']}")
    client = KubeClient(load_config(str(server.kubeconfig)))
    try:
        client.create(STORAGE_CLASSES, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                        "metadata": {"name": LOCAL_SC},
                                        "provisioner": "kubernetes.io/no-provisioner"})
        for i in range(NODE_COUNT):
            client.create(NODES, api_node(i))
        import yaml

        names = []
        for path in sorted((upstream / "csi-baremetal" / "crds").glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    names.append(client.create(CRDS, doc)["metadata"]["name"])
        deadline = time.monotonic() + 60
        while not all(any(c.get("type") == "Established" and c.get("status") == "True"
                          for c in (client.get(CRDS, n).get("status") or {}).get("conditions") or [])
                      for n in names):
            if time.monotonic() > deadline:
                raise RuntimeError("csi-baremetal's CRDs did not become Established")
            time.sleep(0.2)
    finally:
        client.close()
    return time.perf_counter() - started


def _status(pid: int) -> dict[str, float]:
    with open(f"/proc/{pid}/status") as fh:
        return {k: int(v.split()[0]) / 1024 for k, _, v in (line.partition(":") for line in fh)
                if k in ("VmRSS", "VmHWM")}


def measure(server: Any, timeout: float, tree: str | None = None) -> dict[str, Any]:
    """Run the process (``tree``'s, else this one's) through a counting proxy until it is ready; its
    RSS and the watches seen."""
    from kustodian.testing.apiproxy import ApiProxy
    from kustodian.testing.testserver import free_port

    work = Path(tempfile.mkdtemp(prefix="bench-controllers-"))
    with ApiProxy("127.0.0.1", server.port) as proxy:
        kubeconfig = proxy.kubeconfig(server.kubeconfig, work / "kubeconfig")
        port = free_port()
        env = {**os.environ, "KUSTODIAN_LOG__FORMAT": "text", "KUSTODIAN_KUBE__NAMESPACE": "default",
               "KUSTODIAN_RECLAIM__ENABLED": "true", "KUSTODIAN_NODE_CLEANUP__ENABLED": "true",
               "KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES": f'["{LOCAL_SC}"]', "KUSTODIAN_CAPACITY__ENABLED": "true",
               "KUSTODIAN_LEADER_ELECTION__ENABLED": "false", "KUSTODIAN_METRICS__LISTEN_ADDRESS":
                   f"127.0.0.1:{port}", "KUSTODIAN_CONTROLLERS__SYNC_TIMEOUT": f"{int(timeout)}s"}
        if tree:
            env["PYTHONPATH"] = tree
        log = (work / "controllers.log").open("w")
        started = time.perf_counter()
        # ``python -m`` puts its working directory first on the path: the tree's own, for a baseline
        proc = subprocess.Popen([sys.executable, "-m", "kustodian", "controllers", "--kubeconfig", str(kubeconfig)],
                                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tree)
        try:
            deadline = started + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"kustodian controllers exited {proc.returncode}: "
                                       f"{(work / 'controllers.log').read_text()[-3000:]}")
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200 and \
                            "running" in (work / "controllers.log").read_text():
                        break
                except httpx.HTTPError:
                    pass
                if time.perf_counter() > deadline:
                    raise RuntimeError("kustodian controllers did not get ready in time")
                time.sleep(0.5)
            took = time.perf_counter() - started
            status = _status(proc.pid)
            metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
            watches = proxy.watches()
        finally:
            proc.terminate()
            proc.wait(30)
            log.close()
    objects: dict[str, int] = {}
    for line in metrics.splitlines():
        if line.startswith("kustodian_cache_objects{"):
            kind = line.split('kind="', 1)[1].split('"', 1)[0]
            objects[kind] = objects.get(kind, 0) + int(float(line.rsplit(" ", 1)[1]))
    return {"rss_mib": status["VmRSS"], "peak_mib": status["VmHWM"], "seconds": took,
            "watches": dict(watches), "objects": objects}


def run(smoke: bool, runs: int) -> list[Row]:
    from kustodian.testing.testserver import TestServer, find_script
    from kustodian.testing.upstream import upstream_dir

    sizes = (1_000, 1_000, 3_000) if smoke else (50_000, 50_000, 150_000)
    script = find_script()
    if script is None:
        raise RuntimeError("kube-testserver not found (../shared/kube-testserver)")
    baseline = os.environ.get("BENCH_BASELINE_TREE") or None
    server = TestServer(script).start()
    try:
        filled = cluster(server, sizes, upstream_dir())
        timeout = 300 if smoke else 1800
        measured = ([("baseline", measure(server, timeout, baseline))] if baseline else [])
        measured.append(("", measure(server, timeout)))
    finally:
        server.destroy()
    label = f"{sizes[0] // 1000}k PVs + {sizes[1] // 1000}k PVCs + {sizes[2] // 1000}k Pods"
    rows: list[Row] = []
    for which, info in measured:
        scenario = "controllers: every component" + (f" ({which}: {baseline})" if which else "")
        twice = sorted(path for path, n in info["watches"].items() if n > 1)
        cached = ", ".join(f"{n:,} {k}" for k, n in sorted(info["objects"].items()) if n)
        rows += [
            {"scenario": scenario, "metric": f"RSS once synced, {label} (MiB)",
             "value": round(info["rss_mib"]), "target": None,
             "note": f"kustodian controllers (reclaim, node cleanup, capacity) listing from kube-testserver; "
                     f"cached: {cached}; objects written in {filled:.0f}s"},
            {"scenario": scenario, "metric": f"peak RSS while listing, {label} (MiB)",
             "value": round(info["peak_mib"]), "target": None,
             "note": f"VmHWM; start to ready in {info['seconds']:.0f}s"},
            {"scenario": scenario, "metric": "watch requests the API server saw",
             "value": sum(info["watches"].values()), "target": None,
             "note": f"{len(info['watches'])} resources; watched more than once: {', '.join(twice) or 'none'}"},
        ]
    return rows
