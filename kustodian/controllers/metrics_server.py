"""Serve a Prometheus registry on ``host:port`` at one path (upstream's ``--metrics-path``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return


def serve_metrics(address: str, path: str, registry: CollectorRegistry) -> WSGIServer | None:
    """Start a daemon thread serving ``registry`` at ``path``; ``address`` ``""`` disables it."""
    if not address:
        return None
    host, _, port = address.rpartition(":")
    metrics = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != path:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found\n"]
        result: Iterable[bytes] = metrics(environ, start_response)
        return result

    server = make_server(host or "0.0.0.0", int(port), app, handler_class=_Quiet)  # noqa: S104 - pod network
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
