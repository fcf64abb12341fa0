"""Mutated AdmissionReviews at every field path, against the whole webhook: a malformed body is a 400
naming its fields, anything else an admission answer, and never an internal error.

Seeds: valid reviews for both endpoints and every route the features register (the reclaim mutator on
PVC CREATE; the reclaim validator on PVC, StorageClass, Namespace and its ConfigMap, CREATE and UPDATE;
the deletion guard on CephBlockPool, CephCluster, StorageClass (an admin rule) and Namespace DELETE; the
capacity validator), with objects from upstream's own manifests (Rook's ``csi/rbd`` PVC and StorageClass
and ``pool.yaml``'s pool).  Every case is one seed with one mutation at one field path (each path of each
seed gets every mutation: missing, null, each JSON type, an empty and a huge string, unicode, nested
garbage), then random multi-mutations from a seeded generator up to ``CASES`` in all.  (A
systematic walk rather than ``hypothesis``: it guarantees every path gets every mutation, and the cases
go through one event loop in one batch.)

The oracle is independent of the webhook's code: the field types of admission.k8s.io/v1 and of the object
fields the handlers read, as the Kubernetes API reference gives them (``TYPES``, ``OBJECT_TYPES``), read
the way the API server's Go decoder reads JSON (``null`` is the zero value; a number is not a string).
For every case:

* HTTP 200 or 400, nothing else; no log record with a traceback, nothing logged at ERROR;
* a body the oracle finds malformed is a 400 naming at least one field, and every field it names is one
  the oracle names; a body the oracle finds well-formed is a 200 echoing the request's uid;
* a 200 is never an internal-error answer (no ``status.code`` 500, no "internal error" message or
  warning).

The bulk goes through the ASGI app in-process; ``TLS_CASES`` of them (every n-th) through the real TLS
server the other webhook tests use.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import random
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kustodian.policy.deletion import load_rules, rook_rules
from kustodian.policy.store import ListView
from kustodian.webhook.app import create_app
from kustodian.webhook.features import capacity
from kustodian.webhook.features.deletion_guard import DeletionGuard
from kustodian.webhook.features.reclaim import ReclaimPolicyWebhook
from kustodian.webhook.registry import Registry
from kustodian.webhook.trust import ExistingObjectsRecorder
from tests.policy.capacity.capacity_builders import ac, acr, req
from tests.policy.deletion.builders import NS, cluster, rbd_pv, view
from tests.webhook.conftest import serve
from tests.webhook.test_forged_reviews import Captured, SyncedView

#: every case, single mutations first (all of them), then random multi-mutations up to this count
CASES = 15_000
#: of which this many (every n-th) also over the real TLS server
TLS_CASES = 300
SEED = 33

UPSTREAM = Path("/work/shared/upstream/rook")
SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
ENABLE = "reclaimspace.csiaddons.openshift.io/enable"
SOURCE = "reclaimspace.kustodian.io/source"
CONFIG = ("kustodian", "kustodian-reclaim-config")


def upstream(path: str, kind: str) -> dict[str, Any]:
    """The one document of ``kind`` in Rook's example manifest ``path``."""
    docs = [d for d in yaml.safe_load_all((UPSTREAM / path).read_text()) if d and d.get("kind") == kind]
    assert len(docs) == 1, (path, kind)
    return dict(docs[0])


PVC = upstream("csi/rbd/pvc.yaml", "PersistentVolumeClaim")
PVC["metadata"] = {**PVC["metadata"], "namespace": "app", "labels": {"app": "db"},
                   "annotations": {ENABLE: "true", "note": "ü"}}
STORAGE_CLASS = upstream("csi/rbd/storageclass.yaml", "StorageClass")
STORAGE_CLASS["metadata"] = {**STORAGE_CLASS["metadata"], "annotations": {SCHEDULE: "@daily"}}
# three of its seventeen parameters: each is one more path to mutate, and nothing reads them
STORAGE_CLASS["parameters"] = dict(list(STORAGE_CLASS["parameters"].items())[:3])
POOL = upstream("pool.yaml", "CephBlockPool")
POOL["metadata"] = {**POOL["metadata"], "uid": "uid-pool"}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app", "annotations": {SCHEDULE: "@weekly"}}}
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIG[1], "namespace": CONFIG[0]},
              "data": {"config.json": '{"reclaim-space-enable": true}'}}
CLUSTER = cluster()
CLUSTER["metadata"]["uid"] = "uid-cluster"
BOUND = {**copy.deepcopy(PVC), "metadata": {"name": "bound", "namespace": "app", "uid": "uid-bound"}}
WORLD = [CLUSTER, POOL, rbd_pv("pv-1", pool=POOL["metadata"]["name"]), STORAGE_CLASS, BOUND, NAMESPACE]


def annotated(obj: dict[str, Any], **annotations: str) -> dict[str, Any]:
    meta = obj["metadata"]
    return {**obj, "metadata": {**meta, "annotations": {**meta.get("annotations", {}), **annotations}}}


def review(operation: str, obj: dict[str, Any] | None, old: dict[str, Any] | None = None, *,
           uid: str = "seed") -> dict[str, Any]:
    subject = old if operation == "DELETE" else obj
    assert subject is not None
    api_version, kind = subject["apiVersion"], subject["kind"]
    group, _, version = api_version.rpartition("/")
    meta = subject["metadata"]
    resource = {"PersistentVolumeClaim": "persistentvolumeclaims", "StorageClass": "storageclasses",
                "Namespace": "namespaces", "ConfigMap": "configmaps",
                "AvailableCapacity": "availablecapacities"}.get(kind, kind.lower() + "s")
    namespace = meta.get("namespace", "") if kind != "Namespace" else meta["name"]
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": resource}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "kind": gvk, "resource": gvr, "subResource": "", "requestKind": dict(gvk),
        "requestResource": dict(gvr), "requestSubResource": "", "name": meta.get("name", ""),
        "namespace": namespace, "operation": operation,
        "userInfo": {"username": "alice", "uid": "u-alice", "groups": ["system:authenticated"],
                     "extra": {"scopes": ["view"]}},
        "object": obj, "oldObject": old, "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"}}}


SEEDS: list[tuple[str, str, dict[str, Any]]] = [
    ("mutate-pvc-create", "/mutate", review("CREATE", PVC)),
    ("mutate-storageclass-create", "/mutate", review("CREATE", STORAGE_CLASS)),
    ("pvc-create", "/validate", review("CREATE", annotated(PVC, **{SCHEDULE: "@hourly"}))),
    ("pvc-update", "/validate", review("UPDATE", annotated(PVC, **{SCHEDULE: "@hourly", SOURCE: "pvc"}), PVC)),
    ("storageclass-create", "/validate", review("CREATE", STORAGE_CLASS)),
    ("storageclass-update", "/validate", review("UPDATE", annotated(STORAGE_CLASS, **{SCHEDULE: "@hourly"}),
                                                 STORAGE_CLASS)),
    ("namespace-create", "/validate", review("CREATE", NAMESPACE)),
    ("namespace-update", "/validate", review("UPDATE", annotated(NAMESPACE, **{ENABLE: "false"}), NAMESPACE)),
    ("configmap-create", "/validate", review("CREATE", CONFIG_MAP)),
    ("configmap-update", "/validate", review("UPDATE", {**CONFIG_MAP, "data": {"config.json": "{}"}}, CONFIG_MAP)),
    ("pool-delete", "/validate", review("DELETE", None, POOL)),
    ("cluster-delete", "/validate", review("DELETE", None, CLUSTER)),
    ("storageclass-delete", "/validate", review("DELETE", None, STORAGE_CLASS)),
    ("namespace-delete", "/validate", review("DELETE", None, {"apiVersion": "v1", "kind": "Namespace",
                                                                "metadata": {"name": NS}})),
    ("capacity-create", "/validate", review("CREATE", ac("ac-1", "node-1", "HDD", 1 << 30, group="fast"))),
    ("reservation-create", "/validate",
     review("CREATE", acr("pod-1", [req("vol", "HDD", 1 << 30)], ["node-1"]))),
]


# -- the oracle: field types from the Kubernetes API reference ----------------------------------------

STRING, BOOL, OBJECT, ARRAY = "string", "boolean", "object", "array"
# path pattern (``*``: any key or index) -> (type, constraint); a constraint is "required" (missing or
# null is malformed: the API server always sends it), "non-empty", or a tuple of the allowed values
GVK = {"group": (STRING, None), "version": (STRING, None), "kind": (STRING, "non-empty")}
GVR = {"group": (STRING, None), "version": (STRING, None), "resource": (STRING, "non-empty")}
TYPES: dict[tuple[str, ...], tuple[str, Any]] = {
    ("apiVersion",): (STRING, ("admission.k8s.io/v1",)),
    ("kind",): (STRING, ("AdmissionReview",)),
    ("request",): (OBJECT, "required"),
    ("request", "uid"): (STRING, "non-empty"),
    ("request", "kind"): (OBJECT, "required"),
    **{("request", "kind", k): v for k, v in GVK.items()},
    ("request", "resource"): (OBJECT, "required"),
    **{("request", "resource", k): v for k, v in GVR.items()},
    ("request", "requestKind"): (OBJECT, None),
    **{("request", "requestKind", k): v for k, v in GVK.items()},
    ("request", "requestResource"): (OBJECT, None),
    **{("request", "requestResource", k): v for k, v in GVR.items()},
    **{("request", k): (STRING, None) for k in ("subResource", "requestSubResource", "name", "namespace")},
    ("request", "operation"): (STRING, ("CREATE", "UPDATE", "DELETE", "CONNECT")),
    ("request", "userInfo"): (OBJECT, None),
    ("request", "userInfo", "username"): (STRING, None),
    ("request", "userInfo", "uid"): (STRING, None),
    ("request", "userInfo", "groups"): (ARRAY, None),
    ("request", "userInfo", "groups", "*"): (STRING, None),
    ("request", "userInfo", "extra"): (OBJECT, None),
    ("request", "userInfo", "extra", "*"): (ARRAY, None),
    ("request", "userInfo", "extra", "*", "*"): (STRING, None),
    ("request", "object"): (OBJECT, None),
    ("request", "oldObject"): (OBJECT, None),
    ("request", "dryRun"): (BOOL, None),
    ("request", "options"): (OBJECT, None),
}
# the fields of ObjectMeta (every kind) and of the kinds whose fields the handlers read
OBJECT_TYPES: dict[str, dict[tuple[str, ...], str]] = {
    "*": {("apiVersion",): STRING, ("kind",): STRING, ("metadata",): OBJECT,
          **{("metadata", k): STRING for k in ("name", "generateName", "namespace", "uid", "resourceVersion",
                                               "creationTimestamp", "deletionTimestamp")},
          ("metadata", "annotations"): OBJECT, ("metadata", "annotations", "*"): STRING,
          ("metadata", "labels"): OBJECT, ("metadata", "labels", "*"): STRING},
    "PersistentVolumeClaim": {("spec",): OBJECT, ("spec", "storageClassName"): STRING,
                              ("spec", "volumeName"): STRING},
    "ConfigMap": {("data",): OBJECT, ("data", "*"): STRING},
}


def json_type(value: Any) -> str:
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return STRING
    if isinstance(value, list):
        return ARRAY
    return OBJECT if isinstance(value, dict) else "null"


def _envelope_path(path: tuple[Any, ...], pattern: tuple[str, ...] = ()) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _walk(value: Any, path: tuple[Any, ...], types: Mapping[tuple[str, ...], tuple[str, Any]],
          render: Any) -> Iterator[str]:
    """Paths under ``value`` whose type ``types`` excludes (``render`` writes a path as the webhook does)."""
    if isinstance(value, dict):
        children: list[tuple[Any, Any]] = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    else:
        return
    for key, child in children:
        at = (*path, key)
        pattern = next((p for p in types if len(p) == len(at) and all(
            q == "*" or q == k for q, k in zip(p, at, strict=True))), None)
        if pattern is None:
            continue  # not a field whose type the API fixes (or not one the handlers read): anything goes
        expected, constraint = types[pattern]
        if child is None:
            if constraint is not None:
                yield render(at, pattern)  # null is the zero value: "" or nothing, which a required field cannot be
            continue
        if json_type(child) != expected or (constraint == "non-empty" and child == "") or (
                isinstance(constraint, tuple) and child not in constraint):
            yield render(at, pattern)
            continue
        yield from _walk(child, at, types, render)


def oracle(doc: Any) -> set[str]:
    """Every field of ``doc`` (a decoded body) that makes it a review no API server sends."""
    if not isinstance(doc, dict):
        return {""}
    bad = set(_walk(doc, (), TYPES, _envelope_path))
    for path, (_, constraint) in TYPES.items():
        if constraint is not None and "*" not in path:
            parent: Any = doc
            for key in path[:-1]:
                parent = parent.get(key) if isinstance(parent, dict) else None
            if isinstance(parent, dict) and path[-1] not in parent:
                bad.add(_envelope_path(path))  # a required field missing
    if bad:
        return bad  # the objects are only read once the envelope is a review
    request = doc["request"]
    kind = request["kind"]["kind"] if not request["kind"].get("group") else "-"
    object_types = {p: (t, None) for p, t in {**OBJECT_TYPES["*"], **OBJECT_TYPES.get(kind, {})}.items()}
    op = request["operation"]
    checked = ([("object", request.get("object"))] if op in ("CREATE", "UPDATE") else []) + (
        [("oldObject", request.get("oldObject"))] if op == "UPDATE" else [])

    def render(where: str) -> Any:
        def path(at: tuple[Any, ...], pattern: tuple[str, ...]) -> str:
            if pattern[-1] == "*":  # an entry of a map of strings
                return f"request.{where}.{'.'.join(at[:-1])}[{at[-1]}]"
            return f"request.{where}.{'.'.join(at)}"
        return path

    for where, obj in checked:
        if isinstance(obj, dict):
            bad.update(_walk(obj, (), object_types, render(where)))
    return bad


# -- mutations --------------------------------------------------------------------------------------

MISSING = object()


def deep(levels: int) -> Any:
    value: Any = "leaf"
    for i in range(levels):
        value = {"k": value} if i % 2 else [value]
    return value


# missing, null, each JSON type (2**70 is a float once decoded), an empty, a unicode and a huge string,
# an array and an object of garbage, nesting below and beyond the webhook's depth limit (100)
VALUES: list[Any] = [MISSING, None, 0, 2**70, True, "", "x", "ü\u200b😀\u202e\x00", "y" * 70_000, [],
                     [1, "a", None], {}, {"a": {"b": [1, {"c": None}]}}, deep(60), deep(150)]


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from paths(value, (*prefix, i))


def mutated(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(doc)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    if value is MISSING:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(value)
    return out


def single_mutations() -> Iterator[tuple[str, str, Any]]:
    """Every seed, every field path, every mutation: ``(case id, endpoint, body)``."""
    for name, endpoint, seed in SEEDS:
        yield name, endpoint, seed
        for path in list(paths(seed)):
            for i, value in enumerate(VALUES):
                yield f"{name}:{_envelope_path(path)}={i}", endpoint, mutated(seed, path, value)


# -- running cases and judging answers --------------------------------------------------------------

def registry() -> Registry:
    """The webhook's three features over one cluster: the guard (Rook's rules and an admin rule
    guarding StorageClasses), the reclaim mutator and validator, the capacity validator."""
    rules = rook_rules().merged(load_rules([{
        "provider": "StorageClass.storage.k8s.io", "dependent": "PersistentVolumeClaim",
        "match": {"type": "field-ref", "field": "spec.storageClassName", "scope": "cluster"}}]))
    listed = view(*WORLD, rules=rules)
    reg = Registry()
    DeletionGuard(rules, SyncedView(listed), ExistingObjectsRecorder(Captured(), listed)  # type: ignore[arg-type]
                  ).register(reg)
    reclaim = ReclaimPolicyWebhook(*CONFIG, keyrotation=True)
    cached = ListView({"StorageClass.storage.k8s.io": [STORAGE_CLASS], "Namespace": [NAMESPACE],
                       "CSIAddonsNode.csiaddons.openshift.io": []})
    reclaim.register(reg, cached)  # type: ignore[arg-type]
    capacity.register(reg)
    return reg


def encode(doc: Any) -> bytes:
    return json.dumps(doc).encode()


class Tracebacks(logging.Handler):
    """Every record with a traceback or at ERROR and above, from any logger."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.bad: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            self.bad.append(f"{record.name} {record.levelname}: {record.getMessage()[:300]}")


@pytest.fixture
def tracebacks() -> Iterator[Tracebacks]:
    handler = Tracebacks()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def judge(case: str, doc: Any, status: int, body: bytes) -> str:
    """The verdict on one answer: what the oracle expects and what came; returns the outcome."""
    expected = oracle(doc)
    where = f"{case}: HTTP {status} {body[:400]!r}"
    assert status in (200, 400), where
    answer = json.loads(body)
    if expected:
        assert status == 400, f"{where}\nmalformed at {sorted(expected)[:5]}"
        fields = answer["fields"]
        assert fields and isinstance(answer["error"], str), where
        assert set(fields) <= expected, f"{where}\nnamed {fields}, oracle {sorted(expected)[:5]}"
        return "400"
    assert status == 200, f"{where}\nthe oracle finds it well-formed"
    response = answer["response"]
    assert response["uid"] == doc["request"]["uid"], where
    said = " ".join([str((response.get("status") or {}).get("message", "")), *response.get("warnings", [])])
    assert "internal error" not in said and (response.get("status") or {}).get("code") != 500, where
    return "allowed" if response["allowed"] else "denied"


async def post_all(app: Any, cases: list[tuple[str, str, Any]]) -> list[tuple[int, bytes]]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://webhook") as client:
        out = []
        for _, endpoint, doc in cases:
            resp = await client.post(endpoint, content=encode(doc), headers={"Content-Type": "application/json"})
            out.append((resp.status_code, resp.content))
        return out


def random_cases(count: int) -> list[tuple[str, str, Any]]:
    """``count`` seeded multi-mutations (2 to 4 at once), reproducible from ``SEED``."""
    rnd = random.Random(SEED)
    strings = ["app", NS, "rook-ceph-block", "replicapool", "@daily", "daily", "true", "false", "pvc",
               "DELETE", "UPDATE", "system:serviceaccount:csi-addons-system:csi-addons-controller-manager"]
    keys = [SCHEDULE, ENABLE, SOURCE, "volume.beta.kubernetes.io/storage-class", "reclaimspace.kustodian.io/applied",
            "kustodian.io/allow-delete-with-dependents", "rook.io/force-deletion"]
    out = []
    for n in range(count):
        name, endpoint, doc = rnd.choice(SEEDS)
        for _ in range(rnd.randint(2, 4)):
            where = [p for p in paths(doc)]
            if not where:
                break
            path = rnd.choice(where)
            r = rnd.random()
            value = rnd.choice(strings) if r < 0.3 else {rnd.choice(keys): rnd.choice([*strings, 1, None, []])} \
                if r < 0.45 else rnd.choice(VALUES)
            doc = mutated(doc, path, value)
        out.append((f"random-{n}:{name}", endpoint, doc))
    return out


# -- regression rows: the API server's routing, not request.kind, says what is deleted ------------------

#: the kind each guarded DELETE seed's resource serves (its CRD's or the API's own names)
ROUTED = {("ceph.rook.io", "cephblockpools"): ("ceph.rook.io", "CephBlockPool"),
          ("ceph.rook.io", "cephclusters"): ("ceph.rook.io", "CephCluster"),
          ("storage.k8s.io", "storageclasses"): ("storage.k8s.io", "StorageClass"),
          ("", "namespaces"): ("", "Namespace")}
#: fuzz cases an earlier webhook *allowed*: a DELETE the API server routed to a guarded resource
#: (``request.resource``), with ``request.kind`` emptied or forged, was dispatched by the kind, found
#: no handler and passed untouched; each is ``<seed>:<path>=<index into VALUES>`` as the fuzz names it
FORGED_KIND = [f"{seed}:request.kind.{part}={i}"
               for seed in ("pool-delete", "cluster-delete", "storageclass-delete")
               for part, values in (("group", (0, 1, 5, 6, 7, 8)), ("kind", (6, 7, 8)))
               for i in values] + [f"namespace-delete:request.kind.{part}={i}"
                                    for part in ("group", "kind") for i in (6, 7, 8)]


def fuzz_case(case: str) -> tuple[str, Any]:
    """The endpoint and body of fuzz case ``case`` (a single mutation), as ``single_mutations`` makes it."""
    seed_name, _, rest = case.partition(":")
    where, _, index = rest.rpartition("=")
    endpoint, seed = next((e, s) for n, e, s in SEEDS if n == seed_name)
    path = tuple(where.split("."))
    assert _envelope_path(path) == where, case
    return endpoint, mutated(seed, path, VALUES[int(index)])


@pytest.mark.parametrize("case", FORGED_KIND, ids=FORGED_KIND)
def test_a_delete_routed_to_a_guarded_resource_is_never_allowed_under_a_forged_kind(case: str) -> None:
    endpoint, doc = fuzz_case(case)
    request = doc["request"]
    assert request["operation"] == "DELETE" and not oracle(doc), "the row must be a well-formed DELETE"
    resource = request["resource"]
    assert (request["kind"].get("group"), request["kind"]["kind"]) != ROUTED[(resource["group"],
                                                                              resource["resource"])]
    ((status, body),) = asyncio.run(post_all(create_app(registry()), [(case, endpoint, doc)]))
    assert judge(case, doc, status, body) == "denied", body[:300]
    message = json.loads(body)["response"]["status"]["message"]
    assert "inconsistent admission review: request.kind is" in message, message


def routed_elsewhere(doc: Any) -> bool:
    """A well-formed DELETE routed to a guarded resource whose ``request.kind`` is not that resource's kind."""
    request = doc["request"]
    resource = request["resource"]
    routed = ROUTED.get((resource.get("group") or "", resource["resource"]))
    kind = request["kind"]
    return (request["operation"] == "DELETE" and routed is not None
            and (kind.get("group") or "", kind["kind"]) != routed)


def test_every_malformed_review_is_a_400_naming_its_fields_and_nothing_is_an_internal_error(
        tracebacks: Tracebacks, tls_dir: Path) -> None:
    cases = list(single_mutations())
    assert len(cases) < CASES, f"{len(cases)} single mutations: raise CASES"
    cases += random_cases(CASES - len(cases))
    app = create_app(registry())
    answers = asyncio.run(post_all(app, cases))
    outcomes: dict[str, int] = {}
    forged = 0
    for (case, _, doc), (status, body) in zip(cases, answers, strict=True):
        outcome = judge(case, doc, status, body)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if outcome != "400" and routed_elsewhere(doc):  # what the resource routes is judged, never skipped
            forged += 1
            assert outcome == "denied", f"{case}: a guarded resource under a forged kind was allowed"
    assert tracebacks.bad == [], tracebacks.bad[:5]
    print(f"fuzz: {len(cases)} cases: {outcomes}, {forged} routed to a guarded resource under another kind")
    assert forged >= len(FORGED_KIND), forged
    # the mutations reached every channel: malformed bodies, allowed and refused answers
    assert outcomes["400"] > 2_000 and outcomes["allowed"] > 1_000 and outcomes["denied"] > 500, outcomes

    # the same judge over real TLS, on every n-th case
    srv = serve(create_app(registry()), tls_dir)
    try:
        with srv.client() as client:
            for case, endpoint, doc in cases[::len(cases) // TLS_CASES][:TLS_CASES]:
                resp = client.post(endpoint, content=encode(doc), headers={"Content-Type": "application/json"})
                judge(f"tls {case}", doc, resp.status_code, resp.content)
    finally:
        srv.stop()
    assert tracebacks.bad == [], tracebacks.bad[:5]
