"""The sizer: how many bytes each Orphan of this node holds, measured apart from the scan.

A :class:`~kustodian.runtime.periodic.Periodic` every ``size_interval`` at the lowest CPU
priority measures each Orphan's directory as ``du -sb`` does (reported ones in ``replicas/``,
quarantined ones in the disk's quarantine), writes ``status.sizeBytes`` where it changed and
keeps the totals by disk and state for ``kustodian_orphan_bytes`` (read at scrape time: the
scrape never walks a disk).  Never part of the scan, whose cost stays what it was.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kustodian.controllers.orphans.actions import OrphanActions
from kustodian.controllers.orphans.quarantine import apparent_size, probe_quarantine
from kustodian.controllers.orphans.state import AgentOptions
from kustodian.kube.cache import WatchCache
from kustodian.policy.objects import is_deleting
from kustodian.policy.orphans import (
    ORPHAN_BY_NODE,
    PARAM_DATA_NAME,
    PARAM_DISK_NAME,
    PARAM_DISK_PATH,
    orphan_param,
)
from kustodian.runtime import Periodic

__all__ = ["OrphanBytes", "OrphanSizer"]


class OrphanSizer:
    """Measures this node's Orphans; :attr:`orphan_bytes` is the last pass's totals, swapped whole."""

    def __init__(self, options: AgentOptions, orphans: WatchCache, actions: OrphanActions) -> None:
        self.options = options
        self.orphans = orphans
        self.actions = actions
        self.orphan_bytes: Mapping[tuple[str, str], int] = {}  # (disk name, state) -> bytes
        self.sizes_done = 0
        self._niced = False

    def runnable(self, interval: float) -> Periodic:
        return Periodic("orphan-sizer", self._pass, interval, join_timeout=10)

    def _pass(self) -> None:
        if not self._niced:  # Linux: a nice value per thread, the runnable's own only
            self._niced = True
            with contextlib.suppress(OSError, AttributeError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        self.measure_sizes()

    def measure_sizes(self) -> Mapping[tuple[str, str], int]:
        """Measure every Orphan of this node (reported in ``replicas/``, quarantined in the quarantine),
        write ``status.sizeBytes`` where it changed and publish the totals by disk and state."""
        totals: dict[tuple[str, str], int] = {}
        for disk in self.options.disks:
            for state in ("reported", "quarantined"):
                totals[(disk.name, state)] = 0
        for obj in self.orphans.by_index(ORPHAN_BY_NODE, self.options.node):
            disk_path, data_name = orphan_param(obj, PARAM_DISK_PATH), orphan_param(obj, PARAM_DATA_NAME)
            quarantined = is_deleting(obj) and probe_quarantine(disk_path, data_name).exists
            size = apparent_size(disk_path, data_name, quarantined=quarantined)
            if size is None:
                continue
            key = (orphan_param(obj, PARAM_DISK_NAME), "quarantined" if quarantined else "reported")
            totals[key] = totals.get(key, 0) + size
            if (obj.get("status") or {}).get("sizeBytes") != size:
                self.actions.write_size(obj, size)
        self.orphan_bytes = totals
        self.sizes_done += 1
        return totals


class OrphanBytes(Collector):
    """``kustodian_orphan_bytes{node,disk,state}``: the bytes of this node's orphaned replica directories
    by disk, ``reported`` (still in ``replicas/``) and ``quarantined``, as the sizer last measured them."""

    def __init__(self, sizer: OrphanSizer) -> None:
        self._sizer = sizer

    def collect(self) -> list[Metric]:
        family = GaugeMetricFamily("kustodian_orphan_bytes", "Bytes of orphaned replica directories on this "
                                   "node, by disk and state (reported, quarantined), as du -sb counts them",
                                   labels=["node", "disk", "state"])
        for (disk, state), size in sorted(self._sizer.orphan_bytes.items()):
            family.add_metric([self._sizer.options.node, disk, state], size)
        return [family]
