"""`kustodian reclaim plan` and `kustodian capacity plan` over manifests, no cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.conftest import kustodian

GiB = 1 << 30


def ac(name: str, node: str, sc: str, size: int) -> dict[str, Any]:
    return {"apiVersion": "kustodian.io/v1alpha1", "kind": "AvailableCapacity", "metadata": {"name": name},
            "spec": {"location": f"uuid-{name}", "nodeId": node, "storageClass": sc, "size": size}}


def acr(name: str, nodes: list[str], requests: list[tuple[str, str, int]]) -> dict[str, Any]:
    return {"apiVersion": "kustodian.io/v1alpha1", "kind": "AvailableCapacityReservation",
            "metadata": {"name": name, "creationTimestamp": "2026-11-22T10:00:00Z"},
            "spec": {"namespace": "default", "status": "REQUESTED",
                     "nodeRequests": {"requested": nodes},
                     "reservationRequests": [{"capacityRequest": {"name": n, "storageClass": sc, "size": size}}
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
