"""``kustodian node-cleanup`` settings: the upstream controller's flags, same names and defaults.

Field names are the flag names (``storageclass_names`` -> ``--storageclass-names``);
durations take Go syntax (``60s``, ``1m30s``, ``10m``) or plain seconds, as upstream's
flags do.  Values that would make the controller delete too eagerly or spin (a
negative delay, a zero interval) are refused at start.
"""

from __future__ import annotations

import socket
from datetime import timedelta
from typing import Annotated

from pydantic import BeforeValidator, Field, field_validator
from pydantic_settings import NoDecode

from kustodian.kube.settings import GoDuration, KubeSettings


def _comma_list(value: object) -> object:
    """``"a,b"`` (upstream's flag and a plain env var) as well as a list."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(_comma_list)]


class NodeCleanupSettings(KubeSettings):
    storageclass_names: CommaList = Field(
        default_factory=list, description="StorageClasses whose local PVs/PVCs may be cleaned (opt-in; "
                                          "empty: nothing is cleaned)")
    pvc_deletion_delay: GoDuration = Field(timedelta(seconds=60), description="Wait after Node deletion "
                                           "before the PVC is deleted (e.g. 60s, 15m)")
    stale_pv_discovery_interval: GoDuration = Field(timedelta(seconds=10),
                                                    description="Interval of the stale PV deleter")
    resync: GoDuration = Field(timedelta(minutes=10), description="Re-examine every opted-in PV this often")
    worker_threads: int = Field(10, ge=1, le=100, description="Reconcile workers")
    listen_address: str = Field(":8080", description="Where metrics are served (host:port; empty: off)")
    metrics_path: str = Field("/metrics", pattern=r"^/", description="Path of the metrics endpoint")
    detect_recreated_nodes: bool = Field(False, description="Treat a Node recreated under the same name (new "
                                         "UID) as a new machine whose local disks are empty")
    leader_election: bool = Field(False, description="Elect a leader on a Lease (in --namespace) so two "
                                  "replicas never both delete; off by default as upstream, whose example "
                                  "runs one replica and whose RBAC grants no Lease rights")
    leader_election_lease: str = Field("kustodian-node-cleanup",
                                       description="Name of the Lease (in --namespace)")
    pod_name: str = Field(default_factory=socket.gethostname, description="Identity in leader election")

    @field_validator("pvc_deletion_delay")
    @classmethod
    def _not_negative(cls, value: timedelta) -> timedelta:
        if value < timedelta(0):
            raise ValueError("must not be negative")
        return value

    @field_validator("stale_pv_discovery_interval", "resync")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be positive")
        return value

    @field_validator("listen_address")
    @classmethod
    def _host_port(cls, value: str) -> str:
        if value:
            _, sep, port = value.rpartition(":")
            if not sep or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"{value!r} is not host:port (e.g. :8080); empty disables metrics")
        return value
