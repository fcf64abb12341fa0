"""A plain-HTTP front for a test API server that writes down every request it passes on.

A process under test is given a kubeconfig whose server is this proxy (``http://127.0.0.1:PORT``,
the API server's token); the proxy opens a TLS connection to the real API server for each
connection it accepts and forwards both ways.  It reads the requests (request line, headers,
the body by its ``Content-Length`` or chunks) so it can log each ``(method, path, query)``
exactly as the API server receives it; responses are passed through untouched, so a watch
streams as it would.  :meth:`ApiProxy.watches` counts the watch requests per resource path;
:meth:`ApiProxy.most_at_once` how many of them were open together, which is what "each kind is
watched once per process" is checked against (a cache whose watch ended and that watches again
sends a second request, never two at once).  A request counts as open until the next request on
its connection, or until the client closes the connection.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import yaml

__all__ = ["ApiProxy", "Request"]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    connection: int = 0  # the proxy's number for the client connection it came on
    at: float = 0.0  # time.monotonic() when the proxy read it

    @property
    def is_watch(self) -> bool:
        return self.method == "GET" and self.query.get("watch") in ("true", "1")


class ApiProxy:
    """``http://127.0.0.1:port`` in front of ``https://host:port`` (the test server's own CA not checked)."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._tls = ssl.create_default_context()
        self._tls.check_hostname = False
        self._tls.verify_mode = ssl.CERT_NONE
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self.requests: list[Request] = []
        self._ended: dict[int, float] = {}  # index in ``requests`` -> when it stopped being open
        self._connections = itertools.count(1)
        threading.Thread(target=self._accept, daemon=True, name="api-proxy-accept").start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, admin: Path, out: Path) -> Path:
        """A copy of the API server's admin kubeconfig that goes through this proxy."""
        doc = yaml.safe_load(admin.read_text())
        for cluster in doc.get("clusters") or []:
            cluster["cluster"] = {"server": self.url}
        out.write_text(yaml.safe_dump(doc))
        return out

    def seen(self) -> list[Request]:
        """Every request passed on so far, in order."""
        with self._lock:
            return list(self.requests)

    def watches(self) -> Counter[str]:
        """Watch requests seen so far, by resource path (``/api/v1/pods``, ...)."""
        with self._lock:
            return Counter(r.path for r in self.requests if r.is_watch)

    def most_at_once(self, key: Callable[[Request], str]) -> Counter[str]:
        """The most watch requests open at the same time, by ``key(request)``."""
        with self._lock:
            spans = [(r, r.at, self._ended.get(i, float("inf"))) for i, r in enumerate(self.requests) if r.is_watch]
        out: Counter[str] = Counter()
        for r, start, _ in spans:
            k = key(r)
            out[k] = max(out[k], sum(1 for o, s, e in spans if key(o) == k and s <= start < e))
        return out

    def lists(self) -> Counter[str]:
        """List requests that started a list (no ``continue`` token), by resource path."""
        with self._lock:
            return Counter(r.path for r in self.requests
                           if r.method == "GET" and not r.is_watch and "continue" not in r.query
                           and "limit" in r.query)

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> ApiProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ---------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = self._tls.wrap_socket(socket.create_connection(self.upstream))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
            threading.Thread(target=self._requests, args=(client, server), daemon=True,
                             name="api-proxy-requests").start()
            threading.Thread(target=self._pump, args=(server, client), daemon=True,
                             name="api-proxy-responses").start()

    def _requests(self, src: socket.socket, dst: socket.socket) -> None:
        """Forward the client's requests one by one, logging each request line."""
        buf = b""
        connection = next(self._connections)
        last: int | None = None  # this connection's request still open
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = src.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
                url = urlsplit(target)
                now = time.monotonic()
                with self._lock:
                    if last is not None:
                        self._ended[last] = now
                    last = len(self.requests)
                    self.requests.append(Request(method, url.path,
                                                 {k: v[-1] for k, v in parse_qs(url.query).items()},
                                                 connection, now))
                dst.sendall(head + b"\r\n\r\n")
                if headers.get("transfer-encoding", "").lower() == "chunked":
                    buf = self._chunks(src, dst, buf)
                else:
                    length = int(headers.get("content-length") or 0)
                    while len(buf) < length:
                        data = src.recv(65536)
                        if not data:
                            return
                        buf += data
                    dst.sendall(buf[:length])
                    buf = buf[length:]
        except (OSError, ValueError):
            return
        finally:
            if last is not None:
                with self._lock:
                    self._ended[last] = time.monotonic()
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    @staticmethod
    def _chunks(src: socket.socket, dst: socket.socket, buf: bytes) -> bytes:
        while True:
            while b"\r\n" not in buf:
                buf += src.recv(65536)
            size_line, _, rest = buf.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            while len(rest) < size + 2:
                rest += src.recv(65536)
            dst.sendall(size_line + b"\r\n" + rest[:size + 2])
            buf = rest[size + 2:]
            if size == 0:
                return buf

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
