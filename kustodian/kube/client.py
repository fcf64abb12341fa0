"""The one place Kustodian talks to the Kubernetes API server.

Built on a synchronous ``httpx.Client`` (thread-safe, HTTP keep-alive) and orjson:
responses are decoded straight into plain ``dict``s.  The official client's model
deserialisation costs ~10x more CPU on large lists and drops fields it does not
know, which a custodian of CRDs cannot afford.

Writes that could hurt carry preconditions (``uid`` / ``resourceVersion``), and
:func:`retry_on_conflict` re-reads and re-applies a change after a 409.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, TypeVar

import httpx
import orjson

from kustodian.kube.config import ClusterConfig
from kustodian.kube.errors import Conflict, Fenced, KubeError, NotFound, Unavailable, from_status
from kustodian.kube.resources import Resource
from kustodian.version import user_agent as versioned_user_agent

log = logging.getLogger(__name__)

Obj = dict[str, Any]
T = TypeVar("T")

LIST_PAGE_SIZE = 500
WATCH_TIMEOUT_SECONDS = 290

_PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


def keepalive_options() -> list[tuple[int, int, int]]:
    """TCP keepalive on every socket to the API server (defence in depth; ``kube.liveness`` is the
    guarantee): a socket whose peer is gone without a FIN/RST (a vanished backend behind a
    virtual IP, a lost NAT entry) fails after 5 s idle + 3 unanswered probes 2 s apart, and
    sent data unacknowledged for 11 s fails it too (``TCP_USER_TIMEOUT``).  The probes also keep
    a NAT entry from expiring under an idle watch.  Options the platform lacks are left out."""
    opts = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", 5), ("TCP_KEEPINTVL", 2), ("TCP_KEEPCNT", 3),
                        ("TCP_USER_TIMEOUT", 11_000)):
        option = getattr(socket, name, None)
        if option is not None:
            opts.append((socket.IPPROTO_TCP, option, value))
    return opts


class _BearerAuth(httpx.Auth):
    def __init__(self, source: Callable[[], str | None]) -> None:
        self._source = source

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        value = self._source()
        if value:
            request.headers["Authorization"] = value
        yield request


class KubeClient:
    """Raw-JSON REST client.  Safe to share between threads.

    ``user_agent`` is the product token (the component: ``kustodian-webhook``); the version,
    platform and commit are appended (``kustodian-webhook/0.2.0 (linux/x86_64) kustodian/<commit>``,
    :func:`kustodian.version.user_agent`), so the API server's audit log names the build."""

    def __init__(self, config: ClusterConfig, *, timeout: float = 30.0,
                 user_agent: str = "kustodian") -> None:
        self.config = config
        self.timeout = timeout
        #: set by a leader-elected Manager: deletes are sent only while it answers True
        self.fence: Callable[[], bool] | None = None
        tls = _ssl_context(config)
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=20)
        self._http = httpx.Client(
            base_url=config.server,
            verify=tls,  # for a proxy taken from the environment, as before
            limits=limits,
            auth=_BearerAuth(config.authorization),
            timeout=httpx.Timeout(timeout, connect=10.0),
            headers={"User-Agent": versioned_user_agent(user_agent), "Accept": "application/json"},
            transport=httpx.HTTPTransport(verify=tls, limits=limits, socket_options=keepalive_options()),
        )
        # called after every request with (method, status code or "<error>", seconds): the
        # Manager turns these into client-go's rest_client_* metrics
        self.observers: list[Callable[[str, str, float], None]] = []

    def close(self) -> None:
        self._http.close()

    def set_timeout(self, seconds: float) -> None:
        """Bound every later call (each of connect, write, read) by ``seconds``; watches keep theirs."""
        self.timeout = seconds
        self._http.timeout = httpx.Timeout(seconds)

    # -- plumbing ---------------------------------------------------------------------------

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                body: Any = None, content_type: str = "application/json",
                timeout: float | None = None, decode: Callable[[bytes], Obj] | None = None) -> Obj:
        content = None if body is None else orjson.dumps(body)
        headers = {"Content-Type": content_type} if content is not None else None
        started = time.perf_counter()
        extra: dict[str, Any] = {} if timeout is None else {"timeout": httpx.Timeout(timeout)}
        try:
            resp = self._http.request(method, path, params=_params(params), content=content, headers=headers,
                                      **extra)
        except httpx.TransportError as exc:
            self._observe(method, "<error>", started)
            raise Unavailable(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        self._observe(method, str(resp.status_code), started)
        return _decode(resp, decode)

    def _observe(self, method: str, code: str, started: float) -> None:
        elapsed = time.perf_counter() - started
        for observe in self.observers:
            observe(method, code, elapsed)

    # -- reads ------------------------------------------------------------------------------

    def get(self, res: Resource, name: str, namespace: str | None = None, *,
            timeout: float | None = None) -> Obj:
        return self.request("GET", res.path(namespace, name), timeout=timeout)

    def list_pages(self, res: Resource, namespace: str | None = None, *,
                   label_selector: str | None = None, field_selector: str | None = None,
                   limit: int = LIST_PAGE_SIZE,
                   decode: Callable[[bytes], Obj] | None = None) -> Iterator[Obj]:
        """Yield each page (a List object) of a paginated list.  A list that outlasts its
        ``continue`` token (etcd compacted past it) raises ``Gone``; the caller lists again.
        ``decode`` reads a page's body (``kube.decode.page_decoder``: only what a cache keeps)."""
        params: dict[str, Any] = {"limit": limit, "labelSelector": label_selector,
                                  "fieldSelector": field_selector}
        while True:
            page = self.request("GET", res.path(namespace), params=params, decode=decode)
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            params["continue"] = token

    def list(self, res: Resource, namespace: str | None = None, **kw: Any) -> tuple[list[Obj], str]:
        """All items plus the list's resourceVersion (to start a watch from)."""
        items: list[Obj] = []
        rv = ""
        for page in self.list_pages(res, namespace, **kw):
            items.extend(page.get("items") or [])
            rv = str((page.get("metadata") or {}).get("resourceVersion") or "")
        return items, rv

    def watch(self, res: Resource, namespace: str | None = None, *, resource_version: str,
              timeout_seconds: int = WATCH_TIMEOUT_SECONDS, label_selector: str | None = None,
              field_selector: str | None = None,
              on_open: Callable[[httpx.Response], None] | None = None) -> Iterator[Obj]:
        """Stream watch events (``{"type": ..., "object": ...}``) until the server ends the watch.

        Connection drops raise :class:`Unavailable`; an expired resourceVersion answered
        with HTTP 410 raises :class:`Gone` (an in-stream ERROR event is yielded as is).
        """
        params = _params({
            "watch": "true", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds, "labelSelector": label_selector,
            "fieldSelector": field_selector,
        })
        timeout = httpx.Timeout(10.0, read=timeout_seconds + 30.0)
        # ``Connection: close``: once the watch ends its connection is closed, never handed
        # back to the pool.  ``on_open`` lets the owner shut the socket down from another
        # thread (``WatchCache.stop``) at any time, even after the watch ended; a pooled
        # socket would by then carry somebody else's request.  One TLS handshake per watch.
        try:
            with self._http.stream("GET", res.path(namespace), params=params, timeout=timeout,
                                   headers={"Connection": "close"}) as resp:
                if on_open is not None:
                    on_open(resp)  # lets the owner close the stream from another thread
                if resp.status_code >= 300:
                    resp.read()
                    _decode(resp)
                buf = b""
                for chunk in resp.iter_raw():
                    buf += chunk
                    while True:
                        nl = buf.find(b"\n")
                        if nl < 0:
                            break
                        line, buf = buf[:nl], buf[nl + 1:]
                        if line.strip():
                            yield orjson.loads(line)
                if buf.strip():
                    yield orjson.loads(buf)
        except httpx.TransportError as exc:
            raise Unavailable(f"watch {res.key}: {type(exc).__name__}: {exc}") from exc
        except orjson.JSONDecodeError as exc:
            raise Unavailable(f"watch {res.key}: undecodable event: {exc}") from exc

    def round_trip(self, timeout: float) -> None:
        """``GET /version`` bounded by ``timeout`` (``kube.liveness``): cheap, served by every API
        server, and allowed to every client by the default ``system:public-info-viewer`` role.
        Any HTTP answer proves the server answered (a cluster that refuses it still answers 401 or
        403); only a transport failure or a timeout raises (:class:`Unavailable`)."""
        try:
            self.request("GET", "/version", timeout=timeout)
        except Unavailable:
            raise
        except KubeError:
            return

    def has_resource(self, res: Resource) -> bool:
        """Whether the server serves ``res`` (e.g. whether a CRD is installed)."""
        path = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
        try:
            doc = self.request("GET", path)
        except NotFound:
            return False
        return any(r.get("name") == res.plural for r in doc.get("resources") or [])

    # -- writes -----------------------------------------------------------------------------

    def create(self, res: Resource, obj: Mapping[str, Any], namespace: str | None = None, *,
               dry_run: bool = False, timeout: float | None = None) -> Obj:
        ns = namespace or (obj.get("metadata") or {}).get("namespace")
        return self.request("POST", res.path(ns), body=obj, params={"dryRun": "All" if dry_run else None},
                            timeout=timeout)

    def replace(self, res: Resource, obj: Mapping[str, Any], *, subresource: str = "",
                timeout: float | None = None) -> Obj:
        """PUT the object; its ``metadata.resourceVersion`` makes this a compare-and-swap."""
        meta = obj.get("metadata") or {}
        return self.request("PUT", res.path(meta.get("namespace"), meta["name"], subresource), body=obj,
                            timeout=timeout)

    def patch(self, res: Resource, name: str, patch: Any, namespace: str | None = None, *,
              patch_type: str = "merge", subresource: str = "", field_manager: str = "kustodian",
              force: bool = False) -> Obj:
        params: dict[str, Any] = {"fieldManager": field_manager}
        if patch_type == "apply":
            params["force"] = "true" if force else None
        return self.request("PATCH", res.path(namespace, name, subresource), body=patch,
                            content_type=_PATCH_TYPES[patch_type], params=params)

    def delete(self, res: Resource, name: str, namespace: str | None = None, *,
               uid: str | None = None, resource_version: str | None = None,
               dry_run: bool = False, propagation: str | None = None) -> Obj:
        """DELETE with optional ``uid`` / ``resourceVersion`` preconditions (409 when they fail).

        With a ``fence`` set (a leader-elected process) the DELETE is sent only while the fence
        holds; otherwise :class:`Fenced` is raised and nothing is sent.
        """
        if self.fence is not None and not self.fence():
            raise Fenced(f"DELETE {res.path(namespace, name)}: not sent, this replica may no longer "
                         "hold its Lease")
        opts: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        pre = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if pre:
            opts["preconditions"] = pre
        if dry_run:
            opts["dryRun"] = ["All"]
        if propagation:
            opts["propagationPolicy"] = propagation
        return self.request("DELETE", res.path(namespace, name), body=opts)


def retry_on_conflict(read: Callable[[], T], write: Callable[[T], Obj], *, attempts: int = 5,
                      backoff: float = 0.05) -> Obj:
    """Read fresh state, compute and write a change; on 409 read again and retry.

    ``write`` must send the resourceVersion it read (a PUT, or a patch carrying
    ``metadata.resourceVersion``) so that a concurrent change yields a 409 instead of
    being overwritten.
    """
    last: Conflict | None = None
    for attempt in range(attempts):
        try:
            return write(read())
        except Conflict as exc:
            last = exc
            log.debug("conflict, retrying with a fresh read (attempt %d): %s", attempt + 1, exc)
            time.sleep(backoff * (2 ** attempt))
    assert last is not None
    raise last


def _ssl_context(config: ClusterConfig) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=config.ca_file if config.verify else None)
    if not config.verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if config.cert_file and config.key_file:
        ctx.load_cert_chain(config.cert_file, config.key_file)
    return ctx


def _params(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not params:
        return None
    return {k: v for k, v in params.items() if v is not None}


def _decode(resp: httpx.Response, decode: Callable[[bytes], Obj] | None = None) -> Obj:
    body: Any
    try:
        if not resp.content:
            body = {}
        elif decode is not None and resp.status_code < 300:  # an error is a Status: read it all
            body = decode(resp.content)
        else:
            body = orjson.loads(resp.content)
    except orjson.JSONDecodeError:
        body = {"message": resp.text[:500]}
    if resp.status_code >= 300:
        raise from_status(resp.status_code, body)
    if not isinstance(body, dict):
        raise KubeError(f"unexpected response body of type {type(body).__name__}")
    return body
