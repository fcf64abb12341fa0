"""The kinds of body a 12,000-case fuzz once found reaching a reclaim handler's traceback (an
"internal error" answer), over real HTTPS, each now answered as what it is.

A body whose fields have types no API server sends (``metadata.namespace`` a number, ``spec`` a list)
is a malformed review: an HTTP 400 whose ``fields`` name the field path.  A body that is well typed but
names another object than its request (a CREATE whose ``metadata.namespace`` is not the request's) is an
inconsistent review: the mutator, a convenience, lets the PVC through without defaults and says why in a
warning; a validator refuses it.  A null ``metadata`` is Go's zero value, and the ConfigMap validator
judges the object the request names.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kustodian.policy.store import ListView
from kustodian.webhook.features.deletion_guard import DeletionGuard
from kustodian.webhook.features.reclaim import ReclaimPolicyWebhook
from kustodian.webhook.registry import Registry
from tests.policy.deletion.builders import NS, blockpool, cluster, rbd_pv, view
from tests.webhook.conftest import RunningServer
from tests.webhook.test_forged_reviews import SyncedView

SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
CONFIG = ("kustodian", "kustodian-reclaim-config")
SC = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "rook-ceph.rbd.csi.ceph.com",
      "metadata": {"name": "rook-ceph-block", "annotations": {SCHEDULE: "@daily"}}}
PVC = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
       "metadata": {"name": "data", "namespace": "app", "annotations": {"note": "x"}},
       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "rook-ceph-block"}}
CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIG[1], "namespace": CONFIG[0]},
              "data": {"config.json": "{}"}}
POOL = blockpool("replicapool")


def review(op: str, obj: Any, old: Any = None, **request: Any) -> dict[str, Any]:
    subject = old if op == "DELETE" else obj
    kind = {"PersistentVolumeClaim": ("", "persistentvolumeclaims"), "ConfigMap": ("", "configmaps"),
            "CephBlockPool": ("ceph.rook.io", "cephblockpools")}[subject["kind"]]
    meta = subject["metadata"] if isinstance(subject["metadata"], dict) else {}
    name, namespace = meta.get("name"), meta.get("namespace")  # the request's own are always strings
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-33", "kind": {"group": kind[0], "version": "v1", "kind": subject["kind"]},
        "resource": {"group": kind[0], "version": "v1", "resource": kind[1]},
        "name": name if isinstance(name, str) else "data",
        "namespace": namespace if isinstance(namespace, str) else "app", "operation": op,
        "userInfo": {"username": "alice"}, "object": obj, "oldObject": old, **request}}


def edited(obj: dict[str, Any], path: str | tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    *parents, last = path.split(".") if isinstance(path, str) else path
    cur = out
    for key in parents:
        cur = cur[key]
    cur[last] = value
    return out


@pytest.fixture
def webhook(running: tuple[RunningServer, Registry]) -> Iterator[RunningServer]:
    srv, registry = running
    reclaim = ReclaimPolicyWebhook(*CONFIG)
    reclaim.register(registry, ListView({"StorageClass.storage.k8s.io": [SC],  # type: ignore[arg-type]
                                         "Namespace": [{"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": "app"}}],
                                         "CSIAddonsNode.csiaddons.openshift.io": []}))
    listed = view(cluster(), POOL, rbd_pv("pv-1", pool="replicapool"))
    from kustodian.policy.deletion import rook_rules

    DeletionGuard(rook_rules(), SyncedView(listed), None).register(registry)  # type: ignore[arg-type]
    yield srv


def pvc_create(path: str | tuple[str, ...], value: Any) -> dict[str, Any]:
    return review("CREATE", edited(PVC, path, value))


MALFORMED = [
    # (id, endpoint, body, the field path the 400 names)
    ("pvc-namespace-a-number", "/mutate", pvc_create("metadata.namespace", 7), "request.object.metadata.namespace"),
    ("pvc-namespace-a-list", "/mutate", pvc_create("metadata.namespace", ["app"]),
     "request.object.metadata.namespace"),
    ("pvc-namespace-an-object", "/mutate", pvc_create("metadata.namespace", {"a": 1}),
     "request.object.metadata.namespace"),
    ("pvc-metadata-a-string", "/mutate", pvc_create("metadata", "data"), "request.object.metadata"),
    ("pvc-annotations-a-string", "/mutate", pvc_create("metadata.annotations", "x"),
     "request.object.metadata.annotations"),
    ("pvc-annotation-a-number", "/mutate", pvc_create(("metadata", "annotations", SCHEDULE), 5),
     f"request.object.metadata.annotations[{SCHEDULE}]"),
    ("pvc-labels-a-list", "/mutate", pvc_create("metadata.labels", []), "request.object.metadata.labels"),
    ("pvc-name-a-number", "/mutate", pvc_create("metadata.name", 1), "request.object.metadata.name"),
    ("pvc-spec-a-list", "/mutate", pvc_create("spec", []), "request.object.spec"),
    ("pvc-storageclassname-a-number", "/mutate", pvc_create("spec.storageClassName", 5),
     "request.object.spec.storageClassName"),
    ("pvc-storageclassname-an-object", "/validate", pvc_create("spec.storageClassName", {"name": "x"}),
     "request.object.spec.storageClassName"),
    ("pvc-old-annotations-a-list", "/validate", review("UPDATE", PVC, edited(PVC, "metadata.annotations", [])),
     "request.oldObject.metadata.annotations"),
    ("configmap-metadata-a-number", "/validate", review("CREATE", edited(CONFIG_MAP, "metadata", 0)),
     "request.object.metadata"),
    ("configmap-data-a-string", "/validate", review("CREATE", edited(CONFIG_MAP, "data", "{}")),
     "request.object.data"),
    ("configmap-config-a-number", "/validate", review("CREATE", edited(CONFIG_MAP, ("data", "config.json"), 3)),
     "request.object.data[config.json]"),
    ("object-a-string", "/mutate", review("CREATE", PVC, object="x"), "request.object"),
    ("uid-a-number", "/mutate", review("CREATE", PVC, uid=5), "request.uid"),
    ("dryrun-a-string", "/validate", review("CREATE", PVC, dryRun="true"), "request.dryRun"),
    ("operation-unknown", "/validate", review("CREATE", PVC, operation="PATCH"), "request.operation"),
    ("group-not-a-string", "/validate", review("CREATE", PVC, userInfo={"username": "a", "groups": [1]}),
     "request.userInfo.groups[0]"),
]


@pytest.mark.parametrize(("endpoint", "body", "path"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_a_malformed_body_is_a_400_naming_the_field(webhook: RunningServer, endpoint: str, body: dict[str, Any],
                                                    path: str) -> None:
    with webhook.client() as client:
        resp = client.post(endpoint, json=body)
    assert resp.status_code == 400, resp.text
    answer = resp.json()
    assert path in answer["fields"], answer
    assert answer["error"].startswith("not an AdmissionReview v1: ") and path in answer["error"], answer


def test_a_pvc_naming_another_namespace_gets_no_defaults_and_a_warning_naming_the_field(
        webhook: RunningServer) -> None:
    body = review("CREATE", edited(PVC, "metadata.namespace", "other"))
    body["request"]["namespace"] = "app"
    with webhook.client() as client:
        answer = client.post("/mutate", json=body).json()["response"]
        fine = client.post("/mutate", json=review("CREATE", PVC)).json()["response"]
        refused = client.post("/validate", json=body).json()["response"]
    assert answer["allowed"] is True and "patch" not in answer, answer
    assert answer["warnings"] == ["kustodian: inconsistent admission review, no defaults applied: "
                                  "request.object.metadata.namespace: the review names app/data but its object "
                                  "is other/data"]
    assert fine["allowed"] is True and fine.get("patch"), fine  # the same PVC in its namespace gets its schedule
    assert refused["allowed"] is False and refused["status"]["code"] == 400, refused
    assert "request.object.metadata.namespace" in refused["status"]["message"]


def test_a_config_map_with_null_metadata_is_judged_as_the_one_the_request_names(webhook: RunningServer) -> None:
    bad = edited(edited(CONFIG_MAP, "metadata", None), "data", {"config.json": "not json"})
    body = review("CREATE", CONFIG_MAP, object=bad)
    with webhook.client() as client:
        answer = client.post("/validate", json=body).json()["response"]
    assert answer["allowed"] is False and answer["status"]["code"] == 422, answer
    assert "config.json" in answer["status"]["message"]


def test_a_guarded_delete_with_a_malformed_old_object_is_still_refused_in_the_answer(webhook: RunningServer) -> None:
    """Not a 400: where the deletion guard's failurePolicy is Ignore, a 400 would let the DELETE through."""
    body = review("DELETE", None, edited(POOL, "metadata", "replicapool"))
    body["request"] |= {"name": "replicapool", "namespace": NS}
    with webhook.client() as client:
        resp = client.post("/validate", json=body)
    assert resp.status_code == 200
    answer = resp.json()["response"]
    assert answer["allowed"] is False and answer["status"]["code"] == 400, answer
    assert "request.oldObject.metadata" in answer["status"]["message"]


@pytest.mark.parametrize(("body", "more"), [
    (review("CREATE", edited(PVC, "metadata.annotations", {f"k{i}": i for i in range(1000)})),
     "and 980 more"),
    (review("CREATE", PVC, userInfo={"username": "a", "groups": list(range(1000))}), "and 980 more"),
], ids=["annotations", "groups"])
def test_a_body_with_a_thousand_wrong_values_names_twenty(webhook: RunningServer, body: dict[str, Any],
                                                          more: str) -> None:
    with webhook.client() as client:
        resp = client.post("/mutate", json=body)
    assert resp.status_code == 400
    answer = resp.json()
    assert len(answer["fields"]) == 20 and answer["error"].endswith(more), answer
