"""Groups every long-running command shares: cluster access, logging, leader election, metrics,
controller workers.  Each group is a plain pydantic model; a command's root model (``commands``)
lists the groups it uses, so one definition (and its validators) serves every command."""

from __future__ import annotations

import socket
from datetime import timedelta
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kustodian.settings.types import ListenAddress, PositiveDuration

__all__ = ["ControllersGroup", "Group", "KubeGroup", "LeaderElectionGroup", "LogGroup", "MetricsGroup"]


class Group(BaseModel):
    """A settings group: env ``KUSTODIAN_<GROUP>__<FIELD>``, flag ``--<group>-<field>``.

    ``flag_prefix`` overrides the ``<group>`` part of the flag (``""``: none, for the kube
    group whose fields already read as flags: ``--kubeconfig``, ``--namespace``).  A bool field
    named ``enabled`` is the group's switch: ``--<group>/--no-<group>``.
    """

    model_config = ConfigDict(extra="forbid", validate_default=True)

    flag_prefix: ClassVar[str | None] = None


class KubeGroup(Group):
    """Where the cluster is and which namespace Kustodian runs in."""

    flag_prefix: ClassVar[str | None] = ""

    kubeconfig: str | None = Field(None, description="Path to a kubeconfig",
                                   json_schema_extra={"default_text": "$KUBECONFIG, else ~/.kube/config, "
                                                                      "else the in-cluster service account"})
    kube_api_endpoint: str | None = Field(None, description="API server URL, overriding the kubeconfig's")
    namespace: str = Field("kustodian", description="Namespace Kustodian runs in (leases, orphans, config)",
                           pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    # issue 21: kubectl's --context (appended; every command that loads a kubeconfig passes it)
    context: str | None = Field(None, description="kubeconfig context to use",
                                json_schema_extra={"default_text": "the kubeconfig's current-context"})


class LogGroup(Group):
    format: Literal["auto", "json", "text"] = Field(
        "auto", description="json in-cluster, text on a terminal (auto decides by whether stderr is a TTY)")
    level: Literal["debug", "info", "warning", "error"] = Field("info", description="Log level")


class LeaderElectionGroup(Group):
    """One replica acts at a time, holding a Lease in the kube namespace."""

    enabled: bool = Field(True, description="Elect a leader on a Lease so only one replica acts")
    lease_name: str = Field("kustodian-controllers", description="Name of the Lease (in --namespace)")
    identity: str = Field(default_factory=socket.gethostname,
                          description="Identity in leader election (the chart sets the pod name)")
    lease_duration: PositiveDuration = Field(timedelta(seconds=15),
                                             description="How long a Lease is valid without renewal")
    renew_deadline: PositiveDuration = Field(
        timedelta(seconds=10), description="The leader gives up if it cannot renew for this long")
    retry_period: PositiveDuration = Field(timedelta(seconds=2), description="Interval between attempts")

    @model_validator(mode="after")
    def _ordered(self) -> LeaderElectionGroup:
        if not self.lease_duration > self.renew_deadline > self.retry_period:
            raise ValueError("leader election needs lease-duration > renew-deadline > retry-period")
        return self


class MetricsGroup(Group):
    listen_address: ListenAddress = Field(":8081", description="Where metrics are served (host:port; "
                                                               "empty: off)")
    path: str = Field("/metrics", pattern=r"^/", description="Path of the metrics endpoint")


class ControllersGroup(Group):
    workers: int = Field(4, ge=1, le=64, description="Reconcile workers per controller")
    sync_timeout: PositiveDuration = Field(timedelta(seconds=300),
                                           description="How long to wait for the caches before giving up")
