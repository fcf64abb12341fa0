"""Builders for capacity-planning tests, and an invariant checker that does not trust the planner.

The checker recomputes, from the written ACRs alone, what every AC has been promised,
with the arithmetic spelled out again here (not imported) so a bug in the planner's
arithmetic cannot hide itself.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kustodian.policy.capacity import ReservationDecision, apply_decision

MiB = 1 << 20
GiB = 1 << 30
NOW = datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
CREATED = "2024-01-01T11:59:00Z"


def ac(
    name: str, node: str, storage_class: str, size: int, *, group: str | None = None, location: str | None = None,
    tainted: bool = False,
) -> dict[str, Any]:
    labels = {"drive.csi-baremetal.dell.com/storage-group": group} if group is not None else {}
    if tainted:
        labels["drive.csi-baremetal.dell.com/taint"] = "NoSchedule"
    spec: dict[str, Any] = {"Location": location or f"loc-{name}", "NodeId": node, "storageClass": storage_class}
    if size:
        spec["Size"] = size  # omitempty, as upstream writes it
    return {
        "apiVersion": "csi-baremetal.dell.com/v1",
        "kind": "AvailableCapacity",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


def req(
    name: str, storage_class: str, size: int, *, group: str | None = None, reservations: Sequence[str] = ()
) -> dict[str, Any]:
    capacity: dict[str, Any] = {"Name": name, "StorageClass": storage_class, "Size": size}
    if group is not None:
        capacity["StorageGroup"] = group
    return {"CapacityRequest": capacity, "Reservations": list(reservations)}


def acr(
    name: str,
    requests: Sequence[dict[str, Any]],
    nodes: Sequence[str],
    *,
    status: str = "REQUESTED",
    reserved: Sequence[str] = (),
    created: str | None = CREATED,
    namespace: str = "default",
    annotations: Mapping[str, str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if created is not None:
        metadata["creationTimestamp"] = created
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T12:00:00Z"
    return {
        "apiVersion": "csi-baremetal.dell.com/v1",
        "kind": "AvailableCapacityReservation",
        "metadata": metadata,
        "spec": {
            "Namespace": namespace,
            "Status": status,
            "NodeRequests": {"Requested": list(nodes), "Reserved": list(reserved)},
            "ReservationRequests": [dict(r) for r in requests],
        },
    }


def held(name: str, requests: Sequence[tuple[str, str, int, Sequence[str]]], nodes: Sequence[str]) -> dict[str, Any]:
    """A RESERVED ACR: ``(request, class, size, [AC per node])`` on ``nodes``."""
    return acr(
        name,
        [req(n, sc, size, reservations=acs) for n, sc, size, acs in requests],
        nodes,
        status="RESERVED",
        reserved=nodes,
    )


# -- the independent checker ---------------------------------------------------------

_PE = 4 * MiB
_MEDIA = {"HDDLVG": "HDD", "SSDLVG": "SSD", "NVMELVG": "NVME", "SYSLVG": None}


def aligned(size: int) -> int:
    return (size + _PE - 1) // _PE * _PE


def usable_for_lvg(ac_obj: Mapping[str, Any]) -> int:
    size: int = ac_obj["spec"].get("Size", 0)
    if ac_obj["spec"]["storageClass"] in _MEDIA:
        return size // _PE * _PE
    return max(0, (size - MiB) // _PE * _PE)


def compatible(request_class: str, ac_class: str) -> bool:
    if request_class == "ANY":
        return ac_class in ("HDD", "SSD", "NVME")
    if request_class in _MEDIA:
        return ac_class in (request_class, _MEDIA[request_class])
    return ac_class == request_class


def written(acrs: Iterable[Mapping[str, Any]], decisions: Iterable[ReservationDecision]) -> list[dict[str, Any]]:
    """The ACRs as the controller would have written them after ``decisions``."""
    by_name = {d.acr_name: d for d in decisions}
    out = []
    for obj in acrs:
        d = by_name.get(obj["metadata"]["name"])
        out.append(apply_decision(obj, d) if d is not None else dict(obj))
    return out


def assert_sound(acs: Sequence[Mapping[str, Any]], acrs: Iterable[Mapping[str, Any]]) -> None:
    """No AC over-committed, and every RESERVED ACR's volumes fit where they were put."""
    by_name = {a["metadata"]["name"]: a for a in acs}
    whole: dict[str, int] = defaultdict(int)
    lvg: dict[str, int] = defaultdict(int)
    for obj in acrs:
        spec = obj["spec"]
        if spec["Status"] != "RESERVED":
            continue
        reserved = spec["NodeRequests"]["Reserved"]
        requested = spec["NodeRequests"]["Requested"]
        assert reserved, obj["metadata"]["name"]
        assert [n for n in requested if n in reserved] == reserved  # requested order, no strangers
        for item in spec["ReservationRequests"]:
            capacity = item["CapacityRequest"]
            assert len(item["Reservations"]) == len(reserved)
            for node, ac_name in zip(reserved, item["Reservations"], strict=True):
                target = by_name[ac_name]
                labels = target["metadata"].get("labels") or {}
                assert target["spec"]["NodeId"] == node
                assert labels.get("drive.csi-baremetal.dell.com/storage-group", "") == capacity.get("StorageGroup", "")
                assert labels.get("drive.csi-baremetal.dell.com/taint") != "NoSchedule"
                assert compatible(capacity["StorageClass"], target["spec"]["storageClass"])
                if capacity["StorageClass"] in _MEDIA:
                    lvg[ac_name] += aligned(capacity["Size"])
                else:
                    assert target["spec"].get("Size", 0) >= capacity["Size"]
                    whole[ac_name] += 1
    for ac_name, count in whole.items():
        assert count == 1 and ac_name not in lvg, f"{ac_name} promised to {count} whole volumes + LVG"
    for ac_name, total in lvg.items():
        assert total <= usable_for_lvg(by_name[ac_name]), f"{ac_name} over-committed: {total}"
