"""Serving the app over TLS with uvicorn (uvloop + httptools), reloading certificates.

uvicorn builds one ``ssl.SSLContext`` at start.  ``CertReloader`` watches the
certificate and key files and loads the new pair into that same context: every new
TLS handshake then uses it, connections already open keep theirs, and nothing
restarts.  A half-written pair (the key does not match the certificate) is
ignored until the next change; the old pair stays in force.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TLSFiles:
    cert: str
    key: str


class CertReloader:
    def __init__(self, context: ssl.SSLContext, files: TLSFiles, interval: float = 2.0) -> None:
        self.context = context
        self.files = files
        self.interval = interval
        self.loaded = threading.Event()
        self.reloads = 0
        self._stamp = self._mtimes()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.loaded.set()  # uvicorn loaded the initial pair

    def _mtimes(self) -> tuple[int, int]:
        try:
            return (os.stat(self.files.cert).st_mtime_ns, os.stat(self.files.key).st_mtime_ns)
        except OSError:
            return (0, 0)

    def check(self) -> bool:
        """Reload when the files changed; True when a new pair was loaded."""
        stamp = self._mtimes()
        if stamp in (self._stamp, (0, 0)):
            return False
        try:
            self.context.load_cert_chain(self.files.cert, self.files.key)
        except (ssl.SSLError, OSError) as exc:
            log.warning("certificate files changed but could not be loaded yet: %s", exc)
            return False
        self._stamp = stamp
        self.reloads += 1
        log.info("reloaded the serving certificate from %s", self.files.cert)
        return True

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.interval):
                self.check()

        self._thread = threading.Thread(target=loop, name="cert-reloader", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()


def build_server(app: FastAPI, *, host: str, port: int, tls: TLSFiles | None,
                 graceful_timeout: int = 10, log_level: str = "warning",
                 reload_interval: float = 2.0) -> tuple[uvicorn.Server, CertReloader | None]:
    """A uvicorn server for ``app``; with ``tls`` the certificates are hot-reloaded."""
    config = uvicorn.Config(
        app, host=host, port=port, loop="uvloop", http="httptools", lifespan="off",
        ssl_certfile=tls.cert if tls else None, ssl_keyfile=tls.key if tls else None,
        timeout_graceful_shutdown=graceful_timeout, log_level=log_level, access_log=False,
        timeout_keep_alive=75,
    )
    config.load()
    reloader = None
    if tls is not None and config.ssl is not None:
        reloader = CertReloader(config.ssl, tls, reload_interval)
        reloader.start()
    return uvicorn.Server(config), reloader
