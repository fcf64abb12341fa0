"""Scenario: the deletion backstop (issue 44) on a real API server.

``kustodian webhook`` runs in-process on its Manager, as the chart's ServiceAccount, against a
kube-testserver holding the chart's own rendered policy and bindings, and keeps the record.

* **Lag**: ``changes`` times, a pool that had no dependent gets its first PersistentVolume; the
  time from that create until the API server refuses a dry-run DELETE of the pool *by the policy*
  (no webhook configuration is installed: nothing else could refuse it).  Target p99 <= 2 s.
* **Size**: ``providers`` pools, each with a volume, and the record the webhook writes for them:
  its bytes (keys and values, as a ConfigMap's 1 MiB counts them; target < 1 MiB at 10,000) and
  the writer's pass over every provider.
* **Answer**: dry-run DELETEs of a pool the record holds (refused) and of one it does not
  (allowed), answered by the policy alone, then by the webhook alone (the chart's webhook
  configuration pointed at the same process, the policy unbound), then by neither: the API
  server's latency in each case, p50/p99 over ``requests``, and the API server's own evaluation
  time of the policy (its ``apiserver_validating_admission_policy_check_duration_seconds``).
  Target: the policy's answer p99 <= 5 ms.
* **Handover**: the writer's replica stops (releasing its Lease); the time until another replica
  writes a change.  A replica that dies without releasing is replaced after the Lease duration.
"""

from __future__ import annotations

import base64
import re
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

NS = "rook-ceph"
HOME = "kustodian"
RECORD = "kustodian-backstop"
ACCOUNT = f"system:serviceaccount:{HOME}:kustodian"


def _pool(name: str) -> dict[str, Any]:
    return {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool", "metadata": {"name": name, "namespace": NS},
            "spec": {"failureDomain": "host", "replicated": {"size": 3}}}


def _pv(name: str, pool: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "rook-ceph-block",
                     "csi": {"driver": "rook-ceph.rbd.csi.ceph.com", "volumeHandle": f"0001-{name}",
                             "volumeAttributes": {"clusterID": NS, "pool": pool}}}}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class Cluster:
    """A kube-testserver with the Rook CRDs, the chart's backstop policy and a webhook process."""

    def __init__(self) -> None:
        from kustodian.kube.client import KubeClient
        from kustodian.kube.config import load_config
        from kustodian.testing.crds import rook_crds
        from kustodian.testing.testserver import TestServer, find_script
        from kustodian.testing.tools import ensure_tools

        script = find_script()
        if script is None:
            raise RuntimeError("kube-testserver not found (../shared/kube-testserver)")
        self.server = TestServer(script).start()
        self.kubectl = str(ensure_tools() / "kubectl")
        self.client = KubeClient(load_config(str(self.server.kubeconfig)))
        self.apply(*rook_crds())
        self.run("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        for ns in (HOME, NS):
            self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        self.stops: list[threading.Event] = []

    def run(self, *args: str, stdin: str | None = None) -> str:
        import subprocess

        proc = subprocess.run([self.kubectl, "--kubeconfig", str(self.server.kubeconfig), *args], input=stdin,
                              capture_output=True, text=True, check=False, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc.stdout

    def apply(self, *docs: dict[str, Any]) -> None:
        import yaml

        self.run("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))

    def create_many(self, docs: list[tuple[Any, dict[str, Any]]]) -> None:
        def create(chunk: list[tuple[Any, dict[str, Any]]]) -> None:
            for res, doc in chunk:
                self.client.create(res, doc)

        chunks = [docs[i:i + 250] for i in range(0, len(docs), 250)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(create, chunks))

    def webhook(self, identity: str, tls_dir: Path, port: int) -> Any:
        """``kustodian webhook`` as the chart runs it (its Manager, in a thread), as ``identity``."""
        from kustodian.kube.client import KubeClient
        from kustodian.kube.config import load_config
        from kustodian.settings import WebhookSettings
        from kustodian.webhook.main import build_manager

        client = KubeClient(load_config(str(self.server.kubeconfig_for(ACCOUNT))))
        settings = WebhookSettings(
            kube={"namespace": HOME}, webhook={"host": "127.0.0.1", "port": port},
            tls={"cert_file": str(tls_dir / "tls.crt"), "key_file": str(tls_dir / "tls.key")},
            deletion_guard={"backstop_record": RECORD}, reclaim={"enabled": False})
        manager, hook = build_manager(settings, client)
        assert hook.backstop is not None
        if hook.backstop.lease is not None:
            hook.backstop.lease = hook.backstop.lease._replace(identity=identity)
        stop = threading.Event()
        threading.Thread(target=manager.run, args=(stop,), daemon=True, name=f"webhook-{identity}").start()
        self.stops.append(stop)
        return hook, stop

    def record_entries(self) -> dict[str, str]:
        from kustodian.kube.errors import NotFound
        from kustodian.kube.resources import CONFIG_MAPS
        from kustodian.policy.deletion.backstop import read_record

        found: list[dict[str, Any] | None] = []
        for i in range(8):
            try:
                found.append(self.client.get(CONFIG_MAPS, f"{RECORD}-{i}", HOME))
            except NotFound:
                found.append(None)
        return read_record(found).entries

    def refused(self, pool: str) -> bool | None:
        """Is a dry-run DELETE of ``pool`` refused (by whatever admission there is)?"""
        from kustodian.kube.errors import Forbidden, Invalid
        from kustodian.kube.resources import Resource

        pools = Resource("ceph.rook.io", "v1", "cephblockpools", "CephBlockPool", True)
        try:
            self.client.delete(pools, pool, NS, dry_run=True)
            return False
        except (Forbidden, Invalid):
            return True

    def close(self) -> None:
        for stop in self.stops:
            stop.set()
        self.client.close()
        self.server.destroy()


def _wait(cond: Any, timeout: float, what: str) -> float:
    t0 = time.perf_counter()
    while not cond():
        if time.perf_counter() - t0 > timeout:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.005)
    return time.perf_counter() - t0


def _tls() -> Path:
    from kustodian.certs import issue_ca, issue_serving, write_bundle

    out = Path(tempfile.mkdtemp(prefix="bench-backstop-tls-"))
    now = datetime.now(UTC)
    ca = issue_ca(now=now)
    write_bundle(out, ca, issue_serving(ca, service="kustodian", namespace=HOME, dns=["localhost"],
                                        ips=["127.0.0.1"], now=now))
    return out


Histogram = dict[str, float]  # bucket bound ("0.005", ..., "+Inf", "sum") -> cumulative count or seconds


def _plugin(cluster: Cluster, plugin: str) -> Histogram:
    """The API server's own time in one admission plugin for DELETEs so far
    (``apiserver_admission_controller_admission_duration_seconds{name=plugin, operation=DELETE}``,
    refused and allowed together): cumulative bucket counts and the sum of seconds."""
    return _histogram(cluster, "apiserver_admission_controller_admission_duration_seconds",
                      f'name="{plugin}"', 'operation="DELETE"')


def _checks(cluster: Cluster) -> Histogram:
    """The API server's time evaluating the backstop policy's validations, one observation per
    binding evaluated (``apiserver_validating_admission_policy_check_duration_seconds``, buckets
    0.0005, 1, 10, 100 ms): the policy's own CEL, without the plugin's dispatch or the machine's
    scheduling of the request around it."""
    return _histogram(cluster, "apiserver_validating_admission_policy_check_duration_seconds",
                      'policy="kustodian-deletion-backstop"')


def _histogram(cluster: Cluster, metric: str, *labels: str) -> Histogram:
    out: Histogram = {}
    pattern = re.compile(rf'^{metric}_(bucket|sum)\{{(.*)\}} (\S+)$')
    for line in cluster.run("get", "--raw", "/metrics").splitlines():
        found = pattern.match(line)
        if not found or not all(label in found.group(2) for label in labels):
            continue
        le = re.search(r'le="([^"]+)"', found.group(2))
        key = le.group(1) if found.group(1) == "bucket" and le else "sum"
        out[key] = out.get(key, 0.0) + float(found.group(3))
    return out


def _window(before: Histogram, after: Histogram) -> tuple[float, float, float]:
    """Between two readings: (p99 upper bound in ms from the buckets, mean ms, how many)."""
    delta = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    count = delta.get("+Inf", 0.0)
    if not count:
        return float("nan"), float("nan"), 0.0
    bounds = sorted((float(k), v) for k, v in delta.items() if k not in ("+Inf", "sum"))
    p99 = next((b * 1000 for b, v in bounds if v >= 0.99 * count), float("inf"))
    return p99, delta.get("sum", 0.0) / count * 1000, count


def _cpu(cluster: Cluster) -> float:
    """CPU seconds the API server process has used so far (user + system, /proc/<pid>/stat): what
    a request costs it whatever the machine's load, unlike its latency."""
    import os

    pid = int((cluster.server.work / "run" / "server.pid").read_text())
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _latencies(cluster: Cluster, pool: str, requests: int, want_refused: bool) -> list[float]:
    out: list[float] = []
    for _ in range(requests):
        t0 = time.perf_counter()
        got = cluster.refused(pool)
        out.append((time.perf_counter() - t0) * 1000)
        if got is not want_refused:
            raise RuntimeError(f"DELETE of {pool}: refused={got}, expected {want_refused}")
    return out


def offline(providers: int, runs: int) -> list[dict[str, Any]]:
    """The record for ``providers`` pools with a volume each, gathered from caches loaded as the
    webhook's are (no API server): its size and one pass of the writer's gather, CPU only."""
    from kustodian.kube.cache import WatchCache
    from kustodian.kube.resources import PERSISTENT_VOLUMES, Resource
    from kustodian.kube.view import CacheView
    from kustodian.policy.deletion import rook_rules
    from kustodian.policy.deletion.backstop import data_bytes, plan_record
    from kustodian.webhook.features.backstop import RecordGatherer
    from kustodian.webhook.features.deletion_guard import DeletionGuard, needed_kinds

    rules = rook_rules()
    caches: dict[str, WatchCache] = {}
    for kind, indexers in needed_kinds(rules).items():
        name, _, group = kind.partition(".")
        res = PERSISTENT_VOLUMES if kind == "PersistentVolume" else Resource(
            group, "v1", name.lower() + ("es" if name.lower().endswith("s") else "s"), name,
            kind not in ("Namespace", "StorageClass.storage.k8s.io"))
        caches[kind] = WatchCache(None, res, indexers=indexers)
        items: list[dict[str, Any]] = []
        if kind == "CephBlockPool.ceph.rook.io":
            items = [{**_pool(f"replicapool-{i:05d}"), "metadata": {"name": f"replicapool-{i:05d}", "namespace": NS,
                                                                     "uid": f"u{i}", "resourceVersion": "1"}}
                     for i in range(providers)]
        elif kind == "PersistentVolume":
            items = [{**_pv(f"pvc-{i:05d}", f"replicapool-{i:05d}"),
                      "metadata": {"name": f"pvc-{i:05d}", "uid": f"v{i}", "resourceVersion": "1"}}
                     for i in range(providers)]
        caches[kind].replace(items, "1")
    guard = DeletionGuard(rules, CacheView(caches), None)
    gatherer = RecordGatherer(guard)
    times = []
    for _ in range(max(2, runs)):
        t0 = time.perf_counter()
        knowledge = gatherer.gather(datetime.now(UTC))
        times.append(time.perf_counter() - t0)
    size = data_bytes(knowledge.entries)
    plan = plan_record(knowledge.entries)
    note = (f"{providers} CephBlockPools named replicapool-NNNNN in {NS}, a PV each, loaded as the webhook's caches "
            "(no API server); keys and values, 8 shards")
    return [
        {"scenario": "backstop: size", "metric": f"record at {providers} providers (MiB)",
         "value": round(size / 2**20, 3), "target": ("<=", 1.0), "note": note},
        {"scenario": "backstop: size", "metric": "largest shard (KiB)",
         "value": round(max(data_bytes(d or {}) for d in plan.shards) / 1024, 1), "target": None,
         "note": "a ConfigMap holds 1 MiB"},
        {"scenario": "backstop: size", "metric": f"gather over {providers} providers, first / then (s)",
         "value": f"{times[0]:.2f} / {statistics.median(times[1:]):.3f}", "target": None,
         "note": "first: every decision computed; then: from the guard's memo, as each pass after a change"},
    ]


def run(smoke: bool, runs: int, *, changes: int | None = None, providers: int | None = None,
        requests: int | None = None) -> list[dict[str, Any]]:
    """The scenario; ``changes``, ``providers`` and ``requests`` override the sizes (for a partial
    re-run on a busy machine: ``python -c "from bench import backstop; ..."``)."""
    import orjson

    from kustodian.kube.resources import CONFIG_MAPS, PERSISTENT_VOLUMES, Resource
    from kustodian.policy.deletion.backstop import data_bytes
    from kustodian.testing.testserver import free_port
    from kustodian.testing.webhooks import backstop_policies, webhook_configurations

    changes = changes or (10 if smoke else 200)
    providers = providers or (200 if smoke else 10_000)
    requests = requests or (50 if smoke else 1_000)
    pools_res = Resource("ceph.rook.io", "v1", "cephblockpools", "CephBlockPool", True)
    rows: list[dict[str, Any]] = offline(providers, runs)
    cluster = Cluster()
    try:
        policies = backstop_policies({}, HOME)
        cluster.apply(*policies)
        tls = _tls()
        port = free_port()
        hook, _ = cluster.webhook("replica-0", tls, port)
        # -- lag: a first dependent -> the policy refuses --------------------------------------
        cluster.create_many([(pools_res, _pool(f"lag-{i}")) for i in range(changes)])
        _wait(lambda: hook.backstop.state is not None and hook.backstop.state.complete, 120, "the first record")
        lags: list[float] = []
        for i in range(changes):
            t0 = time.perf_counter()
            cluster.client.create(PERSISTENT_VOLUMES, _pv(f"lag-pv-{i}", f"lag-{i}"))
            while not cluster.refused(f"lag-{i}"):
                if time.perf_counter() - t0 > 30:
                    raise RuntimeError(f"lag-{i} not protected within 30 s")
                time.sleep(0.005)
            lags.append(time.perf_counter() - t0)
        note = (f"{changes} changes, one at a time: a pool's first PV created -> a dry-run DELETE of the pool "
                "refused by the ValidatingAdmissionPolicy (no webhook configuration installed); polled every "
                "~5 ms; debounce 50 ms")
        rows += [
            {"scenario": "backstop: lag", "metric": "first dependent -> policy refuses, p50 (s)",
             "value": round(pct(lags, 50), 3), "target": None, "note": note},
            {"scenario": "backstop: lag", "metric": "first dependent -> policy refuses, p99 (s)",
             "value": round(pct(lags, 99), 3), "target": ("<=", 2.0), "note": note},
            {"scenario": "backstop: lag", "metric": "worst of the changes (s)", "value": round(max(lags), 3),
             "target": None, "note": f"max over {changes}"},
        ]
        # -- size at `providers` pools, each with a volume --------------------------------------
        docs: list[tuple[Any, dict[str, Any]]] = [(pools_res, _pool(f"p-{i:05d}")) for i in range(providers)]
        docs += [(PERSISTENT_VOLUMES, _pv(f"pv-{i:05d}", f"p-{i:05d}")) for i in range(providers)]
        t0 = time.perf_counter()
        cluster.create_many(docs)
        created = time.perf_counter() - t0
        cluster.apply(_pool("free"))
        want = providers + changes + 1  # the pools, the lag pools, their namespace
        recorded = _wait(lambda: len(cluster.record_entries()) >= want, 600, f"{want} entries in the record")
        state = hook.backstop.store.read()
        size = state.size()
        stored = sum(len(orjson.dumps(cluster.client.get(CONFIG_MAPS, f"{RECORD}-{i}", HOME))) for i in range(8))
        passes = [hook.backstop.last_pass.seconds]
        for _ in range(runs):
            passes.append(hook.backstop.pass_once().seconds)
        note = f"{providers} CephBlockPools with a PV each (+{changes} from the lag run), created in {created:.0f}s"
        rows += [
            {"scenario": "backstop: size", "metric": f"record at {providers} providers (MiB)",
             "value": round(size / 2**20, 3), "target": ("<=", 1.0), "note": note + "; keys and values, 8 shards"},
            {"scenario": "backstop: size", "metric": "largest shard (KiB)",
             "value": round(max(data_bytes(s.data) for s in state.shards) / 1024, 1), "target": None,
             "note": f"a ConfigMap holds 1 MiB; the 8 ConfigMaps as stored: {stored / 2**20:.2f} MiB with metadata"},
            {"scenario": "backstop: size", "metric": "writer's pass over every provider (s)",
             "value": round(statistics.median(passes), 3), "target": None,
             "note": f"median of {len(passes)}: the guard's memo, every decision current"},
            {"scenario": "backstop: size", "metric": f"last create -> {want} entries recorded (s)",
             "value": round(recorded, 2), "target": None, "note": "the webhook's caches catching up included"},
        ]
        # -- the answer: policy alone, webhook alone, neither -------------------------------------
        full = "p-00007"
        before, checks_before = _plugin(cluster, "ValidatingAdmissionPolicy"), _checks(cluster)
        cpu = _cpu(cluster)
        policy_refused = _latencies(cluster, full, requests, True)
        policy_allowed = _latencies(cluster, "free", requests, False)
        policy_cpu = (_cpu(cluster) - cpu) / (2 * requests) * 1000
        policy = _window(before, _plugin(cluster, "ValidatingAdmissionPolicy"))
        checks = _window(checks_before, _checks(cluster))
        bindings = [d["metadata"]["name"] for d in policies if d["kind"] == "ValidatingAdmissionPolicyBinding"
                    and d["spec"]["policyName"] == "kustodian-deletion-backstop"]
        cluster.run("delete", "validatingadmissionpolicybinding", *bindings)
        _wait(lambda: not cluster.refused(full), 30, "the policy unbound")
        cpu = _cpu(cluster)
        baseline = _latencies(cluster, full, requests, False)
        baseline_cpu = (_cpu(cluster) - cpu) / requests * 1000
        ca = base64.b64encode((tls / "ca.crt").read_bytes()).decode()
        cluster.apply(*webhook_configurations(f"https://127.0.0.1:{port}", ca,
                                              values={"admission": {"deletionGuard": {"providerNamespaces": ["*"]}}}))
        _wait(lambda: cluster.refused(full), 30, "the webhook configuration")
        before = _plugin(cluster, "ValidatingAdmissionWebhook")
        cpu = _cpu(cluster)
        webhook_refused = _latencies(cluster, full, requests, True)
        webhook_allowed = _latencies(cluster, "free", requests, False)
        webhook_cpu = (_cpu(cluster) - cpu) / (2 * requests) * 1000
        webhook = _window(before, _plugin(cluster, "ValidatingAdmissionWebhook"))
        cluster.run("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", "kustodian")
        cluster.apply(*[d for d in policies if d["kind"] == "ValidatingAdmissionPolicyBinding"])
        note = (f"{2 * requests} dry-run DELETEs (half refused, half allowed), one at a time, {providers}-provider "
                "record; the API server's own time in the admission plugin "
                "(apiserver_admission_controller_admission_duration_seconds; buckets 5, 25, 100 ms: the p99 is the "
                "bucket bound)")
        rows += [
            {"scenario": "backstop: answer", "metric": "policy (ValidatingAdmissionPolicy), p99 (ms)",
             "value": policy[0], "target": ("<=", 5.0), "note": note},
            {"scenario": "backstop: answer", "metric": "policy (ValidatingAdmissionPolicy), mean (ms)",
             "value": round(policy[1], 3), "target": None, "note": f"{int(policy[2])} DELETEs; 8 bindings each"},
            {"scenario": "backstop: answer", "metric": "policy's validations per binding, p99 (ms)",
             "value": checks[0], "target": None,
             "note": f"{int(checks[2])} evaluations (8 bindings a DELETE; apiserver_validating_admission_policy_"
                     f"check_duration_seconds, buckets 0.0005, 1, 10 ms: the p99 is the bucket bound); mean "
                     f"{checks[1]:.3f} ms, {checks[1] * 8:.3f} ms a DELETE"},
            {"scenario": "backstop: answer", "metric": "webhook (ValidatingAdmissionWebhook), p99 (ms)",
             "value": webhook[0], "target": None, "note": note.replace("record", "memo, same DELETEs, policy unbound")},
            {"scenario": "backstop: answer", "metric": "webhook (ValidatingAdmissionWebhook), mean (ms)",
             "value": round(webhook[1], 3), "target": None,
             "note": f"{int(webhook[2])} DELETEs over TLS to the webhook; an allow waits for its round trip to the "
                     "API server (issue 32)"},
        ]
        cpu_note = ("the API server process's CPU (user + system, /proc) over the same DELETEs, per DELETE: what "
                    "the load average cannot inflate; the webhook's own process is not in it")
        rows += [
            {"scenario": "backstop: answer", "metric": "API server CPU per DELETE: policy / webhook / neither (ms)",
             "value": f"{policy_cpu:.2f} / {webhook_cpu:.2f} / {baseline_cpu:.2f}", "target": None,
             "note": cpu_note},
            {"scenario": "backstop: answer", "metric": "API server CPU the policy adds per DELETE (ms)",
             "value": round(policy_cpu - baseline_cpu, 3), "target": ("<=", 5.0),
             "note": "policy minus neither: the policy's whole cost to the API server, 8 bindings"},
        ]
        client_note = ("client side (this loaded machine: the same DELETE with neither installed is the baseline): "
                       f"{requests} each")
        for label, values in (("policy refuses", policy_refused), ("policy allows", policy_allowed),
                              ("webhook refuses", webhook_refused), ("webhook allows", webhook_allowed),
                              ("neither installed", baseline)):
            rows.append({"scenario": "backstop: answer", "metric": f"end to end, {label}, p50/p99 (ms)",
                         "value": f"{pct(values, 50):.1f}/{pct(values, 99):.1f}", "target": None,
                         "note": client_note})
        # -- handover: the writer's replica stops, another writes -------------------------------
        other, _ = cluster.webhook("replica-1", _tls(), free_port())
        _wait(lambda: other.backstop.state is not None, 120, "the second replica's first read")
        cluster.stops[0].set()  # the first replica stops: its Manager releases the Lease on the way out
        t0 = time.perf_counter()
        cluster.client.create(PERSISTENT_VOLUMES, _pv("handover-pv", "free"))
        key = f"ceph.rook.io_cephblockpools_{NS}_free"
        handover = _wait(lambda: key in cluster.record_entries(), 60, "the other replica's write")
        rows.append({"scenario": "backstop: handover", "metric": "writer stops -> a change recorded by another (s)",
                     "value": round(handover, 2), "target": None,
                     "note": f"graceful stop releases the Lease (started {time.perf_counter() - t0:.1f}s ago); a "
                             "replica that dies without releasing is replaced after the Lease's 15 s"})
    finally:
        cluster.close()
    return rows
