"""Node-loss cleanup: ONE group for ``kustodian controllers`` (``--node-cleanup-*``) and
``kustodian node-cleanup`` (upstream's flag names, mapped onto these fields by that command's
alias table), so both refuse exactly the same values."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field

from kustodian.settings.common import Group
from kustodian.settings.types import CommaList, NonNegativeDuration, PositiveDuration

__all__ = ["NodeCleanupGroup"]


class NodeCleanupGroup(Group):
    enabled: bool = Field(False, description="Run the node-loss cleanup controller")
    storage_classes: CommaList = Field(
        default_factory=list, description="StorageClasses whose local PVs/PVCs may be cleaned (opt-in; "
                                          "empty: nothing is cleaned)")
    delay: NonNegativeDuration = Field(timedelta(seconds=60), description="Wait after Node deletion before "
                                       "the PVC is deleted (e.g. 60s, 15m)")
    discovery_interval: PositiveDuration = Field(timedelta(seconds=10),
                                                 description="Interval of the stale PV deleter")
    resync: PositiveDuration = Field(timedelta(minutes=10),
                                     description="Re-examine every opted-in PV this often")
    workers: int = Field(10, ge=1, le=100, description="Reconcile workers")
    detect_recreated: bool = Field(False, description="Treat a Node recreated under the same name (new UID) "
                                   "as a new machine whose local disks are empty")
