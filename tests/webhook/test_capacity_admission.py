"""Capacity objects at admission, over real HTTPS: malformed ones refused with field paths."""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.webhook.features import capacity
from kustodian.webhook.registry import Registry
from tests.webhook.conftest import RunningServer

# the resources the CRDs serve (../shared/upstream/csi-baremetal/crds): what the API server routes by
PLURALS = {"AvailableCapacity": "availablecapacities",
           "AvailableCapacityReservation": "availablecapacityreservations"}


def review(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "cap-1", "kind": {"group": "csi-baremetal.dell.com", "version": "v1", "kind": kind},
                        "resource": {"group": "csi-baremetal.dell.com", "version": "v1",
                                     "resource": PLURALS[kind]},
                        "name": obj["metadata"]["name"], "operation": "CREATE", "object": obj}}


GOOD_AC: dict[str, Any] = {"apiVersion": "csi-baremetal.dell.com/v1", "kind": "AvailableCapacity",
                           "metadata": {"name": "ac-1"},
                           "spec": {"Location": "uuid-1", "NodeId": "n1", "storageClass": "HDD", "Size": 1 << 30}}


@pytest.mark.parametrize(("kind", "spec", "expected"), [
    ("AvailableCapacity", {**GOOD_AC["spec"], "Size": -5}, "spec.Size"),
    ("AvailableCapacity", {**GOOD_AC["spec"], "Size": "10Gi"}, "spec.Size"),
    ("AvailableCapacity", {**GOOD_AC["spec"], "Size": True}, "spec.Size"),
    ("AvailableCapacity", {**GOOD_AC["spec"], "storageClass": "FLOPPY"}, "spec.storageClass"),
    ("AvailableCapacityReservation",
     {"Namespace": "default", "Status": "REQUESTED", "NodeRequests": {"Requested": ["n1"]},
      "ReservationRequests": [{"CapacityRequest": {"Name": "v", "StorageClass": "HDD", "Size": 1.5}}]},
     "spec.ReservationRequests[0].CapacityRequest.Size"),
], ids=["negative-size", "string-size", "bool-size", "unknown-class", "fractional-request"])
def test_malformed_capacity_objects_are_refused_with_the_field_path(
        running: tuple[RunningServer, Registry], kind: str, spec: dict[str, Any], expected: str) -> None:
    srv, registry = running
    capacity.register(registry)
    obj = {"apiVersion": "csi-baremetal.dell.com/v1", "kind": kind, "metadata": {"name": "x"}, "spec": spec}
    with srv.client() as client:
        resp = client.post("/validate", json=review(kind, obj)).json()["response"]
        assert resp["allowed"] is False and resp["status"]["code"] == 422
        assert expected in resp["status"]["message"]
        ok = client.post("/validate", json=review("AvailableCapacity", GOOD_AC)).json()["response"]
        assert ok == {"uid": "cap-1", "allowed": True}
