"""A reproducible synthetic cluster for benchmarks and property tests of the planner.

The bench harness needs the same cluster on every run and every machine, so everything
is drawn from ``random.Random(seed)`` (no clock, no global state).  The mix is meant to
exercise every planner path at scale: plain HDD/SSD/NVME drives, existing volume groups,
storage groups, ``ANY`` and ``xLVG`` requests, sizes that are not extent-aligned.

Each ACR requests ``nodes_per_acr`` random nodes (the candidate list the scheduler
extender would pass); with the default of 3, 1,000 ACRs x 3 volumes over 1,000 nodes x
12 drives mostly fit (about 93% RESERVED at seed 1), as on a healthy cluster.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from kustodian.policy.capacity.model import (
    AC_KIND,
    ACR_KIND,
    API_VERSION,
    GIB,
    MIB,
    PE_SIZE,
    REQUESTED,
    STORAGE_GROUP_LABEL,
    lvg_usable_size,
)

_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
_TIB = 1 << 40
_DRIVE_SIZES = {
    "HDD": (2 * _TIB, 4 * _TIB, 8 * _TIB, 4_000_787_030_016),
    "SSD": (480 * GIB, 960 * GIB, 1_920_383_410_176),
    "NVME": (1_600_321_314_816, 3_200_631_791_616),
}
_REQUEST_CLASSES = (
    "HDD", "HDD", "HDD", "SSD", "SSD", "NVME", "ANY", "ANY", "HDDLVG", "HDDLVG", "SSDLVG", "NVMELVG",
)
_GROUP = "fast"


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def synthetic_cluster(
    nodes: int,
    drives_per_node: int,
    acrs: int,
    volumes_per_acr: int,
    seed: int,
    *,
    nodes_per_acr: int = 3,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(available_capacities, reservations)``: REQUESTED ACRs over a fresh cluster."""
    rng = random.Random(seed)
    node_names = [f"node-{i:05d}" for i in range(nodes)]
    grouped_nodes = node_names[::10]
    acs: list[dict[str, Any]] = []
    for n, node in enumerate(node_names):
        grouped = n % 10 == 0  # every tenth node keeps half its drives for group "fast"
        for d in range(drives_per_node):
            media = rng.choices(("HDD", "SSD", "NVME"), weights=(5, 3, 2))[0]
            size = rng.choice(_DRIVE_SIZES[media])
            storage_class = media
            location = _uuid(rng)
            if rng.random() < 0.15:  # an existing volume group with some space used
                storage_class = f"{media}LVG"
                location = f"lvg-{location[:8]}"
                usable = lvg_usable_size(size)
                size = usable - rng.randrange(0, usable // PE_SIZE) * PE_SIZE
            labels = {STORAGE_GROUP_LABEL: _GROUP} if grouped and d % 2 == 0 else {}
            acs.append({
                "apiVersion": API_VERSION,
                "kind": AC_KIND,
                "metadata": {"name": _uuid(rng), "labels": labels},
                "spec": {"Location": location, "NodeId": node, "storageClass": storage_class, "Size": size},
            })
    reservations: list[dict[str, Any]] = []
    for i in range(acrs):
        namespace, pod = f"ns-{i % 17:02d}", f"pod-{i:06d}"
        group = _GROUP if rng.random() < 0.05 else ""
        # The scheduler only offers nodes that have the group at all.
        candidates = grouped_nodes if group else node_names
        requests = []
        for v in range(volumes_per_acr):
            request: dict[str, Any] = {
                "Name": f"pvc-{i:06d}-{v}",
                "StorageClass": rng.choice(_REQUEST_CLASSES),
                # MiB granularity plus a stray byte now and then: alignment matters.
                "Size": rng.randrange(1, 512) * GIB // 4 + rng.choice((0, 0, 0, 1, MIB)),
            }
            if group:
                request["StorageGroup"] = group
            requests.append({"CapacityRequest": request})
        reservations.append({
            "apiVersion": API_VERSION,
            "kind": ACR_KIND,
            "metadata": {
                "name": f"{namespace}-{pod}",
                "creationTimestamp": (_EPOCH + timedelta(seconds=rng.randrange(0, 3600)))
                .isoformat()
                .replace("+00:00", "Z"),
            },
            "spec": {
                "Namespace": namespace,
                "Status": REQUESTED,
                "NodeRequests": {"Requested": rng.sample(candidates, min(nodes_per_acr, len(candidates)))},
                "ReservationRequests": requests,
            },
        })
    return acs, reservations
