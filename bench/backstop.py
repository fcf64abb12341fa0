"""Scenario: the deletion backstop (issue 44) on a real API server.

``kustodian webhook`` runs in-process on its Manager, as the chart's ServiceAccount, against a
kube-testserver holding the chart's own rendered policy and bindings, and keeps the record.

* **Lag**: ``changes`` times, a pool that had no dependent gets its first PersistentVolume; the
  time from that create until the API server refuses a dry-run DELETE of the pool *by the policy*
  (no webhook configuration is installed: nothing else could refuse it).  Target p99 <= 2 s.
* **Size**: ``providers`` pools, each with a volume, and the record the webhook writes for them:
  its bytes (keys and values, as the shard limit counts them; target < 1 MiB at 10,000), the
  BackstopRecords as stored, and the writer's pass over every provider.
* **Answer**: dry-run DELETEs of a pool the record holds (refused) and of one it does not
  (allowed), answered by the policy alone, then by neither, then by the webhook alone (the
  chart's webhook configuration pointed at the same process, the policy unbound): the latency
  end to end in each case, p50/p99 over ``requests``, the API server's own time in the admission
  plugin and its CPU per DELETE (/proc), and the policy's own evaluation time (its
  ``apiserver_validating_admission_policy_check_duration_seconds``).  A DELETE the API server
  answers with an error (a webhook that timed out: 500) is counted beside its phase's
  latencies, never timed, never the end of the run.  Target: the policy's answer p99 <= 5 ms.

Each phase's rows are yielded as it ends; a phase that fails is one row naming why
(``bench.rows.failure``) and the next phases still run.
* **Handover**: the writer's replica stops (releasing its Lease); the time until another replica
  writes a change.  A replica that dies without releasing is replaced after the Lease duration.
* **Kustodian down**: every replica stopped, the policy answers alone, as it does in the outage it
  is for: the same DELETEs, with the API server sharing the machine only with the client (the
  webhook's watches of every provider and dependent no longer run in this process).  Target: p99
  <= 5 ms.
"""

from __future__ import annotations

import base64
import functools
import re
import statistics
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from bench.rows import Row, failure

NS = "rook-ceph"
HOME = "kustodian"
RECORD = "kustodian-backstop"
ACCOUNT = f"system:serviceaccount:{HOME}:kustodian"
FULL = "p-00007"  # a pool the record holds: its DELETE is refused


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
    """A kube-testserver with the Rook CRDs and the chart's BackstopRecord CRD, the chart's backstop
    policy and a webhook process."""

    def __init__(self) -> None:
        from kustodian.kube.client import KubeClient
        from kustodian.kube.config import load_config
        from kustodian.testing.crds import rook_crds
        from kustodian.testing.testserver import TestServer, find_script
        from kustodian.testing.tools import ensure_tools
        from kustodian.testing.webhooks import backstop_record_crd

        script = find_script()
        if script is None:
            raise RuntimeError("kube-testserver not found (../shared/kube-testserver)")
        self.server = TestServer(script).start()
        self.kubectl = str(ensure_tools() / "kubectl")
        self.client = KubeClient(load_config(str(self.server.kubeconfig)))
        self.apply(*rook_crds(), backstop_record_crd())
        self.run("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        for ns in (HOME, NS):
            self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        self.stops: list[threading.Event] = []
        self.threads: list[threading.Thread] = []

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
        thread = threading.Thread(target=manager.run, args=(stop,), daemon=True, name=f"webhook-{identity}")
        thread.start()
        self.stops.append(stop)
        self.threads.append(thread)
        return hook, stop

    def stop_webhooks(self, timeout: float = 60) -> None:
        """Every replica stops (its Manager releases its Lease and closes its watches) and is gone."""
        for stop in self.stops:
            stop.set()
        for thread in self.threads:
            thread.join(timeout)
            if thread.is_alive():
                raise RuntimeError(f"{thread.name} still running {timeout:.0f}s after its stop")

    def record_entries(self) -> dict[str, str]:
        from kustodian.kube.errors import NotFound
        from kustodian.kube.resources import BACKSTOP_RECORDS
        from kustodian.policy.deletion.backstop import read_record

        found: list[dict[str, Any] | None] = []
        for i in range(8):
            try:
                found.append(self.client.get(BACKSTOP_RECORDS, f"{RECORD}-{i}", HOME))
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


class Answers(NamedTuple):
    """One pool's dry-run DELETEs in one phase: the latencies (ms) of those the API server
    answered (refused or allowed, as expected), and how many it answered with an error instead
    (a 5xx or 429, a timeout, a dropped connection), by message."""

    latencies: list[float]
    errors: Counter[str]

    def p50_p99(self) -> str:
        return f"{pct(self.latencies, 50):.1f}/{pct(self.latencies, 99):.1f}" if self.latencies else "none answered"


def _reason(exc: Exception) -> str:
    """An error's message with what varies between requests (URLs, addresses and ports, durations) cut."""
    text = re.sub(r"https://[^\s\"]+", "<url>", str(exc))
    text = re.sub(r"\d+\.\d+\.\d+\.\d+:\d+", "<addr>", text)
    return re.sub(r"\b\d+(\.\d+)?(ms|s)\b", "<t>", text)[:300]  # "4.2s", never "k8s"


def answers(refused: Callable[[], bool | None], requests: int, want_refused: bool, what: str) -> Answers:
    """``requests`` dry-run DELETEs (``refused()``: was it refused?), one at a time.  One the API
    server answers with an error (``Unavailable``: a 5xx such as a webhook's timeout, a 429, a
    dropped connection) is counted, not timed, and the next is sent; a wrong answer is a defect
    and raises."""
    from kustodian.kube.errors import Unavailable

    out: list[float] = []
    errors: Counter[str] = Counter()
    for _ in range(requests):
        t0 = time.perf_counter()
        try:
            got = refused()
        except Unavailable as exc:
            errors[_reason(exc)] += 1
            continue
        out.append((time.perf_counter() - t0) * 1000)
        if got is not want_refused:
            raise RuntimeError(f"DELETE of {what}: refused={got}, expected {want_refused}")
    return Answers(out, errors)


def error_row(label: str, *answers: Answers) -> Row:
    """How many of a phase's DELETEs the API server answered with an error, beside its latencies."""
    errors: Counter[str] = sum((a.errors for a in answers), Counter())
    sent = sum(len(a.latencies) for a in answers) + errors.total()
    common = "; ".join(f"{n}x {msg}" for msg, n in errors.most_common(2))
    return {"scenario": "backstop: answer", "metric": f"{label}: DELETEs answered with an error (5xx, timeout)",
            "value": errors.total(), "target": ("<=", 0),
            "note": f"of {sent}; counted, not timed" + (f"; {common}" if common else "")}


def client_rows(label: str, cases: dict[str, Answers], requests: int) -> list[Row]:
    """End-to-end latencies of a phase's DELETEs (those answered), one row per case, then the
    phase's error count."""
    note = ("client side (this loaded machine: the same DELETE with neither installed is the baseline): "
            f"{requests} each")
    rows: list[Row] = [{"scenario": "backstop: answer", "metric": f"end to end, {case}, p50/p99 (ms)",
                        "value": answers.p50_p99(), "target": None,
                        "note": note + (f", {len(answers.latencies)} answered" if answers.errors else "")}
                       for case, answers in cases.items()]
    return [*rows, error_row(label, *cases.values())]


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
         "note": "a shard holds up to 1 MiB (SHARD_LIMIT)"},
        {"scenario": "backstop: size", "metric": f"gather over {providers} providers, first / then (s)",
         "value": f"{times[0]:.2f} / {statistics.median(times[1:]):.3f}", "target": None,
         "note": "first: every decision computed; then: from the guard's memo, as each pass after a change"},
    ]


def _phase(scenario: str, step: Callable[[], list[Row]]) -> list[Row]:
    """A phase's rows, or one row naming why it failed: the phases after it still run."""
    try:
        return step()
    except Exception as exc:  # a failed phase is reported, never the end of the run
        traceback.print_exc()
        return [failure(scenario, exc, "phase")]


def _own(hook: Any) -> Histogram:
    """The webhook's own time deciding DELETE reviews so far (its ``kustodian_admission_duration_
    seconds{webhook="validate", operation="DELETE"}``, from the handler's start to its answer):
    what it spends, against what the API server waited."""
    out: Histogram = {}
    for metric in hook.manager.registry.collect():
        if metric.name != "kustodian_admission_duration_seconds":
            continue
        for sample in metric.samples:
            if sample.labels.get("webhook") != "validate" or sample.labels.get("operation") != "DELETE":
                continue
            if sample.name.endswith("_bucket"):
                out[sample.labels["le"]] = out.get(sample.labels["le"], 0.0) + sample.value
            elif sample.name.endswith("_sum"):
                out["sum"] = out.get("sum", 0.0) + sample.value
    return out


class _Scenario:
    """The phases, in order, on one cluster and one webhook process (``replica-0``)."""

    def __init__(self, cluster: Cluster, changes: int, providers: int, requests: int, runs: int) -> None:
        from kustodian.kube.resources import Resource
        from kustodian.testing.testserver import free_port
        from kustodian.testing.webhooks import backstop_policies

        self.cluster, self.changes, self.providers, self.requests, self.runs = (
            cluster, changes, providers, requests, runs)
        self.pools = Resource("ceph.rook.io", "v1", "cephblockpools", "CephBlockPool", True)
        self.policies = backstop_policies({}, HOME)
        self.bindings = [d["metadata"]["name"] for d in self.policies
                         if d["kind"] == "ValidatingAdmissionPolicyBinding"
                         and d["spec"]["policyName"] == "kustodian-deletion-backstop"]
        cluster.apply(*self.policies)
        self.tls = _tls()
        self.port = free_port()
        self.hook, _ = cluster.webhook("replica-0", self.tls, self.port)
        # API server CPU per DELETE, by phase (ms); the bench process's (client + webhook)
        self.cpu: dict[str, float] = {}
        self.own_cpu: dict[str, float] = {}

    def phases(self) -> list[tuple[str, Callable[[], list[Row]]]]:
        return [("backstop: lag", self.lag), ("backstop: size", self.size), ("backstop: answer", self.policy),
                ("backstop: answer", self.neither), ("backstop: answer", self.webhook),
                ("backstop: answer", self.cost), ("backstop: handover", self.handover),
                ("backstop: answer, Kustodian down", self.down)]

    def _measure(self, phase: str, *cases: tuple[str, bool]) -> list[Answers]:
        """Each ``(pool, refused?)`` case ``requests`` times; the API server's and this process's
        CPU per DELETE over them go to ``cpu`` / ``own_cpu``."""
        cpu, own = _cpu(self.cluster), time.process_time()
        out = [answers(functools.partial(self.cluster.refused, pool), self.requests, refused, pool)
               for pool, refused in cases]
        self.cpu[phase] = (_cpu(self.cluster) - cpu) / (len(cases) * self.requests) * 1000
        self.own_cpu[phase] = (time.process_time() - own) / (len(cases) * self.requests) * 1000
        return out

    def _refused_or_error(self, pool: str) -> bool:
        from kustodian.kube.errors import Unavailable

        try:
            return bool(self.cluster.refused(pool))
        except Unavailable:
            return False

    def lag(self) -> list[Row]:
        """A first dependent -> the policy refuses (no webhook configuration installed)."""
        from kustodian.kube.resources import PERSISTENT_VOLUMES

        cluster, hook, changes = self.cluster, self.hook, self.changes
        cluster.create_many([(self.pools, _pool(f"lag-{i}")) for i in range(changes)])
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
        return [
            {"scenario": "backstop: lag", "metric": "first dependent -> policy refuses, p50 (s)",
             "value": round(pct(lags, 50), 3), "target": None, "note": note},
            {"scenario": "backstop: lag", "metric": "first dependent -> policy refuses, p99 (s)",
             "value": round(pct(lags, 99), 3), "target": ("<=", 2.0), "note": note},
            {"scenario": "backstop: lag", "metric": "worst of the changes (s)", "value": round(max(lags), 3),
             "target": None, "note": f"max over {changes}"},
        ]

    def size(self) -> list[Row]:
        """``providers`` pools, each with a volume, and the record written for them."""
        import orjson

        from kustodian.kube.resources import BACKSTOP_RECORDS, PERSISTENT_VOLUMES
        from kustodian.policy.deletion.backstop import data_bytes

        cluster, hook, providers, changes = self.cluster, self.hook, self.providers, self.changes
        docs: list[tuple[Any, dict[str, Any]]] = [(self.pools, _pool(f"p-{i:05d}")) for i in range(providers)]
        docs += [(PERSISTENT_VOLUMES, _pv(f"pv-{i:05d}", f"p-{i:05d}")) for i in range(providers)]
        t0 = time.perf_counter()
        cluster.create_many(docs)
        created = time.perf_counter() - t0
        cluster.apply(_pool("free"))
        want = providers + changes + 1  # the pools, the lag pools, their namespace
        recorded = _wait(lambda: len(cluster.record_entries()) >= want, 600, f"{want} entries in the record")
        state = hook.backstop.store.read()
        size = state.size()
        stored = sum(len(orjson.dumps(cluster.client.get(BACKSTOP_RECORDS, f"{RECORD}-{i}", HOME)))
                     for i in range(8))
        passes = [hook.backstop.last_pass.seconds]
        for _ in range(self.runs):
            passes.append(hook.backstop.pass_once().seconds)
        note = f"{providers} CephBlockPools with a PV each (+{changes} from the lag run), created in {created:.0f}s"
        return [
            {"scenario": "backstop: size", "metric": f"record at {providers} providers (MiB)",
             "value": round(size / 2**20, 3), "target": ("<=", 1.0), "note": note + "; keys and values, 8 shards"},
            {"scenario": "backstop: size", "metric": "largest shard (KiB)",
             "value": round(max(data_bytes(s.data) for s in state.shards) / 1024, 1), "target": None,
             "note": f"a shard holds up to 1 MiB; the 8 BackstopRecords as stored: {stored / 2**20:.2f} MiB "
                     "with metadata"},
            {"scenario": "backstop: size", "metric": "writer's pass over every provider (s)",
             "value": round(statistics.median(passes), 3), "target": None,
             "note": f"median of {len(passes)}: the guard's memo, every decision current"},
            {"scenario": "backstop: size", "metric": f"last create -> {want} entries recorded (s)",
             "value": round(recorded, 2), "target": None, "note": "the webhook's caches catching up included"},
        ]

    def _note(self, what: str) -> str:
        return (f"{2 * self.requests} dry-run DELETEs (half refused, half allowed), one at a time, "
                f"{self.providers}-provider {what}; the API server's own time in the admission plugin "
                "(apiserver_admission_controller_admission_duration_seconds; buckets 5, 25, 100 ms: the p99 is the "
                "bucket bound)")

    def policy(self) -> list[Row]:
        """The policy alone answers (no webhook configuration installed)."""
        cluster = self.cluster
        before, checks_before = _plugin(cluster, "ValidatingAdmissionPolicy"), _checks(cluster)
        refused, allowed = self._measure("policy", (FULL, True), ("free", False))
        policy = _window(before, _plugin(cluster, "ValidatingAdmissionPolicy"))
        checks = _window(checks_before, _checks(cluster))
        return [
            {"scenario": "backstop: answer", "metric": "policy (ValidatingAdmissionPolicy), p99 (ms)",
             "value": policy[0], "target": ("<=", 5.0), "note": self._note("record")},
            {"scenario": "backstop: answer", "metric": "policy (ValidatingAdmissionPolicy), mean (ms)",
             "value": round(policy[1], 3), "target": None, "note": f"{int(policy[2])} DELETEs; 8 bindings each"},
            {"scenario": "backstop: answer", "metric": "policy's validations per binding, p99 (ms)",
             "value": checks[0], "target": None,
             "note": f"{int(checks[2])} evaluations (8 bindings a DELETE; apiserver_validating_admission_policy_"
                     f"check_duration_seconds, buckets 0.0005, 1, 10 ms: the p99 is the bucket bound); mean "
                     f"{checks[1]:.3f} ms, {checks[1] * 8:.3f} ms a DELETE"},
            *client_rows("policy", {"policy refuses": refused, "policy allows": allowed}, self.requests),
        ]

    def _unbind(self) -> None:
        self.cluster.run("delete", "--ignore-not-found", "validatingadmissionpolicybinding", *self.bindings)
        _wait(lambda: not self._refused_or_error(FULL), 30, "the policy unbound")

    def neither(self) -> list[Row]:
        """Neither the policy nor the webhook: the API server's own cost of a dry-run DELETE."""
        self._unbind()
        [baseline] = self._measure("neither", (FULL, False))
        return client_rows("neither", {"neither installed": baseline}, self.requests)

    def webhook(self) -> list[Row]:
        """The webhook alone answers (the chart's configurations pointed at this process, the
        policy unbound); then the configurations go and the bindings come back, whatever happened."""
        from kustodian.testing.webhooks import webhook_configurations

        cluster = self.cluster
        try:
            self._unbind()
            ca = base64.b64encode((self.tls / "ca.crt").read_bytes()).decode()
            configs = webhook_configurations(f"https://127.0.0.1:{self.port}", ca,
                                             values={"admission": {"deletionGuard": {"providerNamespaces": ["*"]}}})
            cluster.apply(*configs)
            _wait(lambda: self._refused_or_error(FULL), 30, "the webhook configuration")
            before, own_before = _plugin(cluster, "ValidatingAdmissionWebhook"), _own(self.hook)
            refused, allowed = self._measure("webhook", (FULL, True), ("free", False))
            webhook = _window(before, _plugin(cluster, "ValidatingAdmissionWebhook"))
            own = _window(own_before, _own(self.hook))
        finally:
            cluster.run("delete", "--ignore-not-found", "validatingwebhookconfiguration,mutatingwebhookconfiguration",
                        "kustodian")
            cluster.apply(*[d for d in self.policies if d["kind"] == "ValidatingAdmissionPolicyBinding"])
        timeout = next(h.get("timeoutSeconds") for c in configs for h in c["webhooks"]
                       if h["name"] == "deletion-guard.kustodian.io")
        return [
            {"scenario": "backstop: answer", "metric": "webhook (ValidatingAdmissionWebhook), p99 (ms)",
             "value": webhook[0], "target": None,
             "note": self._note("memo, same DELETEs, policy unbound") + f"; the webhook's timeoutSeconds {timeout}"},
            {"scenario": "backstop: answer", "metric": "webhook (ValidatingAdmissionWebhook), mean (ms)",
             "value": round(webhook[1], 3), "target": None,
             "note": f"{int(webhook[2])} DELETEs over TLS to the webhook; an allow waits for its round trip to the "
                     "API server (issue 32)"},
            {"scenario": "backstop: answer", "metric": "webhook's own decision, p99 / mean (ms)",
             "value": f"{own[0]:g} / {own[1]:.2f}", "target": None,
             "note": f"{int(own[2])} reviews decided, from its handler's start to its answer "
                     "(kustodian_admission_duration_seconds, the p99 a bucket bound): beside the API server's "
                     "wait above, what the webhook spent and what it waited for (queued, or starved of CPU)"},
            *client_rows("webhook", {"webhook refuses": refused, "webhook allows": allowed}, self.requests),
        ]

    def cost(self) -> list[Row]:
        """The API server's CPU per DELETE, policy / webhook / neither, from the phases measured."""
        def ms(phase: str, of: dict[str, float]) -> str:
            return f"{of[phase]:.2f}" if phase in of else "n/a"

        cpu_note = ("the API server process's CPU (user + system, /proc) over the same DELETEs, per DELETE: what "
                    "the load average cannot inflate; the webhook's own process is not in it (this bench process's, "
                    "client and in-process webhook together, policy / webhook / neither: "
                    f"{' / '.join(ms(p, self.own_cpu) for p in ('policy', 'webhook', 'neither'))} ms)")
        rows: list[Row] = [
            {"scenario": "backstop: answer", "metric": "API server CPU per DELETE: policy / webhook / neither (ms)",
             "value": " / ".join(ms(p, self.cpu) for p in ("policy", "webhook", "neither")), "target": None,
             "note": cpu_note}]
        if "policy" in self.cpu and "neither" in self.cpu:
            rows.append({"scenario": "backstop: answer", "metric": "API server CPU the policy adds per DELETE (ms)",
                         "value": round(self.cpu["policy"] - self.cpu["neither"], 3), "target": ("<=", 5.0),
                         "note": "policy minus neither: the policy's whole cost to the API server, 8 bindings"})
        return rows

    def handover(self) -> list[Row]:
        """The writer's replica stops (releasing its Lease); another writes the next change."""
        from kustodian.kube.resources import PERSISTENT_VOLUMES
        from kustodian.testing.testserver import free_port

        cluster = self.cluster
        # a pool of its own: "free" stays without dependents for the phase after this one (while the
        # record was ConfigMaps, a PV here went unseen by the policy: the bindings had been deleted
        # and re-created, kubernetes#130887, so "free" read as allowed though recorded)
        cluster.apply(_pool("handover"))
        other, _ = cluster.webhook("replica-1", _tls(), free_port())
        _wait(lambda: other.backstop.state is not None, 120, "the second replica's first read")
        cluster.stops[0].set()  # the first replica stops: its Manager releases the Lease on the way out
        t0 = time.perf_counter()
        cluster.client.create(PERSISTENT_VOLUMES, _pv("handover-pv", "handover"))
        key = f"ceph.rook.io_cephblockpools_{NS}_handover"
        handover = _wait(lambda: key in cluster.record_entries(), 60, "the other replica's write")
        return [{"scenario": "backstop: handover", "metric": "writer stops -> a change recorded by another (s)",
                 "value": round(handover, 2), "target": None,
                 "note": f"graceful stop releases the Lease (started {time.perf_counter() - t0:.1f}s ago); a "
                         "replica that dies without releasing is replaced after the Lease's 15 s"}]

    def down(self) -> list[Row]:
        """The policy alone answers while no replica runs (the case it is for): every webhook
        replica of this process stopped, so the API server shares the machine with the client only."""
        cluster = self.cluster
        cluster.stop_webhooks()
        before = _plugin(cluster, "ValidatingAdmissionPolicy")
        refused, allowed = self._measure("down", (FULL, True), ("free", False))
        p99, mean, count = _window(before, after := _plugin(cluster, "ValidatingAdmissionPolicy"))
        within = (after.get("0.005", 0.0) - before.get("0.005", 0.0)) / count * 100 if count else float("nan")
        scenario = "backstop: answer, Kustodian down"
        return [
            {"scenario": scenario, "metric": "policy (ValidatingAdmissionPolicy), every replica stopped, p99 (ms)",
             "value": p99, "target": ("<=", 5.0),
             "note": self._note("record, no webhook replica running (as while Kustodian is down)")},
            {"scenario": scenario, "metric": "policy, every replica stopped: mean (ms) / within 5 ms (%)",
             "value": f"{mean:.3f} / {within:.1f}", "target": None,
             "note": f"{int(count)} DELETEs; 8 bindings each; API server CPU per DELETE {self.cpu['down']:.2f} ms"},
            *[{**row, "scenario": scenario} for row in client_rows(
                "policy, every replica stopped", {"policy refuses": refused, "policy allows": allowed},
                self.requests)],
        ]


def run(smoke: bool, runs: int, *, changes: int | None = None, providers: int | None = None,
        requests: int | None = None) -> Iterator[Row]:
    """The scenario's rows, each phase's as it ends (one that fails is a row saying so, and the
    next phases run); ``changes``, ``providers`` and ``requests`` override the sizes (for a partial
    re-run on a busy machine: ``python -c "from bench import backstop; ..."``)."""
    changes = changes or (10 if smoke else 200)
    providers = providers or (200 if smoke else 10_000)
    requests = requests or (50 if smoke else 1_000)
    yield from offline(providers, runs)
    cluster = Cluster()
    try:
        scenario = _Scenario(cluster, changes, providers, requests, runs)
        for name, step in scenario.phases():
            yield from _phase(name, step)
    finally:
        cluster.close()
