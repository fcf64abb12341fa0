"""Dispatch of admission requests to the handlers the features register.

Handlers are keyed by kind key (``"PersistentVolumeClaim"``,
``"CephBlockPool.ceph.rook.io"``) and operation.  A kind or operation nobody
registered is allowed untouched: the webhook configurations scope what the API
server sends, and an unknown kind must never be denied by accident.

Failure policy on an unexpected exception (the answer always echoes the uid):
* validating: denied with code 500 (fail closed: a guarded DELETE is never let
  through because our code broke);
* mutating: allowed without a patch and with a warning (a broken default must not
  block PVC creation; the chart's mutator is ``failurePolicy: Ignore`` too).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field

from kustodian.logs import about
from kustodian.webhook.review import AdmissionRequest, Answer, allowed, denied, patched
from kustodian.webhook.trust import identity_problem, nesting_problem

log = logging.getLogger(__name__)

Handler = Callable[[AdmissionRequest], Answer]

# Set while handlers run in a worker thread (``webhook.app``), where slow work is allowed.
OFF_LOOP: ContextVar[bool] = ContextVar("kustodian_off_loop", default=False)


class SlowPath(Exception):
    """Raised by a handler that would do work proportional to the cluster on the event loop.

    The app re-runs the whole request in a worker thread (``OFF_LOOP`` set), so a decision
    over 50,000 dependents never stalls ``/healthz`` or the reviews queued behind it.
    """


def off_loop() -> bool:
    return OFF_LOOP.get()
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


@dataclass
class Registry:
    validators: dict[tuple[str, str], list[Handler]] = field(default_factory=dict)
    mutators: dict[tuple[str, str], list[Handler]] = field(default_factory=dict)
    # every registered kind, for the /readyz cache checks and the chart rules
    kinds: set[str] = field(default_factory=set)

    def validate(self, kind: str, operations: Iterable[str], handler: Handler) -> None:
        self._add(self.validators, kind, operations, handler)

    def mutate(self, kind: str, operations: Iterable[str], handler: Handler) -> None:
        self._add(self.mutators, kind, operations, handler)

    def _add(self, table: dict[tuple[str, str], list[Handler]], kind: str, operations: Iterable[str],
             handler: Handler) -> None:
        for op in operations:
            if op not in OPERATIONS:
                raise ValueError(f"unknown admission operation {op!r}")
            table.setdefault((kind, op), []).append(handler)
        self.kinds.add(kind)

    def run_validation(self, req: AdmissionRequest) -> Answer:
        handlers = self.validators.get((req.kind_key, req.operation))
        if not handlers:
            return allowed()
        problem = _untrusted(req)
        if problem is not None:  # fail closed: a guarded request is refused, never judged on a forgery
            log.warning("refused an inconsistent %s %s review (uid %s): %s", req.operation,
                        req.kind_key[:100], req.uid[:64], problem)
            return denied(f"kustodian: inconsistent admission review: {problem}", code=400,
                          reason="BadRequest")
        warnings: list[str] = []
        for handler in handlers:
            try:
                answer = handler(req)
            except SlowPath:
                raise
            except Exception:
                log.exception("validating handler %s failed for %s %s %s/%s (uid %s)",
                              getattr(handler, "__qualname__", handler), req.operation, req.kind_key,
                              req.namespace, req.name, req.uid,
                              extra={**about(req.kind_key, req.namespace, req.name), "uid": req.uid})
                return Answer(allowed=False, code=500, reason="InternalError", decision="error",
                              message=f"kustodian could not evaluate this {req.operation} "
                                      f"(internal error, uid {req.uid}); refusing to be safe")
            if not answer.allowed:
                return answer
            warnings.extend(answer.warnings)
        return allowed(warnings=tuple(warnings))

    def validate_now(self, req: AdmissionRequest) -> Answer:
        """``run_validation`` for callers without an event loop (CLI, tests): slow work runs here."""
        token = OFF_LOOP.set(True)
        try:
            return self.run_validation(req)
        finally:
            OFF_LOOP.reset(token)

    def run_mutation(self, req: AdmissionRequest) -> Answer:
        handlers = self.mutators.get((req.kind_key, req.operation))
        if not handlers:
            return allowed()
        problem = _untrusted(req)
        if problem is not None:  # mutators fail open: no patch, said so
            log.warning("no defaults for an inconsistent %s %s review (uid %s): %s", req.operation,
                        req.kind_key[:100], req.uid[:64], problem)
            return Answer(allowed=True, decision="error",
                          warnings=("kustodian: inconsistent admission review, no defaults applied: "
                                    f"{problem}",))
        ops: list[dict[str, object]] = []
        warnings: list[str] = []
        for handler in handlers:
            try:
                answer = handler(req)
            except Exception:
                log.exception("mutating handler %s failed for %s %s %s/%s (uid %s)",
                              getattr(handler, "__qualname__", handler), req.operation, req.kind_key,
                              req.namespace, req.name, req.uid,
                              extra={**about(req.kind_key, req.namespace, req.name), "uid": req.uid})
                return Answer(allowed=True, decision="error",
                              warnings=("kustodian could not apply its defaults (internal error)",))
            if not answer.allowed:
                return answer
            ops.extend(answer.patch)
            warnings.extend(answer.warnings)
        return patched(ops, warnings=tuple(warnings))


def _untrusted(req: AdmissionRequest) -> str | None:
    subject = req.old_object if req.operation == "DELETE" else req.object
    problem = identity_problem(req.operation, req.name, req.namespace, subject, req.kind_key)
    if problem is None:
        for doc in (req.object, req.old_object):
            problem = nesting_problem(doc)
            if problem is not None:
                return f"the object is {problem}"
    return problem


__all__ = ["Handler", "Registry", "denied"]
