"""A real ``kustodian webhook`` process, started with the chart's default arguments, and probes of it.

The process is what a default install runs: the arguments come from ``helm template`` of
``charts/kustodian`` (the webhook Deployment's container args, defaults only), with the ports,
the TLS directory and the log format set for a local run and ``--kubeconfig`` added.  So the
features, caches and certificate manager are those of the chart, whatever the code builds
from them, and a change to the chart's defaults or to cache construction is measured as it is.
It is pinned to CPU 0 (the chart's limit is one CPU); everything the bench reads of it comes
from outside: its ``/proc/<pid>`` (RSS, peak RSS, CPU time) and its HTTPS port (``/readyz``,
``/healthz``, ``/validate``).
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kustodian.testing.testserver import free_port

REPO = Path(__file__).resolve().parents[1]
SERVER_NAME = "kustodian.kustodian.svc"  # the chart's builtin certificate (service kustodian, namespace kustodian)


@functools.cache
def chart_args() -> tuple[str, ...]:
    """The webhook container's args as ``helm template`` renders the chart with its defaults."""
    from kustodian.testing.tools import ensure_tools

    out = subprocess.run([str(ensure_tools() / "helm"), "template", "kustodian", str(REPO / "charts" / "kustodian"),
                          "--namespace", "kustodian", "--show-only", "templates/deployment.yaml"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    for doc in yaml.safe_load_all(out):
        for container in (doc or {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
            if container.get("args", [None])[0] == "webhook":
                return tuple(container["args"])
    raise RuntimeError("the chart renders no webhook container")


def local_args(kubeconfig: Path, port: int, metrics_port: int, tls_dir: Path) -> list[str]:
    """``chart_args()`` for a process on this machine."""
    local = {"--webhook-port": str(port), "--metrics-listen-address": f"127.0.0.1:{metrics_port}",
             "--tls-dir": str(tls_dir), "--log-format": "text", "--log-level": "warning",
             "--tls-cert-file": str(tls_dir / "tls.crt"), "--tls-key-file": str(tls_dir / "tls.key")}
    args = []
    for arg in chart_args():
        flag, eq, _ = arg.partition("=")
        args.append(f"{flag}={local[flag]}" if eq and flag in local else arg)
    return [*args, f"--kubeconfig={kubeconfig}", "--webhook-host=127.0.0.1"]


def cpu_ns(pid: int) -> int:
    """CPU time of every thread of ``pid`` in nanoseconds (``/proc/<pid>/task/*/schedstat``: exact,
    where ``/proc/<pid>/stat`` counts 10 ms ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as fh:
                total += int(fh.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # a thread that just ended
            continue
    return total


def thread_cpu_ns(pid: int) -> dict[str, int]:
    """CPU time of each thread of ``pid`` in nanoseconds, by thread id."""
    out = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as fh:
                out[task] = int(fh.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # a thread that just ended
            continue
    return out


def proc_status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (MiB) and CPU seconds (user + system) of ``pid``."""
    out: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rpartition(")")[2].split()
    out["cpu"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


class Conn:
    """One keep-alive TLS connection to the webhook; ``get``/``post`` return (status, body)."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # the builtin CA is the webhook's own; what is measured is the same
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = ctx.wrap_socket(raw, server_hostname=SERVER_NAME)
        self.buf = b""

    def request(self, payload: bytes) -> tuple[int, bytes]:
        self.sock.sendall(payload)
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._recv()
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        while len(rest) < length:
            rest += self._recv()
        self.buf = rest[length:]
        return int(head.split(b" ", 2)[1]), rest[:length]

    def get(self, path: str) -> int:
        return self.request(f"GET {path} HTTP/1.1\r\nHost: kustodian\r\n\r\n".encode())[0]

    def _recv(self) -> bytes:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the webhook closed the connection")
        return data

    def close(self) -> None:
        self.sock.close()


class Prober:
    """``GET /healthz`` every ``interval`` seconds on one keep-alive connection, open loop: each
    latency is taken from the probe's scheduled time, so an event-loop stall counts in full.
    ``window(t0, t1)`` gives the latencies (ms) of the probes scheduled in that span."""

    def __init__(self, port: int, interval: float = 0.01) -> None:
        self.port, self.interval = port, interval
        self.samples: list[tuple[float, float]] = []  # (scheduled, latency s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="healthz-prober", daemon=True)

    def start(self) -> Prober:
        self._thread.start()
        return self

    def _run(self) -> None:
        conn: Conn | None = None
        while conn is None and not self._stop.is_set():
            try:
                conn = Conn(self.port, timeout=60)
            except OSError:
                time.sleep(0.05)
        start = time.monotonic()
        i = 0
        while conn is not None and not self._stop.is_set():
            scheduled = start + i * self.interval
            now = time.monotonic()
            if now < scheduled:
                time.sleep(scheduled - now)
            elif now - scheduled > 1.0:  # behind by a second (a stall): restart the schedule after it
                start, i, scheduled = now, 0, now
            try:
                conn.get("/healthz")
            except OSError:
                return
            self.samples.append((scheduled, time.monotonic() - scheduled))
            i += 1
        if conn is not None:
            conn.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def window(self, t0: float, t1: float) -> list[float]:
        return [lat * 1000 for t, lat in list(self.samples) if t0 <= t < t1]


@dataclass
class Webhook:
    """A running ``kustodian webhook``; ``started`` is the monotonic time before its spawn."""

    proc: subprocess.Popen[bytes]
    port: int
    workdir: Path
    started: float
    ready_at: float = 0.0
    at_ready: dict[str, float] = field(default_factory=dict)

    @classmethod
    def start(cls, kubeconfig: Path, *, cpu: int | None = 0, env: dict[str, str] | None = None) -> Webhook:
        workdir = Path(tempfile.mkdtemp(prefix="bench-webhook-"))
        port, metrics_port = free_port(), free_port()
        log = (workdir / "webhook.log").open("wb")
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "kustodian",
                                 *local_args(kubeconfig, port, metrics_port, workdir / "tls")],
                                stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env={**os.environ, **(env or {})})
        log.close()
        if cpu is not None and len(os.sched_getaffinity(0)) >= 2:
            os.sched_setaffinity(proc.pid, {cpu})
        return cls(proc, port, workdir, started)

    def status(self) -> dict[str, float]:
        return proc_status(self.proc.pid)

    def logs(self) -> str:
        return (self.workdir / "webhook.log").read_text(errors="replace")[-4000:]

    def wait_ready(self, timeout: float, *, after: float = 0.0, poll: float = 0.05) -> float:
        """Poll ``/readyz`` until 200 (a probe that began after ``after``); the monotonic time of
        the first 200.  Records the process's status (RSS, peak, CPU) at that moment."""
        deadline = time.monotonic() + timeout
        conn: Conn | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the webhook exited ({self.proc.returncode}):\n{self.logs()}")
            try:
                if conn is None:
                    conn = Conn(self.port, timeout=10)
                sent = time.monotonic()
                if conn.get("/readyz") == 200 and sent >= after:
                    self.ready_at = time.monotonic()
                    self.at_ready = self.status()
                    conn.close()
                    return self.ready_at
            except OSError:
                if conn is not None:
                    conn.close()
                conn = None
            time.sleep(poll)
        raise RuntimeError(f"the webhook was not ready within {timeout:.0f}s:\n{self.logs()}")

    def wait_unready(self, timeout: float, poll: float = 0.01) -> float:
        """Poll ``/readyz`` until it is not 200 (the webhook noticed an outage)."""
        deadline = time.monotonic() + timeout
        conn = Conn(self.port, timeout=10)
        try:
            while time.monotonic() < deadline:
                if conn.get("/readyz") != 200:
                    return time.monotonic()
                time.sleep(poll)
        finally:
            conn.close()
        raise RuntimeError(f"the webhook stayed ready for {timeout:.0f}s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        shutil.rmtree(self.workdir, ignore_errors=True)


def review_bytes(review: dict[str, Any]) -> bytes:
    import json

    body = json.dumps(review).encode()
    return (f"POST /validate HTTP/1.1\r\nHost: kustodian\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def delete_review(obj: dict[str, Any], resource: str) -> bytes:
    """A DELETE AdmissionReview of ``obj`` (as the API server holds it) for the validating webhook."""
    group, _, version = obj["apiVersion"].rpartition("/")
    meta = obj["metadata"]
    return review_bytes({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "bench", "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "resource": {"group": group, "version": version, "resource": resource},
        "name": meta["name"], "namespace": meta.get("namespace", ""), "operation": "DELETE",
        "userInfo": {"username": "bench"}, "object": None, "oldObject": obj, "dryRun": True}})
