"""A stand-in API server for the memory scenario: lists, discovery and idle watches over HTTP.

Enough of the Kubernetes API for ``kustodian webhook`` to start, list and watch: paginated
lists (``limit`` / ``continue``) of PersistentVolumes and PersistentVolumeClaims shaped as an
API server sends them (``bench.synthetic.api_pv``: managed fields, finalizers, the whole CSI
source), 500 Namespaces and the two StorageClasses; every other built-in list is empty, API
groups of CRDs are not served (404), a watch stays open and silent, a write is accepted.

It runs in its own process, so the measured process holds only what the webhook holds: the
pages arrive over a socket and are decoded by ``KubeClient`` as in production.  Creating
100,000 objects in kube-testserver takes longer than the whole benchmark.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

from bench.synthetic import BIG_SC, api_pv, api_pvc, namespace, storage_class

LIST_RV = "2000000"


def _kinds(pvs: int, pvcs: int) -> dict[str, tuple[int, Callable[[int], dict[str, Any]]]]:
    classes = [storage_class(), storage_class(BIG_SC, "bigpool")]
    return {
        "/api/v1/persistentvolumes": (pvs, lambda i: api_pv(i, pool="replicapool" if i < 300 else "bigpool")),
        "/api/v1/persistentvolumeclaims": (pvcs, api_pvc),
        "/api/v1/namespaces": (500, namespace),
        "/apis/storage.k8s.io/v1/storageclasses": (len(classes), classes.__getitem__),
    }


def _handler(kinds: dict[str, tuple[int, Callable[[int], dict[str, Any]]]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = orjson.dumps(body)
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            if query.get("watch") == "true":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.flush()
                self.rfile.read(1)  # silent until the client goes away
                return
            if url.path.startswith("/apis/") and url.path.count("/") == 2:  # a CRD's API group
                self._send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                 "reason": "NotFound", "code": 404, "message": "the server could not find "
                                 "the requested resource"})
                return
            count, make = kinds.get(url.path, (0, namespace))
            start = int(query.get("continue") or 0)
            end = min(count, start + int(query.get("limit") or count or 1))
            meta: dict[str, Any] = {"resourceVersion": LIST_RV}
            if end < count:
                meta["continue"] = str(end)
            self._send(200, {"kind": "List", "apiVersion": "v1", "metadata": meta,
                             "items": [make(i) for i in range(start, end)]})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send(201, {"kind": "Event", "apiVersion": "v1", "metadata": {"name": "written"}})

        do_PUT = do_PATCH = do_POST

    return Handler


def _serve(port: int, pvs: int, pvcs: int, ready: Any) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(_kinds(pvs, pvcs)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ready.send(True)
    ready.recv()  # until told to stop
    server.shutdown()


class FakeApi:
    """``with FakeApi(pvs, pvcs) as url:`` a served cluster in its own process."""

    def __init__(self, pvs: int, pvcs: int) -> None:
        self.sizes = (pvs, pvcs)

    def __enter__(self) -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        spawn = mp.get_context("spawn")
        self._conn, child = spawn.Pipe()
        self._proc = spawn.Process(target=_serve, args=(port, *self.sizes, child), daemon=True)
        self._proc.start()
        if not self._conn.poll(60):
            self._proc.kill()
            raise RuntimeError("the stand-in API server did not start")
        self._conn.recv()
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):  # the server may be gone already
            self._conn.send(True)
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
