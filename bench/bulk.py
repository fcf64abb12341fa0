"""A large cluster in a real kube-testserver, filled in seconds: objects written into its etcd.

Creating objects through the API server runs at 400-800 a second on this 2-core machine
(``bench.cache._create_pvs``: 50k PVs in 62-125 s), so a million would take 20-40 minutes
before a benchmark begins.  kube-testserver stores the v1 JSON of each object in etcd under
``/registry/<resource>/[<namespace>/]<name>`` (its ``main.go``: "v1 JSON in etcd"; the key
format is k8s.io/apiserver's), as kube-apiserver does with ``--storage-media-type=json``.  So the
bulk of a cluster is written straight into that etcd, in transactions of 128 puts over etcd's
own JSON gateway from a few threads, while the API server runs: its watch of etcd delivers
every object to its watch cache, and from then on the API server serves them like any object
it wrote (lists, watches, resourceVersions are etcd's revisions).  What it skips is what a
create does before the write (admission, defaulting, the uid and creationTimestamp, which the
objects carry already), exactly as for objects restored from an etcd backup.

:func:`check_served` makes the shortcut honest: sample objects are read back through the API
server and must equal what was written (bar ``resourceVersion``), and the API server's own count
of each kind must be every object (the webhook under test then lists them all itself).
Everything small (namespaces, StorageClasses, the Rook CRDs and CephBlockPools) is created
through the API as usual.

etcd is started here rather than by the kube-testserver script only to raise its backend
quota (2 GiB by default: 500k PVs and 500k PVCs with their managed fields need ~2.6 GB); the
script sees it running and starts the API server against it.  Nothing is cached between runs:
each cluster is built in a fresh temporary directory and destroyed after use.
"""

from __future__ import annotations

import base64
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench.synthetic import POOL_NS, api_pv, api_pvc, namespace, pool_storage_class, storage_class

Obj = dict[str, Any]

TXN_OPS = 128  # etcd's default --max-txn-ops
QUOTA_BYTES = 16 << 30
PROVIDER_DEPENDENTS = 50_000  # the pool the DELETE is measured on (issue 46: 50k dependents on one provider)
SMALL_POOL = 300  # replicapool: the guard's default bench pool
POOL_SIZE = 50_000  # every other PV sits on a pool of this size (pool0, pool1, ...)


def pool_of(i: int) -> str:
    """The CephBlockPool PV ``i`` belongs to: 300 on replicapool, 50,000 on bigpool, then pools
    of 50,000 (``pool0``, ``pool1``, ...): one provider with 50k dependents at every size."""
    if i < SMALL_POOL:
        return "replicapool"
    if i < SMALL_POOL + PROVIDER_DEPENDENTS:
        return "bigpool"
    return f"pool{(i - SMALL_POOL - PROVIDER_DEPENDENTS) // POOL_SIZE}"


def pools(pvs: int) -> list[str]:
    names = ["replicapool", "bigpool", "emptypool"]
    if pvs > SMALL_POOL + PROVIDER_DEPENDENTS:
        names += [f"pool{k}" for k in range((pvs - SMALL_POOL - PROVIDER_DEPENDENTS - 1) // POOL_SIZE + 1)]
    return names


def stored(obj: Obj) -> Obj:
    """``obj`` as the API server keeps it in etcd: no resourceVersion (the revision is its RV),
    ``generation`` 1 as a create sets it."""
    meta = dict(obj["metadata"])
    meta.pop("resourceVersion", None)
    meta.setdefault("generation", 1)
    return {**obj, "metadata": meta}


def stored_pv(i: int) -> Obj:
    return stored(api_pv(i, pool=pool_of(i)))


def stored_pvc(i: int) -> Obj:
    obj = stored(api_pvc(i))
    obj["spec"]["storageClassName"] = pool_storage_class(pool_of(i))
    return obj


def pv_key(obj: Obj) -> str:
    return f"/registry/persistentvolumes/{obj['metadata']['name']}"


def pvc_key(obj: Obj) -> str:
    return f"/registry/persistentvolumeclaims/{obj['metadata']['namespace']}/{obj['metadata']['name']}"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass
class Etcd:
    url: str

    def put_all(self, pairs: Iterable[tuple[str, bytes]], *, threads: int = 4) -> int:
        """Write every (key, value) in transactions of ``TXN_OPS`` puts, ``threads`` at a time."""
        lock = threading.Lock()
        source = iter(pairs)
        written = [0]

        def batch() -> list[dict[str, Any]]:
            with lock:
                out = []
                for key, value in source:
                    out.append({"request_put": {"key": _b64(key.encode()), "value": _b64(value)}})
                    if len(out) == TXN_OPS:
                        break
                return out

        def worker() -> None:
            with httpx.Client(base_url=self.url, timeout=60) as http:
                while ops := batch():
                    resp = http.post("/v3/kv/txn", content=orjson.dumps({"success": ops}))
                    resp.raise_for_status()
                    with lock:
                        written[0] += len(ops)

        with ThreadPoolExecutor(threads) as pool:
            for f in [pool.submit(worker) for _ in range(threads)]:
                f.result()
        return written[0]

    def revision(self) -> int:
        resp = httpx.post(f"{self.url}/v3/kv/range", json={"key": _b64(b"/registry/none")}, timeout=10)
        resp.raise_for_status()
        return int(resp.json()["header"]["revision"])


def start_etcd(work: Path, port: int) -> None:
    """etcd as kube-testserver.sh starts it, plus a larger quota; the script then finds it alive
    (``run/etcd.pid``) and only starts the API server.  Started from a shell that exits at once,
    so the script's ``stop`` (kill, then wait while the pid lives) never waits on our zombie."""
    run = work / "run"
    run.mkdir(parents=True, exist_ok=True)
    etcd = work / "root" / "usr" / "bin" / "etcd"
    peer = port + 1
    cmd = (f"'{etcd}' --name kts --data-dir '{run}/etcd' --unsafe-no-fsync --quota-backend-bytes {QUOTA_BYTES} "
           f"--listen-client-urls http://127.0.0.1:{port} --advertise-client-urls http://127.0.0.1:{port} "
           f"--listen-peer-urls http://127.0.0.1:{peer} --initial-advertise-peer-urls http://127.0.0.1:{peer} "
           f"--initial-cluster kts=http://127.0.0.1:{peer} >'{run}/etcd.log' 2>&1 & echo $! >'{run}/etcd.pid'")
    subprocess.run(["bash", "-c", cmd], check=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"etcd did not start: {(run / 'etcd.log').read_text()[-2000:]}")


def _big_server_class() -> Any:
    from kustodian.testing.testserver import TestServer

    class BigServer(TestServer):
        """GOGC=25 for the API server: its heap stays near what it holds (the default lets it reach
        twice that: 790 MiB rather than 560 MiB with 50k PVs), so a million objects fit beside
        everything else on the machine; the API server's own speed is not what is measured."""

        def _env(self) -> dict[str, str]:
            return {**super()._env(), "GOGC": "25"}

    return BigServer


def big_server() -> Any:
    """A private kube-testserver whose etcd may hold a million objects (the caller destroys it)."""
    from kustodian.testing.testserver import SHARED_BUILD, ensure_built, find_script

    script = find_script()
    if script is None:
        raise RuntimeError("kube-testserver not found (../shared/kube-testserver)")
    ensure_built(script)
    server = _big_server_class()(script)
    for name in ("root", "bin"):
        (server.work / name).symlink_to(SHARED_BUILD / name)
    start_etcd(server.work, server.etcd_port)
    return server.start()


def pids(server: Any) -> dict[str, int]:
    run = server.work / "run"
    return {name: int((run / f"{name}.pid").read_text()) for name in ("server", "etcd")
            if (run / f"{name}.pid").exists()}


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS:"))


@dataclass
class Filled:
    pvs: int
    pvcs: int
    seconds: float  # the bulk writes and the API server serving them all
    rate: float  # objects a second
    apiserver_mib: float
    etcd_mib: float


def fill(server: Any, client: Any, pvs: int, pvcs: int, *, rook_crds: bool = True,
         progress: Callable[[str], None] | None = None) -> Filled:
    """The cluster of ``pvs`` PVs and ``pvcs`` PVCs: Rook's CRDs (upstream's ``crds.yaml``), one
    CephBlockPool and StorageClass per pool (``pools``), 500 namespaces through the API; the PVs
    and PVCs through etcd.  Returns once a list through the API server counts every object."""
    from kustodian.kube.resources import NAMESPACES, Resource

    say = progress or (lambda _msg: None)
    if rook_crds:
        install_rook_crds(client)
    names = pools(pvs)
    blockpools = Resource("ceph.rook.io", "v1", "cephblockpools", "CephBlockPool", True)
    classes = Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
    client.create(NAMESPACES, {"metadata": {"name": POOL_NS}})
    for name in names:
        client.create(blockpools, {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
                                   "metadata": {"name": name, "namespace": POOL_NS},
                                   "spec": {"replicated": {"size": 3}}})
        sc = storage_class(pool_storage_class(name), name)
        sc["metadata"] = {k: v for k, v in sc["metadata"].items() if k != "resourceVersion"}
        client.create(classes, sc)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: client.create(NAMESPACES, {"metadata": {"name": namespace(i)["metadata"]["name"]}}),
                      range(500)))
    etcd = Etcd(server.etcd_url)
    t0 = time.perf_counter()

    def objects() -> Iterator[tuple[str, bytes]]:
        for i in range(max(pvs, pvcs)):
            if i < pvs:
                obj = stored_pv(i)
                yield pv_key(obj), orjson.dumps(obj)
            if i < pvcs:
                obj = stored_pvc(i)
                yield pvc_key(obj), orjson.dumps(obj)

    written = [0]

    def load() -> None:
        written[0] = etcd.put_all(objects())
        say(f"bulk: {written[0]:,} objects written to etcd in {time.perf_counter() - t0:.1f}s")

    server.restart_apiserver(load)  # it lists etcd once as it starts, rather than each write
    say(f"bulk: API server up again after {time.perf_counter() - t0:.1f}s")
    check_served(client, pvs, pvcs)
    say(f"bulk: served after {time.perf_counter() - t0:.1f}s")
    seconds = time.perf_counter() - t0
    ids = pids(server)
    return Filled(pvs, pvcs, seconds, (pvs + pvcs) / seconds, rss_mib(ids["server"]), rss_mib(ids["etcd"]))


def install_rook_crds(client: Any) -> None:
    """Rook's own ``crds.yaml`` (``../shared/upstream/rook``), created and Established."""
    import yaml

    from kustodian.kube.resources import CRDS
    from kustodian.testing.upstream import upstream_dir

    docs = [d for d in yaml.safe_load_all((upstream_dir() / "rook" / "crds.yaml").read_text()) if d]
    for doc in docs:
        client.create(CRDS, doc)
    deadline = time.monotonic() + 600  # seconds on a quiet machine; minutes at a load of 50
    for doc in docs:
        while True:
            got = client.get(CRDS, doc["metadata"]["name"])
            conds = (got.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"CRD {doc['metadata']['name']} not Established within 600 s")
            time.sleep(0.1)


def served_count(client: Any, res: Any, namespace: str | None = None) -> int:
    """How many objects of ``res`` the API server holds, as it counts them: one list of one item
    and its ``remainingItemCount`` (GA since Kubernetes 1.29), so no ``continue`` token to outlast.
    A paged count of 500k objects runs longer than etcd's compaction window (5-10 min while the
    cluster writes; the 500k bench's fill check met ``410 Expired`` on 2026-11-28)."""
    page = client.request("GET", res.path(namespace), params={"limit": 1})
    meta = page.get("metadata") or {}
    if meta.get("continue") and "remainingItemCount" not in meta:
        raise RuntimeError(f"{res.key}: the API server paged a list without remainingItemCount; "
                           "it cannot be counted in one request")
    return len(page.get("items") or []) + int(meta.get("remainingItemCount") or 0)


def check_served(client: Any, pvs: int, pvcs: int, *, timeout: float = 600) -> None:
    """The API server serves what was written: a few objects read back equal to the written ones
    (bar resourceVersion), and its count of each kind (:func:`served_count`) is every object."""
    from kustodian.kube.resources import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES

    def same(got: Obj, want: Obj) -> bool:
        got = dict(got)
        got["metadata"] = {k: v for k, v in got["metadata"].items() if k != "resourceVersion"}
        return got == want

    deadline = time.monotonic() + timeout
    for res, count, make in ((PERSISTENT_VOLUMES, pvs, stored_pv), (PERSISTENT_VOLUME_CLAIMS, pvcs, stored_pvc)):
        if not count:
            continue
        for i in sorted({0, count // 2, count - 1}):
            want = make(i)
            meta = want["metadata"]
            while True:  # the API server's watch cache may still be taking the last writes in
                try:
                    got = client.get(res, meta["name"], meta.get("namespace"))
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            if not same(got, want):
                raise RuntimeError(f"{res.key} {meta['name']}: the API server serves {got!r}, not what was "
                                   f"written: {want!r}")
        while (n := served_count(client, res)) != count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{res.key}: the API server counts {n:,}, not {count:,}")
            time.sleep(1)
