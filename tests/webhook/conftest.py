"""A real TLS webhook for tests: certificates from ``certs``, uvicorn in a thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from kustodian.webhook.app import create_app
from kustodian.webhook.registry import Registry
from kustodian.webhook.server import CertReloader, TLSFiles, build_server
from tests.support import free_port, wait_for


@dataclass
class RunningServer:
    url: str
    ca: Path
    server: uvicorn.Server
    reloader: CertReloader | None
    thread: threading.Thread

    def client(self) -> httpx.Client:
        import ssl

        return httpx.Client(base_url=self.url, verify=ssl.create_default_context(cafile=str(self.ca)))

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        if self.reloader:
            self.reloader.stop()


def serve(app: object, tls_dir: Path, *, reload_interval: float = 0.1, **kw: Any) -> RunningServer:
    port = free_port()
    server, reloader = build_server(app, host="127.0.0.1", port=port,  # type: ignore[arg-type]
                                    tls=TLSFiles(str(tls_dir / "tls.crt"), str(tls_dir / "tls.key")),
                                    reload_interval=reload_interval, graceful_timeout=2, **kw)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "the webhook server to start", poll=0.01)
    assert server.started, "webhook server did not start"
    return RunningServer(f"https://127.0.0.1:{port}", tls_dir / "ca.crt", server, reloader, thread)


@pytest.fixture
def running(tls_dir: Path) -> Iterator[tuple[RunningServer, Registry]]:
    registry = Registry()
    srv = serve(create_app(registry), tls_dir)
    yield srv, registry
    srv.stop()
