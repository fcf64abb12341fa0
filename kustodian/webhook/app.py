"""The FastAPI application: ``/validate``, ``/mutate``, ``/healthz``, ``/readyz``, ``/metrics``.

The admission endpoints read the raw body and decode it with orjson, validate only
the envelope, and answer with pre-encoded bytes: no response models, no thread
pool for ordinary reviews, no API call.  A big body (over ``OFFLOAD_BYTES``, or of unknown
length) is decoded and decided in a worker thread, at most ``HEAVY_AT_ONCE`` together.
A small review is parsed and checked once, on the event loop; a handler with no answer ready
(a deletion decision not memoised yet) answers ``PendingAnswer``, and only that remaining work runs
in a worker thread.
Two error channels (kopf, controller-runtime): a body that is
not an AdmissionReview v1 an API server could send (``parse_review``: bad JSON, a field of
the wrong type, an object field of a type Kubernetes' schema excludes) is an HTTP 400
``{"error": reason, "fields": [path, ...]}``; a policy decision is an HTTP 200 whose
``response`` echoes the request ``uid``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import anyio.to_thread
import orjson
from fastapi import FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError
from starlette.requests import ClientDisconnect

from kustodian.kube.kinds import FollowedKinds
from kustodian.logs import about
from kustodian.runtime import Checks
from kustodian.webhook.metrics import WebhookMetrics
from kustodian.webhook.registry import PendingAnswer, Registry
from kustodian.webhook.review import (
    AdmissionRequest,
    AdmissionReview,
    Answer,
    MalformedReview,
    envelope_problems,
    review_response,
)
from kustodian.webhook.shapes import object_problems

log = logging.getLogger(__name__)

JSON = "application/json"
#: bodies up to this size are decided on the event loop (a few hundred microseconds)
OFFLOAD_BYTES = 256 * 1024
HEAVY_AT_ONCE = 2
LOG_VALUE_CHARS = 512
#: a 400's reason is cut to this many characters (it names at most ``MalformedReview.LIMIT`` fields)
MAX_ERROR_CHARS = 4096


def add_freshness(readiness: Checks, kinds: FollowedKinds) -> None:
    """Not ready while any cache is catching up; list stale and unserved kinds in ``/readyz``.

    A ghost (a CRD gone under cached objects) is listed but does not make the replica
    unready: every replica would stay unready until the CRD returns, and with no endpoints
    the API server would fail *every* call to the webhook (PVC validation included), not
    just the deletes that read the ghost, which the guard refuses on its own.
    """
    readiness.add("caches-fresh", lambda: not kinds.stale(ghosts=False))
    readiness.note("stale kinds",
                   lambda: ", ".join(f"{k} ({s:.1f}s)" for k, s in sorted(kinds.stale().items())))
    readiness.note("unserved rule kinds", lambda: ", ".join(kinds.unserved()))


def _bad_request(metrics: WebhookMetrics, webhook: str, error: MalformedReview) -> Response:
    """The 400 of a malformed review: the reason (``error``) and every field path it names."""
    metrics.bad_requests.labels(webhook).inc()
    body = {"error": clip(f"not an AdmissionReview v1: {error}", MAX_ERROR_CHARS),
            "fields": [clip(path) for path in error.fields]}
    return Response(orjson.dumps(body), status_code=400, media_type=JSON)


def parse_review(body: bytes) -> AdmissionRequest:
    """Decode and validate an AdmissionReview v1 and the fields of its objects the handlers read;
    raise ``MalformedReview`` (a ``ValueError``) naming every field that is wrong."""
    if not body:
        raise MalformedReview(["empty body: expected an AdmissionReview v1"])
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedReview([f"body is not JSON: {exc}"]) from exc
    if not isinstance(doc, dict):
        raise MalformedReview(["body is not a JSON object"])
    try:
        req = AdmissionReview.model_validate(doc).request
    except ValidationError as exc:
        raise envelope_problems(exc) from exc
    malformed = object_problems(req)
    if malformed is not None:
        raise malformed
    return req


async def _read(request: Request, limit: int, metrics: WebhookMetrics) -> bytes | Response:
    """The body, or a 413 if it passes ``limit`` (the server refuses it earlier; this is the floor)."""
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                metrics.rejected_connections.labels("body-too-large").inc()
                return Response(orjson.dumps({"error": f"request body exceeds the limit of {limit} bytes"}),
                                status_code=413, media_type=JSON)
            chunks.append(chunk)
    except ClientDisconnect:
        return Response(status_code=400)
    return b"".join(chunks)


def clip(text: str, limit: int = LOG_VALUE_CHARS) -> str:
    """``text`` cut to ``limit`` characters: request values are echoed into logs, never whole."""
    return text if len(text) <= limit else f"{text[:limit]}...({len(text) - limit} more)"


def create_app(registry: Registry, *, readiness: Checks | None = None,
               metrics: WebhookMetrics | None = None, max_body_bytes: int = 7 * 1024 * 1024) -> FastAPI:
    readiness = readiness or Checks()
    metrics = metrics or WebhookMetrics()
    app = FastAPI(title="kustodian webhook", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.registry = registry
    app.state.readiness = readiness
    app.state.metrics = metrics

    body_limit = max_body_bytes
    # big bodies are decoded and decided in a worker thread, a few at a time: the event loop
    # keeps answering small reviews and probes, and at most ``HEAVY_AT_ONCE`` big bodies
    # (each up to the body limit, several times that once decoded) are in memory together
    heavy = asyncio.Semaphore(HEAVY_AT_ONCE)

    def serve(webhook: str, run: Callable[[AdmissionRequest], Answer | PendingAnswer]
              ) -> Callable[[Request], Awaitable[Response]]:
        requests = metrics.requests
        latency = metrics.latency

        def respond(req: AdmissionRequest, answer: Answer, started: float) -> Response:
            payload = review_response(req.uid, answer)
            requests.labels(webhook, req.operation, req.kind_key, answer.decision or "allowed").inc()
            latency.labels(webhook, req.operation).observe(time.perf_counter() - started)
            if not answer.allowed:
                log.info("%s denied %s %s %s/%s by %s: %s", webhook, req.operation, clip(req.kind_key),
                         clip(req.namespace), clip(req.name), clip(req.user_info.username),
                         clip(answer.message),
                         extra={**about(req.kind_key, req.namespace, req.name), "operation": req.operation,
                                "user": clip(req.user_info.username), "decision": "denied"})
            return Response(payload, media_type=JSON)

        def decide(body: bytes, started: float) -> Response | tuple[AdmissionRequest, PendingAnswer]:
            """The answer, or the request with the work its answer still needs (``PendingAnswer``),
            which the caller runs where it may: never parsed or checked a second time."""
            try:
                req = parse_review(body)
            except MalformedReview as exc:
                log.info("%s: rejected a malformed review: %s", webhook, clip(str(exc)))
                return _bad_request(metrics, webhook, exc)
            answer = run(req)
            if isinstance(answer, PendingAnswer):
                return req, answer
            return respond(req, answer, started)

        def decide_off_loop(body: bytes, started: float) -> Response:
            got = decide(body, started)
            if isinstance(got, Response):
                return got
            req, pending = got  # already in a worker thread: compute here
            return respond(req, pending.compute(), started)

        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            declared = request.headers.get("content-length")
            small = declared is not None and declared.isdigit() and int(declared) <= OFFLOAD_BYTES
            if small:
                body = await _read(request, body_limit, metrics)
                if isinstance(body, Response):
                    return body
                got = decide(body, started)
                if isinstance(got, Response):
                    return got
                req, pending = got
                return respond(req, await asyncio.to_thread(pending.compute), started)
            async with heavy:
                body = await _read(request, body_limit, metrics)
                if isinstance(body, Response):
                    return body
                return await anyio.to_thread.run_sync(decide_off_loop, body, started)

        return endpoint

    # plain Starlette routes: the endpoints take the Request and return a Response, so FastAPI's
    # per-request dependency solving and response handling around them would be pure overhead on
    # the admission path (issue 46: the HTTP stack was most of an answer's CPU)
    app.add_route("/validate", serve("validate", registry.run_validation), methods=["POST"])
    app.add_route("/mutate", serve("mutate", registry.run_mutation), methods=["POST"])

    async def healthz(request: Request) -> Response:
        return Response(b"ok", media_type="text/plain")

    app.add_route("/healthz", healthz, methods=["GET"])

    @app.get("/readyz")
    async def readyz() -> Response:
        failing = readiness.failing()
        body = "\n".join([("not ready: " + ", ".join(failing)) if failing else "ok", *readiness.details()])
        return Response(body.encode(), status_code=503 if failing else 200, media_type="text/plain")

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app
