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

from collections.abc import Mapping
from typing import Any

from kustodian.errors import FieldProblem
from kustodian.policy.objects import json_type
from kustodian.webhook.review import AdmissionRequest, MalformedReview

__all__ = ["object_problems"]

STRING, OBJECT, STRING_MAP = "a string", "an object", "an object of strings"

# (parent path, {field: what it must be}): the fields Kustodian reads, grouped by the object holding them
_Fields = tuple[tuple[tuple[str, ...], Mapping[str, str]], ...]
#: ObjectMeta and the type fields, on any kind
_EVERY_KIND: _Fields = (
    ((), {"apiVersion": STRING, "kind": STRING, "metadata": OBJECT}),
    (("metadata",), {**dict.fromkeys(("name", "generateName", "namespace", "uid", "resourceVersion",
                                      "creationTimestamp", "deletionTimestamp"), STRING),
                     "annotations": STRING_MAP, "labels": STRING_MAP}),
)
#: the fields of one kind its handlers read (the reclaim mutator and validator)
_BY_KIND: Mapping[str, _Fields] = {
    "PersistentVolumeClaim": (*_EVERY_KIND, ((), {"spec": OBJECT}),
                              (("spec",), {"storageClassName": STRING, "volumeName": STRING})),
    "ConfigMap": (*_EVERY_KIND, ((), {"data": STRING_MAP})),
}


def _problems_in(doc: dict[str, Any], where: str, kind: str, out: list[FieldProblem],
                 more: list[int]) -> None:
    """Append the problems of ``doc`` to ``out``, and the count of those not named to ``more[0]``.
    On every admission review: plain ``dict`` and ``str`` type checks (decoded JSON holds nothing
    else), each parent read once."""
    for parent_path, fields in _BY_KIND.get(kind, _EVERY_KIND):
        parent: Any = doc
        for key in parent_path:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            continue  # absent, null, or already named as malformed
        for name, expected in fields.items():
            value = parent.get(name)
            if value is None:
                continue  # absent, or null: Go's zero value
            if expected == STRING:
                if not isinstance(value, str):
                    out.append(FieldProblem(_at(where, parent_path, name),
                                            f"expected a string, got {json_type(value)}"))
            elif not isinstance(value, dict):
                out.append(FieldProblem(_at(where, parent_path, name),
                                        f"expected {expected}, got {json_type(value)}"))
            elif expected == STRING_MAP and not all(isinstance(item, str) for item in value.values()):
                at = _at(where, parent_path, name)
                wrong = [(key, item) for key, item in value.items()
                         if item is not None and not isinstance(item, str)]
                # a body may hold a million: the first are named, the others only counted
                out.extend(FieldProblem(f"{at}[{key}]", f"expected a string, got {json_type(item)}")
                           for key, item in wrong[:MalformedReview.LIMIT])
                more[0] += max(0, len(wrong) - MalformedReview.LIMIT)


def _at(where: str, parent_path: tuple[str, ...], name: str) -> str:
    return ".".join((where, *parent_path, name))


def object_problems(req: AdmissionRequest) -> MalformedReview | None:
    """Every field of the request's objects whose type Kubernetes' schema excludes, with its path
    (``request.object.metadata.annotations[...]``); ``None`` for a review an API server could send."""
    docs: list[tuple[str, dict[str, Any] | None]] = []
    if req.operation in ("CREATE", "UPDATE"):
        docs.append(("request.object", req.object))
    if req.operation == "UPDATE":
        docs.append(("request.oldObject", req.old_object))
    problems: list[FieldProblem] = []
    more = [0]
    for where, doc in docs:
        if doc is not None:
            _problems_in(doc, where, req.kind_key, problems, more)
    return MalformedReview(problems, more=more[0]) if problems else None
