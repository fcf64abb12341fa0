"""Node-loss cleanup: ONE group for ``kustodian controllers`` (``--node-cleanup-*``) and
``kustodian node-cleanup`` (upstream's flag names, mapped onto these fields by that command's
alias table), so both refuse exactly the same values.

The ranges are upstream's (``--resync=0``, ``--stale-pv-discovery-interval=0``,
``--worker-threads`` 0 or above 100 are accepted), with one deliberate difference: a negative
delay, which Go's flag package takes and which would delete PVCs at once, is refused."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field

from kustodian.settings.common import Group
from kustodian.settings.types import CommaList, NonNegativeDuration

__all__ = ["NodeCleanupGroup"]


class NodeCleanupGroup(Group):
    enabled: bool = Field(False, description="Run the node-loss cleanup controller")
    storage_classes: CommaList = Field(
        default_factory=list, description="StorageClasses whose local PVs/PVCs may be cleaned (opt-in; "
                                          "empty: nothing is cleaned)")
    delay: NonNegativeDuration = Field(timedelta(seconds=60), description="Wait after Node deletion before "
                                       "the PVC is deleted (e.g. 60s, 15m)")
    discovery_interval: NonNegativeDuration = Field(
        timedelta(seconds=10), description="Accepted for upstream compatibility and unused: stale PVs are "
                                           "deleted on Node and PV events, not by a periodic scan")
    resync: NonNegativeDuration = Field(timedelta(minutes=10),
                                        description="Re-examine every opted-in PV this often (0: never)")
    workers: int = Field(10, ge=0, description="Reconcile workers (0: no PVC is cleaned, as upstream)")
    detect_recreated: bool = Field(False, description="Treat a Node recreated under the same name (new UID) "
                                   "as a new machine whose local disks are empty")
