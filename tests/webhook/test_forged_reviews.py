"""Forged and hostile AdmissionReviews against the deletion guard, the way anyone who reaches the
webhook port could send them: the envelope is parsed as the server parses it, then dispatched
by the registry to the real ``DeletionGuard`` over a cluster view.

The oracle is the API server's own semantics: a DELETE acts on the object the request *names*
(``namespace``/``name``, from the URL), whatever ``oldObject`` says.  Over 10 000 generated
reviews (forged identities, foreign uids, non-object metadata, deep nesting, hostile
usernames): no DELETE of a guarded object is allowed, and no event is written about an object
that does not exist.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kustodian.kube.kinds import KindState
from kustodian.logs import TextFormatter
from kustodian.policy.store import ListView
from kustodian.webhook.app import parse_review
from kustodian.webhook.features.deletion_guard import DeletionGuard
from kustodian.webhook.registry import Registry
from kustodian.webhook.trust import MAX_DEPTH, ExistingObjectsRecorder
from tests.policy.deletion.builders import NS, blockpool, cluster, rbd_pv, view

GUARDED = blockpool("replicapool")
GUARDED["metadata"]["uid"] = "uid-guarded"
LONELY = blockpool("lonely")
LONELY["metadata"]["uid"] = "uid-lonely"
WORLD: list[dict[str, Any]] = [cluster(), GUARDED, LONELY, rbd_pv("pv-1", pool="replicapool")]
for i, o in enumerate(WORLD):
    o["metadata"].setdefault("uid", f"uid-{i}")


class SyncedView:
    """The test's ListView, synced (what the guard sees once its caches have listed)."""

    def __init__(self, inner: ListView) -> None:
        self.inner = inner

    def synced(self) -> bool:
        return True

    def state(self, kind: str) -> KindState:
        """Every kind current (issue 14's freshness): the guard decides rather than answers 503."""
        return KindState(kind, self.inner.has_kind(kind))

    def read_version(self, kind: str, index: str | None = None, key: str | None = None) -> object:
        return object()  # never equal: no memoised decision, every review is decided afresh

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Captured:
    def __init__(self) -> None:
        self.events: list[tuple[Mapping[str, Any], str]] = []

    def record(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> bool:
        self.events.append((obj, reason))
        return True


def exists(obj: Mapping[str, Any]) -> bool:
    meta = obj.get("metadata") or {}
    if obj.get("kind") == "Namespace":
        return meta.get("name") == NS
    return any(o["kind"] == obj.get("kind") and o["metadata"]["name"] == meta.get("name")
               and o["metadata"].get("namespace", "") == (meta.get("namespace") or "")
               and o["metadata"]["uid"] == meta.get("uid") for o in WORLD)


def guarded_target(kind: str, namespace: str, name: str) -> bool:
    if kind == "Namespace":
        return name == NS
    return kind == "CephBlockPool" and namespace == NS and name == "replicapool"


def text(max_size: int) -> st.SearchStrategy[str]:
    # JSON has no lone surrogates
    return st.text(st.characters(exclude_categories=["Cs"]), max_size=max_size)


ints = st.integers(-(2**63), 2**63 - 1)
texts = st.one_of(st.sampled_from(["replicapool", "lonely", NS, "", "other", "kube-system"]),
                  text(40))


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = {"a": value} if i % 2 else [value]
    return value


@st.composite
def old_objects(draw: st.DrawFn, kind: str) -> Any:
    choice = draw(st.sampled_from(["none", "guarded", "lonely", "forged", "bad-metadata", "not-object",
                                   "deep", "namespace"]))
    if choice == "none":
        return None
    if choice == "guarded":
        return dict(GUARDED)
    if choice == "lonely":
        return dict(LONELY)
    if choice == "bad-metadata":
        return {"apiVersion": "ceph.rook.io/v1", "kind": kind,
                "metadata": draw(st.one_of(text(5), st.lists(ints, max_size=3),
                                           st.none(), ints))}
    if choice == "not-object":
        return draw(st.one_of(text(5), ints, st.lists(text(3), max_size=3)))
    if choice == "deep":
        return {"apiVersion": "ceph.rook.io/v1", "kind": kind,
                "metadata": {"name": draw(texts), "namespace": draw(texts)},
                "spec": nested(draw(st.integers(MAX_DEPTH - 3, 240)))}  # orjson writes <= 254
    if choice == "namespace":
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": draw(texts), "uid": draw(texts)}}
    return {"apiVersion": draw(st.sampled_from(["ceph.rook.io/v1", "v1", "x/v1"])),
            "kind": draw(st.sampled_from([kind, "CephBlockPool", "Namespace", "ConfigMap"])),
            "metadata": {"name": draw(texts), "namespace": draw(texts),
                         "uid": draw(st.sampled_from(["uid-guarded", "uid-lonely", "forged", ""]))}}


@st.composite
def reviews(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["CephBlockPool", "Namespace"]))
    group = "ceph.rook.io" if kind == "CephBlockPool" else ""
    name = draw(texts)
    # the API server sets a Namespace request's namespace to its own name
    namespace = draw(texts) if kind != "Namespace" else draw(st.sampled_from(["", name]))
    req: dict[str, Any] = {
        "uid": "u-" + str(draw(st.integers(0, 10**9))),
        "kind": {"group": group, "version": "v1", "kind": kind},
        "resource": {"group": group, "version": "v1",
                     "resource": "cephblockpools" if kind == "CephBlockPool" else "namespaces"},
        "name": name, "namespace": namespace, "operation": "DELETE",
        "userInfo": {"username": draw(st.one_of(text(30), st.just("eve\nINFO forged line")))},
        "oldObject": draw(old_objects(kind)),
        "dryRun": draw(st.booleans()),
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


def guard() -> tuple[Registry, Captured]:
    listview = view(*WORLD)
    captured = Captured()
    registry = Registry()
    sv = SyncedView(listview)
    DeletionGuard(rook_rules_of(listview), sv, ExistingObjectsRecorder(captured, listview)  # type: ignore[arg-type]
                  ).register(registry)
    return registry, captured


def rook_rules_of(_: ListView) -> Any:
    from kustodian.policy.deletion import rook_rules

    return rook_rules()


REGISTRY, CAPTURED = guard()
STATS = {"cases": 0, "guarded": 0, "forged": 0}


@settings(max_examples=10_000, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(reviews())
def test_forged_reviews_never_allow_a_guarded_delete_nor_write_an_event_about_nothing(
        doc: dict[str, Any]) -> None:
    STATS["cases"] += 1
    try:
        req = parse_review(orjson.dumps(doc))
    except ValueError:
        return  # a 400: the API server's failurePolicy Fail refuses the DELETE
    before = len(CAPTURED.events)
    answer = REGISTRY.validate_now(req)
    target_kind = doc["request"]["kind"]["kind"]
    if guarded_target(target_kind, req.namespace, req.name):
        STATS["guarded"] += 1
        old = doc["request"]["oldObject"]
        if old is not None and old is not GUARDED:
            STATS["forged"] += 1
        assert not answer.allowed, f"guarded {target_kind} {req.namespace}/{req.name} allowed: {doc}"
    for obj, reason in CAPTURED.events[before:]:
        assert exists(obj), f"event {reason} about an object that does not exist: {obj}"
    assert len(answer.message) <= 4200


def test_the_fuzz_ran_its_cases_and_reached_the_guarded_object() -> None:
    # runs after the property test in file order: the generated reviews did hit the guard
    print(f"fuzz: {STATS}")
    assert STATS["cases"] >= 10_000
    assert STATS["guarded"] >= 50 and STATS["forged"] >= 20, STATS


@pytest.mark.parametrize("old", [
    {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool", "metadata": {"name": "lonely", "namespace": NS}},
    {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool", "metadata": "not-an-object"},
    {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
     "metadata": {"name": "replicapool", "namespace": NS}, "spec": nested(2 * MAX_DEPTH)},
], ids=["oldObject-of-a-harmless-pool", "metadata-not-an-object", "deeply-nested"])
def test_the_guarded_pool_named_by_the_request_is_refused_whatever_the_body_says(old: Any) -> None:
    registry, captured = guard()
    doc = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
           "request": {"uid": "u", "kind": {"group": "ceph.rook.io", "version": "v1", "kind": "CephBlockPool"},
                       "resource": {"group": "ceph.rook.io", "version": "v1", "resource": "cephblockpools"},
                       "name": "replicapool", "namespace": NS, "operation": "DELETE", "oldObject": old}}
    answer = registry.validate_now(parse_review(orjson.dumps(doc)))
    assert not answer.allowed and answer.code == 400 and "inconsistent admission review" in answer.message
    assert captured.events == []


def test_nesting_past_any_recursion_limit_is_a_400_not_a_crash() -> None:
    deep = "[" * 5000 + "]" * 5000  # as raw bytes: no Python serializer goes this deep
    body = ('{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",'
            '"kind":{"group":"","version":"v1","kind":"PersistentVolumeClaim"},"resource":{"group":"",'
            '"version":"v1","resource":"persistentvolumeclaims"},"name":"p","namespace":"n",'
            '"operation":"CREATE","object":{"metadata":{"name":"p"},"spec":' + deep + '}}}').encode()
    with pytest.raises(ValueError, match="not JSON"):
        parse_review(body)


def test_an_event_is_written_about_the_cached_object_not_the_body() -> None:
    registry, captured = guard()
    forged_uid = {**GUARDED, "metadata": {**GUARDED["metadata"], "uid": "forged"}}
    real = {**GUARDED}
    for old, events in ((forged_uid, 0), (real, 1)):
        doc = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
               "request": {"uid": "u", "kind": {"group": "ceph.rook.io", "version": "v1", "kind": "CephBlockPool"},
                           "resource": {"group": "ceph.rook.io", "version": "v1", "resource": "cephblockpools"},
                           "name": "replicapool", "namespace": NS, "operation": "DELETE", "oldObject": old}}
        assert not registry.validate_now(parse_review(orjson.dumps(doc))).allowed
        assert len(captured.events) == events
    assert captured.events[0][0] is not real and captured.events[0][0]["metadata"]["uid"] == "uid-guarded"


def test_a_newline_in_a_username_cannot_forge_a_text_log_line() -> None:
    fmt = TextFormatter("%(levelname)s %(name)s: %(message)s")
    record = logging.LogRecord("kustodian.webhook.app", logging.INFO, __file__, 1, "denied by %s: %s",
                               ("eve\nERROR kustodian: all volumes deleted\r\x1b[2K", "x" * 100_000), None)
    line = fmt.format(record)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert line.startswith("INFO kustodian.webhook.app: denied by eve\\nERROR kustodian")
    assert len(line) < 17 * 1024


