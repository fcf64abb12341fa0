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


__all__ = ["Handler", "Registry", "denied"]
