"""The fields of a review's objects that the handlers read, checked at the edge.

The API server decodes every object into its Go type before any webhook sees it, so
``metadata.annotations`` is always a map of strings, ``spec.storageClassName`` of a PVC
always a string, and so on.  A body that breaks those types was not sent by an API server:
it is a malformed review (HTTP 400 naming each field, ``review.MalformedReview``), never
something a handler should meet and trip over.  JSON ``null`` is what Go's decoder reads as
the zero value, so it passes everywhere (the handlers read a missing field the same way).

Only the objects a decision is computed from are checked here: ``object`` on CREATE and
UPDATE and ``oldObject`` on UPDATE.  ``oldObject`` on DELETE is the deletion guard's, and it
answers a body that cannot be the object the request names with a refusal in the admission
response (``trust``): an HTTP 400 would let the DELETE through where the webhook's
``failurePolicy`` is ``Ignore``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kustodian.errors import FieldProblem
from kustodian.webhook.review import AdmissionRequest

__all__ = ["object_problems"]

STRING, OBJECT, STRING_MAP = "a string", "an object", "an object of strings"

#: ObjectMeta and type fields Kustodian reads on any kind (a path and what it must be)
_EVERY_KIND: tuple[tuple[tuple[str, ...], str], ...] = (
    (("apiVersion",), STRING),
    (("kind",), STRING),
    (("metadata",), OBJECT),
    *((("metadata", key), STRING) for key in ("name", "generateName", "namespace", "uid", "resourceVersion",
                                               "creationTimestamp", "deletionTimestamp")),
    (("metadata", "annotations"), STRING_MAP),
    (("metadata", "labels"), STRING_MAP),
)

#: the fields of one kind its handlers read (the reclaim mutator and validator)
_BY_KIND: Mapping[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "PersistentVolumeClaim": ((("spec",), OBJECT), (("spec", "storageClassName"), STRING),
                              (("spec", "volumeName"), STRING)),
    "ConfigMap": ((("data",), STRING_MAP),),
}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _problems_in(doc: Mapping[str, Any], where: str, kind: str) -> Iterator[FieldProblem]:
    for path, expected in (*_EVERY_KIND, *_BY_KIND.get(kind, ())):
        value: Any = doc
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is None:
            continue  # absent, null, or under a parent already named as malformed
        at = ".".join((where, *path))
        if expected == STRING and not isinstance(value, str):
            yield FieldProblem(at, f"expected a string, got {_json_type(value)}")
        elif expected in (OBJECT, STRING_MAP) and not isinstance(value, dict):
            yield FieldProblem(at, f"expected {expected}, got {_json_type(value)}")
        elif expected == STRING_MAP:
            for key, item in value.items():
                if item is not None and not isinstance(item, str):
                    yield FieldProblem(f"{at}[{key}]", f"expected a string, got {_json_type(item)}")


def object_problems(req: AdmissionRequest) -> list[FieldProblem]:
    """Every field of the request's objects whose type Kubernetes' schema excludes, with its path
    (``request.object.metadata.annotations[...]``); ``[]`` for a review an API server could send."""
    docs: list[tuple[str, dict[str, Any] | None]] = []
    if req.operation in ("CREATE", "UPDATE"):
        docs.append(("request.object", req.object))
    if req.operation == "UPDATE":
        docs.append(("request.oldObject", req.old_object))
    problems: list[FieldProblem] = []
    for where, doc in docs:
        if doc is not None:
            problems.extend(_problems_in(doc, where, req.kind_key))
    return problems
