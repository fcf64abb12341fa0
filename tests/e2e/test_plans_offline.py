"""`kustodian reclaim plan` and `kustodian capacity plan` over manifests, no cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import kustodian

GiB = 1 << 30


def ac(name: str, node: str, sc: str, size: int) -> dict[str, Any]:
    return {"apiVersion": "csi-baremetal.dell.com/v1", "kind": "AvailableCapacity", "metadata": {"name": name},
            "spec": {"Location": f"uuid-{name}", "NodeId": node, "storageClass": sc, "Size": size}}


def acr(name: str, nodes: list[str], requests: list[tuple[str, str, int]]) -> dict[str, Any]:
    return {"apiVersion": "csi-baremetal.dell.com/v1", "kind": "AvailableCapacityReservation",
            "metadata": {"name": name, "creationTimestamp": "2026-11-22T10:00:00Z"},
            "spec": {"Namespace": "default", "Status": "REQUESTED",
                     "NodeRequests": {"Requested": nodes},
                     "ReservationRequests": [{"CapacityRequest": {"Name": n, "StorageClass": sc, "Size": size}}
                                             for n, sc, size in requests]}}


def test_capacity_plan_from_manifests_packs_lvg_and_rejects_what_cannot_fit(tmp_path: Path) -> None:
    docs = [ac("hdd-a", "node-1", "HDD", 100 * GiB), ac("hdd-b", "node-1", "HDD", 200 * GiB),
            ac("hdd-c", "node-1", "HDD", 500 * GiB),
            acr("pod-1", ["node-1"], [("pvc1", "HDD", 10 * GiB), ("pvc2", "HDDLVG", 20 * GiB),
                                      ("pvc3", "HDDLVG", 10 * GiB), ("pvc4", "HDD", 100 * GiB)]),
            acr("pod-2", ["node-1"], [("big", "HDD", 900 * GiB)])]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(docs))
    proc = kustodian("capacity", "plan", "--from", str(tmp_path))
    assert proc.returncode == 1, proc.stderr  # pod-2 cannot fit
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert rows[0][:4] == ["ACR", "STATUS", "NODE", "REQUEST"]
    by_request = {r[3]: r for r in rows[1:] if r[0] == "pod-1"}
    assert {r[1] for r in by_request.values()} == {"RESERVED"}
    # both LVG volumes share one drive; the plain ones take whole drives
    assert by_request["pvc2"][4] == by_request["pvc3"][4]
    assert len({by_request[k][4] for k in ("pvc1", "pvc2", "pvc4")}) == 3
    assert any(r[0] == "pod-2" and r[1] == "REJECTED" for r in rows[1:])


def test_capacity_plan_from_upstreams_example_objects(tmp_path: Path, upstream: Path) -> None:
    proc = kustodian("capacity", "plan", "--from", str(upstream / "csi-baremetal" / "derived"))
    assert proc.returncode == 0, proc.stderr
    rows = {r[3]: r for r in (line.split() for line in proc.stdout.splitlines()[1:])}
    assert rows["www-web-0"][:3] == ["default-web-0", "RESERVED", "b7e8a0f4-6c1d-4f38-9a52-0d3e6f1c2a71"]
    assert rows["www-web-0"][4] == "6a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d/2f4a6c8e-1b3d-4e5f-8a7b-9c0d1e2f3a4b"
    assert rows["logs-web-0"][4].startswith("0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f/")


def _with(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(doc))
    *parents, last = path.split(".")
    cur: Any = out
    for key in parents:
        cur = cur[int(key)] if isinstance(cur, list) else cur[key]
    cur[last] = value
    return out


GOOD_AC = ac("hdd-a", "node-1", "HDD", 100 * GiB)
GOOD_ACR = acr("default-pod-1", ["node-1"], [("data", "HDD", GiB)])
MALFORMED = [
    ("non-object-ac", _with(GOOD_AC, "spec", ["HDD"]), "AvailableCapacity hdd-a: spec: must be an object"),
    ("ac-without-a-name", _with(GOOD_AC, "metadata", "hdd-a"), "AvailableCapacity #1 (no name): metadata.name"),
    ("list-valued-storage-class", _with(GOOD_AC, "spec.storageClass", ["HDD"]),
     "AvailableCapacity hdd-a: spec.storageClass: must be one of"),
    ("list-valued-request-class", _with(GOOD_ACR, "spec.ReservationRequests.0.CapacityRequest.StorageClass", ["HDD"]),
     "AvailableCapacityReservation default-pod-1: spec.ReservationRequests[0].CapacityRequest.StorageClass"),
    ("list-valued-reserved-node", _with(GOOD_ACR, "spec.NodeRequests.Reserved", [["node-1"]]),
     "AvailableCapacityReservation default-pod-1: spec.NodeRequests.Reserved[0]: must be a non-empty string"),
    ("non-string-timestamp", _with(GOOD_ACR, "metadata.creationTimestamp", 5),
     "AvailableCapacityReservation default-pod-1: metadata.creationTimestamp: must be a string"),
]


@pytest.mark.parametrize(("doc", "message"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_capacity_plan_names_the_object_and_field_of_malformed_input(
        tmp_path: Path, doc: dict[str, Any], message: str) -> None:
    others = [d for d in (GOOD_AC, GOOD_ACR) if d["kind"] != doc["kind"]]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all([doc, *others]))
    proc = kustodian("capacity", "plan", "--from", str(tmp_path))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("kustodian capacity plan: invalid: ") and message in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_capacity_plan_with_a_year_9999_timestamp_plans_without_overflow(tmp_path: Path) -> None:
    docs = [GOOD_AC, _with(GOOD_ACR, "spec.ReservationRequests.0.CapacityRequest.StorageClass", "HDDLVG"),
            _with(acr("default-pod-0", ["node-1"], [("x", "HDDLVG", GiB)]), "spec.Status", "RESERVED"),
            ]
    docs[2]["spec"]["NodeRequests"]["Reserved"] = ["node-1"]
    docs[2]["spec"]["ReservationRequests"][0]["Reservations"] = ["hdd-a"]
    docs[1]["metadata"]["creationTimestamp"] = "9999-12-31T23:59:59Z"  # sequential LVG wait deadline
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(docs))
    proc = kustodian("capacity", "plan", "--from", str(tmp_path))
    assert "Traceback" not in proc.stderr and proc.returncode == 0, proc.stderr
    assert "WAIT" in proc.stdout  # waits for the holder; the deadline saturates instead of overflowing


def test_reclaim_plan_from_manifests(tmp_path: Path) -> None:
    docs = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "rbd",
         "annotations": {"reclaimspace.csiaddons.openshift.io/schedule": "@daily"}}, "provisioner": "x"},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "app"},
         "spec": {"storageClassName": "rbd"}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "own", "namespace": "app",
         "annotations": {"reclaimspace.csiaddons.openshift.io/schedule": "0 3 * * 1"}},
         "spec": {"storageClassName": "rbd"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kustodian-reclaim-config",
                                                              "namespace": "kustodian"},
         "data": {"config.json": json.dumps({"auto-reclaim-storageclass": {"other": "@weekly"}})}},
    ]
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all(docs))
    proc = kustodian("reclaim", "plan", "--from", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[1]: line for line in proc.stdout.splitlines()[1:]}
    assert "@daily" in rows["data"] and "storageclass/rbd" in rows["data"]
    assert "0 3 * * 1" in rows["own"] and " pvc " in rows["own"]
