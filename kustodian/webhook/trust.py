"""What the webhook does not take on trust from a review body.

The API server builds an AdmissionReview from the request URL (``name``, ``namespace``) and
from storage (``oldObject``).  Anyone else who reaches the webhook port can send a review
with any content, so:

* :func:`identity_problem`: on DELETE (and CREATE and UPDATE) the object must be the one the
  request names; a review whose ``oldObject`` names something else, or whose ``metadata`` is not an
  object, is refused before any handler runs (a guarded DELETE is never allowed because the
  body pointed the guard at a harmless object);
* :func:`nesting_problem`: no decision recurses deeper than ``MAX_DEPTH`` (a deeply nested
  PVC must not reach Python's recursion limit and make the mutator fail open);
* :class:`ExistingObjectsRecorder`: Warning events are written only about objects the watch
  caches hold (same namespace, name and uid), and about the cached copy: a forged review
  cannot write events into arbitrary namespaces.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from kustodian.policy.store import ClusterView, kind_key

log = logging.getLogger(__name__)

#: far deeper than any Kubernetes object, far below Python's recursion limit
MAX_DEPTH = 100


def identity_problem(operation: str, name: str, namespace: str, subject: Any, kind: str = "") -> str | None:
    """Why ``subject`` (oldObject on DELETE, object on CREATE and UPDATE) is not the object the
    request names.

    The API server sets ``namespace`` of a request about a Namespace to its own name.  On CREATE
    it has already filled an empty ``metadata.namespace`` from the URL and refused a different
    one, and ``name`` is the object's (empty for ``generateName``): a CREATE whose object names
    another namespace or name was not sent by it.
    """
    if subject is None or operation not in ("CREATE", "DELETE", "UPDATE"):
        return None
    where = "request.oldObject" if operation == "DELETE" else "request.object"
    if not isinstance(subject, dict):
        return f"{where}: not a JSON object"
    meta = subject.get("metadata")
    if operation == "CREATE" and meta is None:
        return None  # nothing named: the handlers read the request's name and namespace
    if not isinstance(meta, dict):
        return f"{where}.metadata: not a JSON object"
    obj_name, obj_ns = meta.get("name"), meta.get("namespace") or ""
    if kind == "Namespace" and not obj_ns and namespace == name:
        namespace = ""
    if operation == "CREATE":
        # an empty namespace is the request's; an empty name is generateName's
        obj_ns, obj_name = obj_ns or namespace, obj_name or name
    if obj_name != name or obj_ns != namespace:
        field = "namespace" if obj_name == name else "name"
        named = f"{namespace + '/' if namespace else ''}{name[:253]}"
        its = f"{str(obj_ns)[:63] + '/' if obj_ns else ''}{str(obj_name)[:253]}"
        return f"{where}.metadata.{field}: the review names {named} but its object is {its}"
    return None


def nesting_problem(doc: Any, limit: int = MAX_DEPTH) -> str | None:
    """Iteratively: is any value nested deeper than ``limit``?"""
    stack: list[tuple[Any, int]] = [(doc, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return f"nested deeper than {limit} levels"
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))
    return None


class Recorder(Protocol):
    def record(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> bool: ...


class ExistingObjectsRecorder:
    """An event recorder that writes only about objects the caches hold, as the caches hold them."""

    def __init__(self, recorder: Recorder, view: ClusterView) -> None:
        self.recorder = recorder
        self.view = view
        self.refused = 0

    def record(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> bool:
        meta = obj.get("metadata")
        if not isinstance(meta, Mapping):
            self.refused += 1
            return False
        key = kind_key(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        if not self.view.has_kind(key):
            # a kind no cache holds (Namespace): its existence cannot be checked here
            if key != "Namespace":
                self.refused += 1
                return False
            return self.recorder.record({"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": name[:63]}}, event_type, reason, message)
        cached = self.view.get(key, namespace, name)
        uid = meta.get("uid")
        if cached is None or (uid and (cached.get("metadata") or {}).get("uid") != uid):
            self.refused += 1
            log.info("no event %s for %s %s/%s: not an object the caches know", reason, key, namespace[:63],
                     name[:253])
            return False
        return self.recorder.record(cached, event_type, reason, message)
