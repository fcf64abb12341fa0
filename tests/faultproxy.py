"""A TCP proxy that can turn into a black hole: no byte forwarded either way, no FIN, no RST.

Between a client and an API server it stands for a route that silently drops packets (or
an API server instance that vanished behind a virtual IP): every socket stays open, reads
block, nothing is ever refused.  ``blackhole()`` stops forwarding, ``restore()`` resumes it;
bytes (and a close) that arrived meanwhile are held and delivered after ``restore()``, as
TCP retransmission would deliver them once the route is back.  New connections are
accepted during a black hole (by the proxy's kernel) and then hear nothing, like the rest.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True, name="fault-proxy-accept").start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def blackhole(self) -> None:
        self._flowing.clear()

    def restore(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        self._closed.set()
        self._flowing.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True, name="fault-proxy-pump").start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            # held here while the hole is open: neither the bytes nor the end of the stream pass
            self._flowing.wait()
            if self._closed.is_set():
                return
            try:
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                dst.sendall(data)
            except OSError:
                return
