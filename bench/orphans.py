"""Scenario 5: orphan scan of one disk with 100k replica directories (real files in a temp dir).

``--largest`` (issue 46): 1,000,000 replica directories on the disk; the rows add the memory the
scan's result holds (tracemalloc of one more scan: what the node agent keeps between scans).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
import tracemalloc
from typing import Any

META = json.dumps({"Size": 10737418240, "Head": "volume-head-000.img", "Dirty": False, "Rebuilding": False,
                   "Error": "", "Parent": "", "SectorSize": 512, "BackingFilePath": ""}).encode()


LARGEST = 1_000_000


def make_disk(count: int) -> str:
    """A Longhorn disk in a temp dir with ``count`` replica directories, each with its
    ``volume.meta`` (the caller removes it)."""
    disk = tempfile.mkdtemp(prefix="bench-disk-")
    with open(os.path.join(disk, "longhorn-disk.cfg"), "w") as fh:
        json.dump({"diskName": "disk-1", "diskUUID": "uuid-1"}, fh)
    replicas = os.path.join(disk, "replicas")
    os.mkdir(replicas)
    for i in range(count):
        d = os.path.join(replicas, f"vol{i}-{i:08x}")
        os.mkdir(d)
        with open(os.path.join(d, "volume.meta"), "wb") as fh:
            fh.write(META)
    time.sleep(1.1)  # let the directory settle, as it would on a node between scans
    return disk


def run(smoke: bool, runs: int, largest: bool = False) -> list[dict[str, Any]]:
    from kustodian.controllers.orphans.scan import scan_disk

    count = 2_000 if smoke else LARGEST if largest else 100_000
    disk = make_disk(count)
    try:
        full, again = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            first = scan_disk(disk, "disk-1", "uuid-1", None)
            full.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            scan_disk(disk, "disk-1", "uuid-1", first)
            again.append(time.perf_counter() - t0)
        assert len(first.entries) == count
        held = 0.0
        if largest:
            del first
            tracemalloc.start()
            kept = scan_disk(disk, "disk-1", "uuid-1", None)
            held = tracemalloc.get_traced_memory()[0] / 2**20
            tracemalloc.stop()
            assert len(kept.entries) == count
            del kept
    finally:
        shutil.rmtree(disk, ignore_errors=True)
    label = f"{count} replica dirs, ext4 page cache warm"
    if largest and not smoke:
        label += f"; runs {', '.join(f'{x:.2f}' for x in full)} s"
    rows = [
        {"scenario": "orphan scan", "metric": f"full scan, {count:,} dirs (s)" if largest else "full scan (s)",
         "value": round(statistics.median(full), 3), "target": None if largest else ("<=", 2.0), "note": label},
        {"scenario": "orphan scan", "metric": f"unchanged rescan, {count:,} dirs (ms)" if largest
         else "unchanged rescan (ms)",
         "value": round(statistics.median(again) * 1000, 2), "target": ("<=", 50.0), "note": label},
    ]
    if largest:
        rows.append({"scenario": "orphan scan", "metric": f"a scan's result held, {count:,} dirs (MiB)",
                     "value": round(held, 1), "target": None,
                     "note": "tracemalloc: Python allocations alive after one full scan (the result the agent keeps)"})
    return rows
