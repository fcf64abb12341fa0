"""Dispatch of admission requests to the handlers the features register.

Handlers are keyed by kind key (``"PersistentVolumeClaim"``,
``"CephBlockPool.ceph.rook.io"``) and operation.  A kind or operation nobody
registered is allowed untouched: the webhook configurations scope what the API
server sends, and an unknown kind must never be denied by accident.

What a request is about is the resource the API server routed it by (``request.resource``:
group and plural, what the webhook configuration's rules match), not ``request.kind``:
a review whose kind disagrees with its resource was not sent by an API server, and is
refused as inconsistent when either names a registered kind (mutators: no patch, said
so), so no decision ever rests on a field that disagrees with the routing.  A kind's
resource is the one the chart's rules name (``policy.kinds.resource_name``), or the one
discovery served it under (``discovered``).

Failure policy on an unexpected exception (the answer always echoes the uid):
* validating: denied with code 500 (fail closed: a guarded DELETE is never let
  through because our code broke);
* mutating: allowed without a patch and with a warning (a broken default must not
  block PVC creation; the chart's mutator is ``failurePolicy: Ignore`` too).

A validating handler may answer ``PendingAnswer`` (no answer ready: compute it off the event
loop); the app then runs the rest of the review in a worker thread without parsing or
checking it again.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from kustodian.logs import about
from kustodian.policy.kinds import resource_name
from kustodian.webhook.review import AdmissionRequest, Answer, allowed, denied, patched
from kustodian.webhook.trust import identity_problem, nesting_problem

log = logging.getLogger(__name__)

Handler = Callable[[AdmissionRequest], Answer]


@dataclass(frozen=True)
class PendingAnswer:
    """A validating handler's answer that must be computed off the event loop.

    A handler first answers from what it holds ready (a memoised decision: a dict read, on the
    event loop); when it has nothing ready it returns ``PendingAnswer`` and the app runs ``compute``
    in a worker thread, once, so a decision over 50,000 dependents never stalls ``/healthz`` or
    the reviews queued behind it, and a review is parsed and checked only once either way.
    """

    compute: Callable[[], Answer]


Validator = Callable[[AdmissionRequest], Answer | PendingAnswer]

OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
_H = TypeVar("_H", Validator, Handler)


@dataclass
class Registry:
    validators: dict[tuple[str, str], list[Validator]] = field(default_factory=dict)
    mutators: dict[tuple[str, str], list[Handler]] = field(default_factory=dict)
    # every registered kind, for the /readyz cache checks and the chart rules
    kinds: set[str] = field(default_factory=set)
    #: ``(group, resource)`` -> the registered kind served there, as the chart's rules name it
    routes: dict[tuple[str, str], str] = field(default_factory=dict)
    #: the resource (plural) discovery serves a kind under, None when not served: a CRD whose
    #: plural is not the English one still routes (set by the webhook's wiring)
    discovered: Callable[[str], str | None] | None = None

    def validate(self, kind: str, operations: Iterable[str], handler: Validator) -> None:
        for op in self._operations(operations):
            self.validators.setdefault((kind, op), []).append(handler)
        self._register(kind)

    def mutate(self, kind: str, operations: Iterable[str], handler: Handler) -> None:
        for op in self._operations(operations):
            self.mutators.setdefault((kind, op), []).append(handler)
        self._register(kind)

    def _register(self, kind: str) -> None:
        self.kinds.add(kind)
        self.routes[(kind.partition(".")[2], resource_name(kind))] = kind

    def routed_kind(self, req: AdmissionRequest) -> str | None:
        """The registered kind ``req.resource`` names, or None (a resource nobody registered)."""
        group, resource = req.resource.group, req.resource.resource
        kind = self.routes.get((group, resource))
        if kind is None and self.discovered is not None:
            # a miss costs one pass over the registered kinds (a few dozen), never the cluster
            kind = next((k for k in sorted(self.kinds)
                         if k.partition(".")[2] == group and self.discovered(k) == resource), None)
        return kind

    def _route(self, req: AdmissionRequest, table: Mapping[tuple[str, str], Sequence[_H]]
               ) -> tuple[Sequence[_H], str | None]:
        """``(handlers, problem)``: the handlers of ``table`` for the kind ``req.resource`` routes to,
        or why the review is inconsistent: its kind is not the kind of its resource, and one of the
        two has handlers for the operation (a review no handler of either claims passes untouched)."""
        routed = self.routed_kind(req)
        handlers = table.get((routed, req.operation), ()) if routed is not None else ()
        named = req.kind_key
        if routed == named or not (handlers or table.get((named, req.operation))):
            return handlers, None
        res = req.resource
        where = f"{res.group}/{res.resource}" if res.group else res.resource
        serves = f"serves {routed}" if routed is not None else "is not a resource this webhook judges"
        return (), f"request.kind is {named[:100]!r} but request.resource {where[:100]!r} {serves}"

    @staticmethod
    def _operations(operations: Iterable[str]) -> list[str]:
        ops = list(operations)
        for op in ops:
            if op not in OPERATIONS:
                raise ValueError(f"unknown admission operation {op!r}")
        return ops

    def run_validation(self, req: AdmissionRequest) -> Answer | PendingAnswer:
        """The answer of every handler for ``req``, checked once against forgery; ``PendingAnswer`` when
        a handler has no answer ready (the rest of the handlers then run in ``compute``)."""
        handlers, problem = self._route(req, self.validators)
        if not handlers and problem is None:
            return allowed()
        problem = problem or _untrusted(req)
        if problem is not None:  # fail closed: a guarded request is refused, never judged on a forgery
            log.warning("refused an inconsistent %s %s review (uid %s): %s", req.operation,
                        req.kind_key[:100], req.uid[:64], problem)
            return denied(f"kustodian: inconsistent admission review: {problem}", code=400,
                          reason="BadRequest")
        return self._validate(req, handlers, 0, ())

    def _validate(self, req: AdmissionRequest, handlers: Sequence[Validator], first: int,
                  warnings: tuple[str, ...]) -> Answer | PendingAnswer:
        for i in range(first, len(handlers)):
            try:
                answer = handlers[i](req)
            except Exception:
                return _failed(handlers[i], req)
            if isinstance(answer, PendingAnswer):
                return PendingAnswer(functools.partial(self._resume, req, handlers, i, answer, warnings))
            if not answer.allowed:
                return answer
            warnings = (*warnings, *answer.warnings)
        return allowed(warnings=warnings)

    def _resume(self, req: AdmissionRequest, handlers: Sequence[Validator], i: int, pending: PendingAnswer,
                warnings: tuple[str, ...]) -> Answer:
        """Handler ``i``'s pending answer, then the handlers after it (off the event loop)."""
        try:
            answer = pending.compute()
        except Exception:
            return _failed(handlers[i], req)
        if not answer.allowed:
            return answer
        rest = self._validate(req, handlers, i + 1, (*warnings, *answer.warnings))
        return rest.compute() if isinstance(rest, PendingAnswer) else rest

    def validate_now(self, req: AdmissionRequest) -> Answer:
        """``run_validation`` for callers without an event loop (CLI, tests): pending work runs here."""
        answer = self.run_validation(req)
        return answer.compute() if isinstance(answer, PendingAnswer) else answer

    def run_mutation(self, req: AdmissionRequest) -> Answer:
        handlers, problem = self._route(req, self.mutators)
        if not handlers and problem is None:
            return allowed()
        problem = problem or _untrusted(req)
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


def _failed(handler: Validator, req: AdmissionRequest) -> Answer:
    """Fail closed on a bug: a guarded request is never let through because our code broke."""
    log.exception("validating handler %s failed for %s %s %s/%s (uid %s)",
                  getattr(handler, "__qualname__", handler), req.operation, req.kind_key,
                  req.namespace, req.name, req.uid,
                  extra={**about(req.kind_key, req.namespace, req.name), "uid": req.uid})
    return Answer(allowed=False, code=500, reason="InternalError", decision="error",
                  message=f"kustodian could not evaluate this {req.operation} "
                          f"(internal error, uid {req.uid}); refusing to be safe")


def _untrusted(req: AdmissionRequest) -> str | None:
    subject = req.old_object if req.operation == "DELETE" else req.object
    problem = identity_problem(req.operation, req.name, req.namespace, subject, req.kind_key)
    if problem is None:
        for doc in (req.object, req.old_object):
            problem = nesting_problem(doc)
            if problem is not None:
                return f"the object is {problem}"
    return problem


__all__ = ["Handler", "PendingAnswer", "Registry", "Validator", "denied"]
