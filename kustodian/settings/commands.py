"""One root model per command, each listing the groups it uses (each group defined once).

Sources, highest first: init arguments (the CLI passes the flags the user gave), ``KUSTODIAN_*``
environment variables (``KUSTODIAN_<GROUP>__<FIELD>``), the command's own defaults
(``defaults``: e.g. node-cleanup serves metrics on :8080 where the controllers use :8081), then
the group's field defaults.  Sources are merged per field, so ``KUSTODIAN_METRICS__PATH`` alone
keeps the command's default listen address.

``flag_aliases`` renames (or, with ``None``, hides) a field's flag for one command:
``kustodian node-cleanup`` takes upstream's flag names this way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from kustodian.settings.capacity import CapacityGroup
from kustodian.settings.common import (
    ControllersGroup,
    KubeGroup,
    LeaderElectionGroup,
    LogGroup,
    MetricsGroup,
)
from kustodian.settings.node_agent import NodeAgentGroup
from kustodian.settings.node_cleanup import NodeCleanupGroup
from kustodian.settings.reclaim import ReclaimGroup
from kustodian.settings.types import go_flag_duration, go_flag_uint
from kustodian.settings.webhook import DeletionGuardGroup, PolicyReportsGroup, TlsGroup, WebhookGroup

__all__ = [
    "ControllersSettings",
    "NodeAgentSettings",
    "NodeCleanupSettings",
    "Settings",
    "ToolSettings",
    "WebhookSettings",
]


class _CommandDefaults(PydanticBaseSettingsSource):
    """The lowest source: every group present (so a missing required field is reported with its
    own name), filled with the command's defaults.  It is authoritative: the groups'
    ``default_factory`` only makes the model constructible outside pydantic-settings."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        cls = self.settings_cls
        assert issubclass(cls, Settings)
        return {name: dict(cls.defaults.get(name, {})) for name in cls.group_names()}


class Settings(BaseSettings):
    """Base of every command's settings: cluster access and logging."""

    model_config = SettingsConfigDict(env_prefix="KUSTODIAN_", env_nested_delimiter="__", extra="forbid",
                                      validate_default=True)

    defaults: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    flag_aliases: ClassVar[Mapping[str, str | None]] = {}
    # per-field argparse types, for a command whose flags must parse exactly as upstream's do
    flag_types: ClassVar[Mapping[str, Callable[[str], Any]]] = {}

    kube: KubeGroup = Field(default_factory=KubeGroup, description="Cluster access")
    log: LogGroup = Field(default_factory=LogGroup, description="Logging")

    @classmethod
    def group_names(cls) -> list[str]:
        return [name for name, info in cls.model_fields.items()
                if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)]

    @classmethod
    def settings_customise_sources(
            cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, _CommandDefaults(settings_cls)


class ToolSettings(Settings):
    """``certs inject``, ``explain-delete``, ``reclaim plan``, ``capacity plan``."""

    # kubectl's habit: on a tool, -n/--namespace is the namespace of the object asked about;
    # Kustodian's own namespace is --kustodian-namespace (issue 21)
    flag_aliases: ClassVar[Mapping[str, str | None]] = {"kube.namespace": "--kustodian-namespace"}


# webhook: the capacity feature is the objects' validation, on unless turned off; the
# controller-only capacity knobs are not its flags
_CAPACITY_CONTROLLER_ONLY = ("sequential_lvg", "lvg_wait_timeout", "reservation_ttl", "gc_interval")


class WebhookSettings(Settings):
    """``kustodian webhook``."""

    # metrics and probes on a plain-HTTP port apart from admission: off unless set (the chart: :8080)
    defaults: ClassVar[Mapping[str, Mapping[str, Any]]] = {"capacity": {"enabled": True},
                                                           "metrics": {"listen_address": ""}}
    flag_aliases: ClassVar[Mapping[str, str | None]] = {
        **{f"capacity.{name}": None for name in _CAPACITY_CONTROLLER_ONLY}}

    webhook: WebhookGroup = Field(default_factory=WebhookGroup, description="HTTPS server")
    metrics: MetricsGroup = Field(default_factory=MetricsGroup,
                                  description="Metrics and probes (plain HTTP, apart from admission)")
    tls: TlsGroup = Field(default_factory=TlsGroup, description="Serving certificate")
    deletion_guard: DeletionGuardGroup = Field(default_factory=DeletionGuardGroup,
                                               description="Deletion guard")
    reclaim: ReclaimGroup = Field(default_factory=ReclaimGroup, description="Reclaim-space policy")
    capacity: CapacityGroup = Field(default_factory=CapacityGroup,
                                    description="Capacity reservation validation")
    policy_reports: PolicyReportsGroup = Field(default_factory=PolicyReportsGroup,
                                               description="Policy reports (what warn mode let through)")

    @model_validator(mode="after")
    def _metrics_apart_from_admission(self) -> WebhookSettings:
        address = self.metrics.listen_address
        if address and int(address.rpartition(":")[2]) == self.webhook.port:
            raise ValueError(f"--metrics-listen-address {address!r} uses the admission port "
                             f"{self.webhook.port}")
        return self

    @model_validator(mode="after")
    def _arming_is_complete(self) -> WebhookSettings:
        web = self.webhook
        if web.configuration_name and not (web.configuration_checksum and web.failure_policies):
            raise ValueError("--webhook-configuration-name needs --webhook-configuration-checksum and "
                             "--webhook-failure-policies: without them no configuration is ever armed")
        return self

    @model_validator(mode="after")
    def _tls_is_consistent(self) -> WebhookSettings:
        tls, insecure = self.tls, self.webhook.insecure_http
        if tls.mode == "builtin":
            if tls.cert_file or tls.key_file or insecure:
                raise ValueError("--tls-mode=builtin manages the certificate itself: do not also set "
                                 "--tls-cert-file, --tls-key-file or --webhook-insecure-http")
            tls.cert_file = f"{tls.dir}/tls.crt"
            tls.key_file = f"{tls.dir}/tls.key"
            return self
        if bool(tls.cert_file) != bool(tls.key_file):
            raise ValueError("--tls-cert-file and --tls-key-file must be given together")
        if not tls.cert_file and not insecure:
            raise ValueError("no TLS certificate: set --tls-cert-file and --tls-key-file (see `kustodian "
                             "certs issue`), or --webhook-insecure-http for local experiments")
        if tls.cert_file and insecure:
            raise ValueError("--webhook-insecure-http contradicts --tls-cert-file: choose one")
        return self


class ControllersSettings(Settings):
    """``kustodian controllers``: the leader-elected sidecar running every enabled controller."""

    flag_aliases: ClassVar[Mapping[str, str | None]] = {
        "node_cleanup.workers": None,  # the sidecar runs every controller with --controllers-workers
    }

    leader_election: LeaderElectionGroup = Field(default_factory=LeaderElectionGroup,
                                                 description="Leader election")
    metrics: MetricsGroup = Field(default_factory=MetricsGroup, description="Metrics endpoint")
    controllers: ControllersGroup = Field(default_factory=ControllersGroup, description="Controller runtime")
    reclaim: ReclaimGroup = Field(default_factory=ReclaimGroup, description="Reclaim-space propagation")
    node_cleanup: NodeCleanupGroup = Field(default_factory=NodeCleanupGroup, description="Node-loss cleanup")
    capacity: CapacityGroup = Field(default_factory=CapacityGroup, description="Capacity reservations")


class NodeCleanupSettings(Settings):
    """``kustodian node-cleanup``: upstream's flags (sig-storage-local-static-provisioner's node
    cleanup controller), same names and defaults, onto the node_cleanup group."""

    defaults: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "metrics": {"listen_address": ":8080"},
        # off as upstream: its example runs one replica and its RBAC grants no Lease rights
        "leader_election": {"enabled": False, "lease_name": "kustodian-node-cleanup"},
    }
    flag_aliases: ClassVar[Mapping[str, str | None]] = {
        "kube.kubeconfig": "--kubeconfig",
        "kube.kube_api_endpoint": "--kube-api-endpoint",
        "node_cleanup.enabled": None,  # this command is the controller
        "node_cleanup.storage_classes": "--storageclass-names",
        "node_cleanup.delay": "--pvc-deletion-delay",
        "node_cleanup.discovery_interval": "--stale-pv-discovery-interval",
        "node_cleanup.resync": "--resync",
        "node_cleanup.workers": "--worker-threads",
        "node_cleanup.detect_recreated": "--detect-recreated-nodes",
        "metrics.listen_address": "--listen-address",
        "metrics.path": "--metrics-path",
        "leader_election.enabled": "--leader-election",
        "leader_election.lease_name": "--leader-election-lease",
        "leader_election.identity": "--pod-name",
    }
    # upstream's grammar (Go's flag/pflag): durations need a unit, --worker-threads is a uint
    flag_types: ClassVar[Mapping[str, Callable[[str], Any]]] = {
        "node_cleanup.delay": go_flag_duration,
        "node_cleanup.discovery_interval": go_flag_duration,
        "node_cleanup.resync": go_flag_duration,
        "node_cleanup.workers": go_flag_uint,
    }

    leader_election: LeaderElectionGroup = Field(default_factory=LeaderElectionGroup,
                                                 description="Leader election")
    metrics: MetricsGroup = Field(default_factory=MetricsGroup, description="Metrics endpoint")
    node_cleanup: NodeCleanupGroup = Field(default_factory=NodeCleanupGroup, description="Node-loss cleanup")


class NodeAgentSettings(Settings):
    """``kustodian node-agent``: the per-node orphan detection DaemonSet."""

    defaults: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "controllers": {"workers": 2, "sync_timeout": 120},
        "metrics": {"listen_address": ":8082"},
    }

    node_agent: NodeAgentGroup = Field(description="This node and its disks")
    metrics: MetricsGroup = Field(default_factory=MetricsGroup, description="Probes and metrics endpoint")
    controllers: ControllersGroup = Field(default_factory=ControllersGroup,
                                             description="Orphan reconcile workers and cache sync")
