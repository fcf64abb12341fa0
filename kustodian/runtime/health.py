"""One plain-HTTP endpoint per process for probes and Prometheus: ``/healthz``, ``/readyz``, metrics.

Every long-running component (webhook, controllers, node-cleanup, node-agent) serves the same
three paths from the Manager, on an address of its own, apart from the TLS admission port:
kubelet probes and Prometheus scrapes never queue behind admission reviews, and a scrape needs
no client certificate.  ``/readyz`` answers 503 with one line per failing check, so
``kubectl get --raw`` or ``curl`` shows *why* a replica is not ready.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kustodian.errors import ConfigError, FieldProblem
from kustodian.runtime.metrics import with_process_metrics

log = logging.getLogger(__name__)

# a check returns None (or True) when fine, False or a short reason when not
Check = Callable[[], "str | bool | None"]


class Checks:
    """Named checks behind a probe (``/readyz``, ``/healthz``), and notes for its body.

    ``failing()`` lists the checks that fail: ``name`` for a plain ``False``, ``name: reason``
    when the check said why.  ``notes`` add detail lines whatever the verdict (the webhook
    lists stale kinds and kinds a rule names that the cluster does not serve).  One class
    for the webhook's readiness and every process's Manager.
    """

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}
        self._notes: dict[str, Callable[[], str]] = {}
        self._lock = threading.Lock()

    def add(self, name: str, check: Check) -> None:
        with self._lock:
            self._checks[name] = check

    def note(self, name: str, detail: Callable[[], str]) -> None:
        with self._lock:
            self._notes[name] = detail

    def failing(self) -> list[str]:
        with self._lock:
            checks = list(self._checks.items())
        out = []
        for name, check in checks:
            try:
                verdict = check()
            except Exception as exc:  # a broken check is a failing check, never a crash of the probe
                log.exception("check %s failed", name)
                verdict = f"check raised {type(exc).__name__}: {exc}"
            if verdict is False:
                out.append(name)
            elif isinstance(verdict, str):
                out.append(f"{name}: {verdict}")
        return out

    def details(self) -> list[str]:
        with self._lock:
            notes = list(self._notes.items())
        lines = []
        for name, detail in notes:
            try:
                text = detail()
            except Exception:
                log.exception("note %s failed", name)
                text = "unknown (see logs)"
            if text:
                lines.append(f"{name}: {text}")
        return lines


def parse_listen_address(address: str) -> tuple[socket.AddressFamily, str, int]:
    """``host:port``, ``:port`` (all interfaces) or ``[v6]:port``, as Go's net.Listen takes them."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or not 0 <= int(port_text) < 65536:
        raise ConfigError("listen address", [FieldProblem(address, "not host:port (e.g. :8080, [::]:8080)")])
    if host.startswith("[") and host.endswith("]"):
        return socket.AF_INET6, host[1:-1], int(port_text)
    if ":" in host:
        raise ConfigError("listen address", [FieldProblem(address, "an IPv6 host needs brackets: [::]:8080")])
    return socket.AF_INET, host or "0.0.0.0", int(port_text)  # noqa: S104 - pod network


class HealthServer:
    """``/healthz`` (alive), ``/readyz`` (every check passes) and ``metrics_path`` on ``address``."""

    def __init__(self, address: str, registry: CollectorRegistry, readiness: Checks, *,
                 metrics_path: str = "/metrics", liveness: Checks | None = None) -> None:
        family, host, port = parse_listen_address(address)
        self.registry = with_process_metrics(registry)
        self.readiness = readiness
        self.liveness = liveness or Checks()
        self.metrics_path = metrics_path
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == outer.metrics_path:
                    self._send(200, generate_latest(outer.registry), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/livez"):
                    self._checks(outer.liveness)
                elif path == "/readyz":
                    self._checks(outer.readiness)
                else:
                    self._send(404, b"not found\n", "text/plain")

            def _checks(self, checks: Checks) -> None:
                failing = checks.failing()
                lines = [*(failing or ["ok"]), *checks.details()]  # the notes, whatever the verdict
                self._send(503 if failing else 200, ("\n".join(lines) + "\n").encode(),
                           "text/plain; charset=utf-8")

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server_class = type("Server", (ThreadingHTTPServer,),
                            {"address_family": family, "daemon_threads": True})
        try:
            self._server = server_class((host, port), Handler)
        except OSError as exc:
            problem = FieldProblem(address, f"cannot listen: {exc.strerror or exc}")
            raise ConfigError("listen address", [problem]) from None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> HealthServer:
        self._thread = threading.Thread(target=self._server.serve_forever, name="health", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
