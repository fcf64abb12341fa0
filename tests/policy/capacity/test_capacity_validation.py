"""Admission validation: every error, with its field path, one row per kind of mistake."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kustodian.policy.capacity import validate_available_capacity, validate_reservation

from .capacity_builders import GiB, ac, acr, held, req

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    def mutate(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        cur: Any = obj
        for key in parents:
            cur = cur[int(key)] if isinstance(cur, list) else cur[key]
        if isinstance(cur, list):
            cur[int(last)] = value
        else:
            cur[last] = value

    return mutate


def _drop(path: str) -> Mutation:
    def mutate(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        cur: Any = obj
        for key in parents:
            cur = cur[int(key)] if isinstance(cur, list) else cur[key]
        del cur[last]

    return mutate


def _all(*mutations: Mutation) -> Mutation:
    def mutate(obj: dict[str, Any]) -> None:
        for m in mutations:
            m(obj)

    return mutate


AC_CASES: list[tuple[str, Mutation, list[str]]] = [
    ("valid", lambda o: None, []),
    ("valid-lvg-with-group", _set("metadata.labels", {"drive.csi-baremetal.dell.com/storage-group": "fast"}), []),
    ("size-zero-is-valid", _set("spec.Size", 0), []),
    ("negative-size", _set("spec.Size", -5), ["spec.Size: must be a non-negative integer, got -5"]),
    ("bool-size", _set("spec.Size", True), ["spec.Size: must be a non-negative integer, got True"]),
    ("string-size", _set("spec.Size", "5"), ["spec.Size: must be a non-negative integer, got '5'"]),
    ("float-size", _set("spec.Size", 5.0), ["spec.Size: must be a non-negative integer, got 5.0"]),
    ("size-beyond-int64", _set("spec.Size", 1 << 63),
     [f"spec.Size: must be at most {(1 << 63) - 1}, got {1 << 63}"]),
    # omitempty: upstream leaves a zero size out (the AC of a drive that is not clean).
    ("missing-size-is-zero", _drop("spec.Size"), []),
    ("null-size-is-zero", _set("spec.Size", None), []),
    ("unknown-storage-class", _set("spec.storageClass", "TAPE"),
     ["spec.storageClass: must be one of HDD, SSD, NVME, HDDLVG, SSDLVG, NVMELVG, SYSLVG, got 'TAPE'"]),
    ("any-is-not-an-ac-class", _set("spec.storageClass", "ANY"),
     ["spec.storageClass: must be one of HDD, SSD, NVME, HDDLVG, SSDLVG, NVMELVG, SYSLVG, got 'ANY'"]),
    ("lowercase-class", _set("spec.storageClass", "hdd"),
     ["spec.storageClass: must be one of HDD, SSD, NVME, HDDLVG, SSDLVG, NVMELVG, SYSLVG, got 'hdd'"]),
    ("missing-node", _drop("spec.NodeId"), ["spec.NodeId: required"]),
    ("empty-location", _set("spec.Location", ""), ["spec.Location: must be a non-empty string, got ''"]),
    ("missing-name", _drop("metadata.name"), ["metadata.name: required"]),
    ("group-label-not-a-string", _set("metadata.labels", {"drive.csi-baremetal.dell.com/storage-group": 1}),
     ["metadata.labels[drive.csi-baremetal.dell.com/storage-group]: must be a string, got 1"]),
    ("wrong-kind", _set("kind", "PersistentVolume"), ["kind: must be AvailableCapacity, got 'PersistentVolume'"]),
    ("missing-spec", _drop("spec"), ["spec: required"]),
    ("spec-not-an-object", _set("spec", []), ["spec: must be an object, got []"]),
    (
        "every-error-is-reported",
        _all(_set("spec.Size", -1), _set("spec.storageClass", "X"), _set("spec.NodeId", "")),
        [
            "spec.NodeId: must be a non-empty string, got ''",
            "spec.storageClass: must be one of HDD, SSD, NVME, HDDLVG, SSDLVG, NVMELVG, SYSLVG, got 'X'",
            "spec.Size: must be a non-negative integer, got -1",
        ],
    ),
]


@pytest.mark.parametrize(("mutate", "errors"), [(m, e) for _, m, e in AC_CASES], ids=[i for i, _, _ in AC_CASES])
def test_validate_available_capacity(mutate: Mutation, errors: list[str]) -> None:
    obj = ac("drive", "n1", "HDD", GiB)
    mutate(obj)
    assert validate_available_capacity(obj) == errors


RR = "spec.ReservationRequests"
CLASSES = "HDD, SSD, NVME, HDDLVG, SSDLVG, NVMELVG, SYSLVG, ANY"

ACR_CASES: list[tuple[str, Mutation, list[str]]] = [
    ("valid", lambda o: None, []),
    ("any-and-group-are-valid", _set(f"{RR}.1.CapacityRequest", {"Name": "w", "StorageClass": "ANY", "Size": 0,
                                                                "StorageGroup": "fast"}), []),
    ("negative-request-size", _set(f"{RR}.1.CapacityRequest.Size", -5),
     [f"{RR}[1].CapacityRequest.Size: must be a non-negative integer, got -5"]),
    ("bool-request-size", _set(f"{RR}.0.CapacityRequest.Size", False),
     [f"{RR}[0].CapacityRequest.Size: must be a non-negative integer, got False"]),
    ("string-request-size", _set(f"{RR}.0.CapacityRequest.Size", "10Gi"),
     [f"{RR}[0].CapacityRequest.Size: must be a non-negative integer, got '10Gi'"]),
    ("missing-request-size-is-zero", _drop(f"{RR}.0.CapacityRequest.Size"), []),  # omitempty
    ("unknown-request-class", _set(f"{RR}.1.CapacityRequest.StorageClass", "FAST"),
     [f"{RR}[1].CapacityRequest.StorageClass: must be one of {CLASSES}, got 'FAST'"]),
    ("missing-request-name", _drop(f"{RR}.0.CapacityRequest.Name"), [f"{RR}[0].CapacityRequest.Name: required"]),
    ("duplicate-request-name", _set(f"{RR}.1.CapacityRequest.Name", "v"),
     [f"{RR}[1].CapacityRequest.Name: duplicate request name 'v'"]),
    ("group-not-a-string", _set(f"{RR}.0.CapacityRequest.StorageGroup", 7),
     [f"{RR}[0].CapacityRequest.StorageGroup: must be a string, got 7"]),
    ("missing-capacity-request", _drop(f"{RR}.0.CapacityRequest"), [f"{RR}[0].CapacityRequest: required"]),
    ("request-not-an-object", _set(f"{RR}.0", "v"), [f"{RR}[0]: must be an object, got 'v'"]),
    ("reservations-not-a-list", _set(f"{RR}.0.Reservations", "ac"),
     [f"{RR}[0].Reservations: must be a list of strings, got 'ac'"]),
    ("reservation-not-a-string", _set(f"{RR}.0.Reservations", ["ok", 3]),
     [f"{RR}[0].Reservations[1]: must be a non-empty string, got 3"]),
    ("no-requests", _set(RR, []), [f"{RR}: must hold at least one request"]),
    ("requests-not-a-list", _set(RR, {}), [f"{RR}: must be a list, got {{}}"]),
    ("missing-requests", _drop(RR), [f"{RR}: required"]),
    ("bad-status", _set("spec.Status", "DONE"),
     ["spec.Status: must be one of REQUESTED, RESERVED, REJECTED, CANCELLED, got 'DONE'"]),
    ("missing-status", _drop("spec.Status"), ["spec.Status: required"]),
    ("missing-namespace-is-default", _drop("spec.Namespace"), []),
    ("namespace-not-a-string", _set("spec.Namespace", 3), ["spec.Namespace: must be a string, got 3"]),
    ("missing-node-requests", _drop("spec.NodeRequests"), ["spec.NodeRequests: required"]),
    ("node-requests-not-an-object", _set("spec.NodeRequests", ["a"]),
     ["spec.NodeRequests: must be an object, got ['a']"]),
    ("missing-requested-nodes", _drop("spec.NodeRequests.Requested"), ["spec.NodeRequests.Requested: required"]),
    ("empty-node-name", _set("spec.NodeRequests.Requested", ["a", ""]),
     ["spec.NodeRequests.Requested[1]: must be a non-empty string, got ''"]),
    ("cancelled-is-a-status", _set("spec.Status", "CANCELLED"), []),
    ("annotations-not-an-object", _set("metadata.annotations", "x"),
     ["metadata.annotations: must be an object, got 'x'"]),
    ("bad-creation-timestamp-type", _set("metadata.creationTimestamp", 5),
     ["metadata.creationTimestamp: must be a string, got 5"]),
    ("wrong-kind", _set("kind", "AvailableCapacity"),
     ["kind: must be AvailableCapacityReservation, got 'AvailableCapacity'"]),
    (
        "every-error-is-reported",
        _all(_set("spec.Status", "?"), _set(f"{RR}.0.CapacityRequest.Size", -1)),
        [
            "spec.Status: must be one of REQUESTED, RESERVED, REJECTED, CANCELLED, got '?'",
            f"{RR}[0].CapacityRequest.Size: must be a non-negative integer, got -1",
        ],
    ),
]


@pytest.mark.parametrize(("mutate", "errors"), [(m, e) for _, m, e in ACR_CASES], ids=[i for i, _, _ in ACR_CASES])
def test_validate_reservation(mutate: Mutation, errors: list[str]) -> None:
    obj = acr("pod", [req("v", "HDD", GiB), req("w", "HDDLVG", GiB)], ["a", "b"])
    mutate(obj)
    assert validate_reservation(obj) == errors


RESERVED_CASES: list[tuple[str, Mutation, list[str]]] = [
    ("coherent", lambda o: None, []),
    ("no-reserved-nodes", _set("spec.NodeRequests.Reserved", []),
     ["spec.NodeRequests.Reserved: a RESERVED reservation needs at least one node"]),
    ("reserved-node-not-requested", _set("spec.NodeRequests.Reserved", ["z"]),
     ["spec.NodeRequests.Reserved[0]: node 'z' was not requested"]),
    ("one-ac-per-reserved-node", _set(f"{RR}.0.Reservations", ["a1", "b1"]),
     [f"{RR}[0].Reservations: must list one AC per reserved node (1), got 2"]),
    ("missing-reservations", _drop(f"{RR}.0.Reservations"),
     [f"{RR}[0].Reservations: must list one AC per reserved node (1), got 0"]),
]


@pytest.mark.parametrize(
    ("mutate", "errors"), [(m, e) for _, m, e in RESERVED_CASES], ids=[i for i, _, _ in RESERVED_CASES]
)
def test_validate_reserved_reservation_is_coherent(mutate: Mutation, errors: list[str]) -> None:
    obj = held("pod", [("v", "HDD", GiB, ["a1"])], ["a"])
    mutate(obj)
    assert validate_reservation(obj) == errors


def test_validation_does_not_mutate() -> None:
    obj = acr("pod", [req("v", "HDD", -1)], ["a"])
    before = copy.deepcopy(obj)
    validate_reservation(obj)
    assert obj == before


@pytest.mark.parametrize("obj", [{}, {"spec": None}, {"metadata": "x", "spec": "y"}], ids=["empty", "null-spec", "junk"])
def test_validation_of_junk_never_raises(obj: dict[str, Any]) -> None:
    assert validate_reservation(obj)
    assert validate_available_capacity(obj)
