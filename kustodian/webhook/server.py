"""Serving the app over TLS with uvicorn (uvloop + httptools): request limits, certificate reload.

**Limits.**  uvicorn alone reads any body to the end into memory and has no header or body
timeout: one requester could OOM the webhook with a 100 MB review or hold hundreds of
connections open byte by byte.  :class:`RequestLimits` closes that, at the protocol level
(before the app sees anything, Go ``net/http`` style):

* a body larger than ``max_body_bytes`` (controller-runtime's 7 MiB) is answered ``413`` as
  soon as the headers declare it (or, for a chunked body, as soon as it passes the cap); the
  rest of the body is read and thrown away (bounded) so the client sees the answer, never
  buffered;
* the request line and headers must arrive within ``header_timeout`` and ``max_header_bytes``,
  the body within ``body_timeout``, a kept-alive connection may idle ``idle_timeout``, a TLS
  handshake may take ``handshake_timeout``; past any of them the connection is closed.

Every refusal is counted in ``kustodian_webhook_rejected_connections{reason}``.

**Certificates.**  uvicorn builds one ``ssl.SSLContext`` at start.  ``CertReloader`` watches
the certificate and key files and loads a new pair into that same context: every new TLS
handshake then uses it, connections already open keep theirs, nothing restarts.  A new pair
is first proven on a scratch context (key matches certificate, currently valid, expected
names present): ``load_cert_chain`` on the live context replaces the certificate before it
checks the key, so loading a mismatched pair there would break every handshake.  A bad pair
(half written, mismatched, expired, wrong name) is logged and ignored; the last good pair
stays in force.  :meth:`CertReloader.problem` says why the pair *in force* is unusable
(expired since, wrong name) and feeds ``/readyz``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import ssl
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
import uvicorn
from cryptography import x509
from fastapi import FastAPI
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from kustodian.runtime import Periodic

log = logging.getLogger(__name__)

MiB = 1024 * 1024


@dataclass(frozen=True)
class RequestLimits:
    """What one connection may cost the webhook (see the module docstring)."""

    max_body_bytes: int = 7 * MiB
    max_header_bytes: int = 64 * 1024
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    idle_timeout: float = 60.0
    handshake_timeout: float = 10.0
    #: a refused body up to this size is read and discarded so the client gets the 413;
    #: a larger one is cut off at once
    drain_bytes: int = 64 * MiB

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1 or self.max_header_bytes < 1024:
            raise ValueError("max_body_bytes must be >= 1 and max_header_bytes >= 1024")
        for name in ("header_timeout", "body_timeout", "idle_timeout", "handshake_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")


Rejected = Callable[[str], None]


def _answer(status: bytes, message: str) -> bytes:
    body = orjson.dumps({"error": message})
    return b"".join([b"HTTP/1.1 ", status, b"\r\ncontent-type: application/json\r\ncontent-length: ",
                     str(len(body)).encode(), b"\r\nconnection: close\r\n\r\n", body])


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits of :class:`RequestLimits`.

    States: *awaiting headers* (timer ``header_timeout``, from the connection or the
    request's first byte), *receiving the body* (timer ``body_timeout``), *in the app* (no
    timer: the app answers from memory), *idle* (uvicorn's keep-alive timer, set to
    ``idle_timeout``), *draining* a refused body (timer ``body_timeout``, bytes discarded).
    """

    limits: RequestLimits = RequestLimits()
    rejected: Rejected = staticmethod(lambda reason: None)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._awaiting_headers = True
        self._header_bytes = 0
        self._body_bytes = 0
        self._draining: int | None = None  # bytes of a refused body still to discard

    # -- timers ---------------------------------------------------------------------------------

    def _arm(self, seconds: float, reason: str) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expired, reason)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self, reason: str) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        self.rejected(reason)
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.close()

    def _refuse(self, status: bytes, reason: str, message: str, *, drain: int | None) -> None:
        """Answer now and stop reading the request: discard up to ``drain`` more bytes, then close."""
        self.rejected(reason)
        log.info("refused a request from %s: %s", self.client, message)
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the app, if it started, reads a disconnect
            self.cycle.body = bytearray()
            self.cycle.message_event.set()
        self.transport.write(_answer(status, message))
        if drain is None or drain <= 0:
            self._disarm()
            self.transport.close()
            return
        self._draining = drain
        self._arm(self.limits.body_timeout, "body-timeout")

    def _discard(self, n: int) -> None:
        assert self._draining is not None
        self._draining -= n
        if self._draining <= 0:
            self._disarm()
            self.transport.close()

    # -- asyncio.Protocol -----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.limits.header_timeout, "header-timeout")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._draining is not None:
            self._discard(len(data))
            return
        if self.transport.is_closing():
            return
        super().data_received(data)
        if self._awaiting_headers and self._draining is None and not self.transport.is_closing():
            self._header_bytes += len(data)
            if self._header_bytes > self.limits.max_header_bytes:
                self._refuse(b"431 Request Header Fields Too Large", "headers-too-large",
                             f"request headers exceed {self.limits.max_header_bytes} bytes", drain=None)

    # -- httptools callbacks --------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._awaiting_headers = True
        self._body_bytes = 0
        if self._timer is None:
            self._arm(self.limits.header_timeout, "header-timeout")

    def on_headers_complete(self) -> None:
        self._awaiting_headers = False
        self._header_bytes = 0
        self._disarm()
        declared = None
        for name, value in self.headers:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = None
        cap = self.limits.max_body_bytes
        if declared is not None and declared > cap:
            drain = declared if declared <= self.limits.drain_bytes and not self.expect_100_continue else None
            self._refuse(b"413 Request Entity Too Large", "body-too-large",
                         f"request body of {declared} bytes exceeds the limit of {cap} bytes", drain=drain)
            return
        super().on_headers_complete()
        self._arm(self.limits.body_timeout, "body-timeout")

    def on_body(self, body: bytes) -> None:
        if self._draining is not None:
            self._discard(len(body))
            return
        if self.transport.is_closing():  # refused: the rest of this read goes nowhere
            return
        self._body_bytes += len(body)
        if self._body_bytes > self.limits.max_body_bytes:
            self._refuse(b"413 Request Entity Too Large", "body-too-large",
                         f"request body exceeds the limit of {self.limits.max_body_bytes} bytes", drain=None)
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        if self._draining is not None:
            self._disarm()
            self.transport.close()
            return
        self._disarm()
        if self.transport.is_closing():
            return
        super().on_message_complete()


def limited_protocol(limits: RequestLimits, rejected: Rejected) -> type[LimitedHttpToolsProtocol]:
    """A protocol class for ``uvicorn.Config(http=...)`` with these limits and this counter."""
    return type("LimitedHttpToolsProtocol", (LimitedHttpToolsProtocol,),
                {"limits": limits, "rejected": staticmethod(rejected)})


class LimitedServer(uvicorn.Server):
    """uvicorn's server with a TLS handshake deadline (uvicorn passes none: asyncio's 60 s)."""

    handshake_timeout: float = RequestLimits.handshake_timeout

    async def startup(self, sockets: list[Any] | None = None) -> None:
        loop = asyncio.get_running_loop()
        if self.config.ssl is None:
            await super().startup(sockets)
            return
        original = loop.create_server
        # uvicorn calls loop.create_server itself; this is the one place to pass the deadline
        loop.create_server = functools.partial(  # type: ignore[method-assign]
            original, ssl_handshake_timeout=self.handshake_timeout)
        try:
            await super().startup(sockets)
        finally:
            del loop.create_server  # back to the class's method


@dataclass(frozen=True)
class TLSFiles:
    cert: str
    key: str


@dataclass(frozen=True)
class ServingPair:
    """What is known about the certificate in force."""

    not_before: datetime
    not_after: datetime
    names: frozenset[str]

    def problem(self, now: datetime, expected: Sequence[str]) -> str | None:
        if now < self.not_before:
            return f"serving certificate not valid before {self.not_before.isoformat()}"
        if now >= self.not_after:
            return f"serving certificate expired at {self.not_after.isoformat()}"
        missing = [n for n in expected if n not in self.names]
        if missing:
            return f"serving certificate does not name {', '.join(missing)}"
        return None


def describe_pair(cert_pem: bytes) -> ServingPair:
    cert = x509.load_pem_x509_certificate(cert_pem)
    names: set[str] = set()
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names.update(str(n) for n in san.get_values_for_type(x509.DNSName))
        names.update(str(ip) for ip in san.get_values_for_type(x509.IPAddress))
    except x509.ExtensionNotFound:
        pass
    return ServingPair(cert.not_valid_before_utc, cert.not_valid_after_utc, frozenset(names))


class CertReloader:
    """Hot-reload the serving pair into uvicorn's context; keep the last good pair on a bad one."""

    def __init__(self, context: ssl.SSLContext, files: TLSFiles, interval: float = 2.0, *,
                 expected_names: Sequence[str] = (), now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 on_loaded: Callable[[ServingPair | None], None] | None = None) -> None:
        self.context = context
        self.files = files
        self.interval = interval
        self.expected_names = tuple(expected_names)
        self._now = now
        self._on_loaded = on_loaded
        self.loaded = threading.Event()
        self.reloads = 0
        self.refused = 0
        self.in_force: ServingPair | None = None
        self._stamp = self._mtimes()
        self._refused_stamp = (0, 0)
        self._loop = Periodic("cert-reloader", self._check_once, interval, needs_leader=False,
                              immediate=False, join_timeout=1)
        try:  # uvicorn loaded the initial pair from these files
            self.in_force = describe_pair(self._read()[0])
        except (OSError, ValueError) as exc:
            log.warning("cannot read the serving certificate %s: %s", files.cert, exc)
        self.loaded.set()
        if self.in_force is not None and self._on_loaded is not None:
            self._on_loaded(self.in_force)

    def _mtimes(self) -> tuple[int, int]:
        try:
            return (os.stat(self.files.cert).st_mtime_ns, os.stat(self.files.key).st_mtime_ns)
        except OSError:
            return (0, 0)

    def _read(self) -> tuple[bytes, bytes]:
        with open(self.files.cert, "rb") as c, open(self.files.key, "rb") as k:
            return c.read(), k.read()

    def problem(self) -> str | None:
        """Why the pair in force cannot serve (for ``/readyz``), or None."""
        if self.in_force is None:
            return "no readable serving certificate"
        return self.in_force.problem(self._now(), self.expected_names)

    def usable(self) -> bool:
        problem = self.problem()
        if problem is not None:
            log.warning("not ready: %s", problem)
        return problem is None

    def check(self) -> bool:
        """Reload when the files changed and the new pair is good; True when it was loaded."""
        stamp = self._mtimes()
        if stamp in (self._stamp, self._refused_stamp, (0, 0)):
            return False
        try:
            cert_pem, key_pem = self._read()
            pair = describe_pair(cert_pem)
        except (OSError, ValueError) as exc:
            self._refuse(stamp, f"cannot be read: {exc}")
            return False
        bad = pair.problem(self._now(), self.expected_names)
        if bad is not None:
            self._refuse(stamp, bad)
            return False
        # load exactly the bytes checked, first into a scratch context, then into the live one
        with tempfile.TemporaryDirectory(prefix="kustodian-tls-") as tmp:
            cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            for path, data in ((cert_path, cert_pem), (key_path, key_pem)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
            try:
                ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert_path, key_path)
            except (ssl.SSLError, OSError) as exc:
                self._refuse(stamp, f"unusable pair: {exc}")
                return False
            self.context.load_cert_chain(cert_path, key_path)
        self._stamp = stamp
        self.in_force = pair
        self.reloads += 1
        log.info("reloaded the serving certificate from %s (valid until %s)", self.files.cert,
                 pair.not_after.isoformat())
        if self._on_loaded is not None:
            self._on_loaded(pair)
        return True

    def _refuse(self, stamp: tuple[int, int], why: str) -> None:
        # a key written after its certificate changes the stamp: the pair is tried again then
        self._refused_stamp = stamp
        self.refused += 1
        log.warning("new serving certificate in %s refused, the previous one stays in force: %s",
                    self.files.cert, why)

    def _check_once(self) -> None:
        try:
            if not self.check() and self._on_loaded is not None:
                self._on_loaded(self.in_force)  # expiry is also watched between changes
        except Exception:  # the reloader must outlive one bad file
            log.exception("certificate reload failed; the previous pair stays in force")

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()


def build_server(app: FastAPI, *, host: str, port: int, tls: TLSFiles | None,
                 graceful_timeout: int = 10, log_level: str = "warning",
                 reload_interval: float = 2.0, limits: RequestLimits | None = None,
                 expected_names: Sequence[str] = (),
                 on_cert_loaded: Callable[[ServingPair | None], None] | None = None,
                 ) -> tuple[uvicorn.Server, CertReloader | None]:
    """A uvicorn server for ``app`` with request limits; with ``tls`` the certificates are hot-reloaded."""
    limits = limits or RequestLimits()
    counter = app.state.metrics.rejected_connections  # every app is ``webhook.app.create_app``'s

    def rejected(reason: str) -> None:
        counter.labels(reason).inc()

    config = uvicorn.Config(
        app, host=host, port=port, loop="uvloop", http=limited_protocol(limits, rejected), lifespan="off",
        ssl_certfile=tls.cert if tls else None, ssl_keyfile=tls.key if tls else None,
        timeout_graceful_shutdown=graceful_timeout, log_level=log_level, access_log=False,
        timeout_keep_alive=max(1, round(limits.idle_timeout)),
        h11_max_incomplete_event_size=limits.max_header_bytes,
    )
    config.load()
    config.timeout_keep_alive = limits.idle_timeout  # type: ignore[assignment]  # call_later takes a float
    reloader = None
    if tls is not None and config.ssl is not None:
        reloader = CertReloader(config.ssl, tls, reload_interval, expected_names=expected_names,
                                on_loaded=on_cert_loaded)
        reloader.start()
        app.state.readiness.add("certificates-usable", reloader.usable)
    server = LimitedServer(config)
    server.handshake_timeout = limits.handshake_timeout
    app.state.body_limit = limits.max_body_bytes
    return server, reloader
