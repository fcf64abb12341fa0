"""Settings of ``kustodian controllers`` (env ``KUSTODIAN_*``, flags override).

The names match what the Helm chart sets for the controller sidecar.
"""

from __future__ import annotations

import socket
from datetime import timedelta

from pydantic import Field

from kustodian.controllers.capacity.settings import CapacitySettings
from kustodian.kube.settings import GoDuration


class ControllersSettings(CapacitySettings):
    pod_name: str = Field(default_factory=socket.gethostname,
                          description="Identity in leader election (the pod name)")
    leader_election: bool = Field(True, description="Elect a leader on a Lease so only one replica acts")
    leader_election_lease: str = Field("kustodian-controllers", description="Name of the Lease")
    workers: int = Field(4, ge=1, le=64, description="Reconcile workers per controller")
    listen_address: str = Field(":8081", description="Where /metrics is served (host:port; empty: off)")
    reclaim_space: bool = Field(True, description="Run the reclaim-space propagation controller")
    reclaim_config_name: str = Field(
        "kustodian-reclaim-config",
        description="Name of the central reclaim-space ConfigMap (in --namespace)")
    reclaim_csi_addons_config: str = Field(
        "csi-addons-system/csi-addons-config", pattern=r"^[a-z0-9-]+/[a-z0-9.-]+$",
        description="namespace/name of csi-addons' own ConfigMap (schedule-precedence is read from it)")
    reclaim_keyrotation: bool = Field(
        False, description="Propagate keyrotation.csiaddons.openshift.io schedules by the same rules")
    sync_timeout: float = Field(300.0, gt=0, description="Seconds to wait for the caches before giving up")
    node_cleanup: bool = Field(False, description="Run the node-loss cleanup controller")
    node_cleanup_storage_classes: list[str] = Field(
        default_factory=list, description="Opted-in StorageClasses (empty: nothing is cleaned)")
    node_cleanup_delay: GoDuration = Field(timedelta(seconds=60), description="PVC deletion delay after "
                                           "the Node is gone")
    node_cleanup_discovery_interval: GoDuration = Field(timedelta(seconds=10),
                                                        description="Interval of the stale PV deleter")
    node_cleanup_resync: GoDuration = Field(timedelta(minutes=10), description="Full re-examination period")
    node_cleanup_detect_recreated: bool = Field(False, description="A Node back with a new UID is a new "
                                                "machine: its local PVs are stale")
    capacity: bool = Field(False, description="Run the capacity reservation controller")
