"""Settings of ``kustodian controllers`` (env ``KUSTODIAN_*``, flags override).

The names match what the Helm chart sets for the controller sidecar.
"""

from __future__ import annotations

import socket

from pydantic import Field

from kube.settings import KubeSettings


class ControllersSettings(KubeSettings):
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
    sync_timeout: float = Field(300.0, gt=0, description="Seconds to wait for the caches before giving up")
