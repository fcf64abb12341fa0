"""One settings tree for every Kustodian command (a shared leaf: pydantic, pydantic-settings,
``kustodian.errors`` and pure ``kustodian.policy`` parsers only; never an adapter).

Groups (``common``, ``webhook``, ``reclaim``, ``node_cleanup``, ``capacity``, ``node_agent``) are
defined once; each command's root model (``commands``) lists the groups it uses.  Env
``KUSTODIAN_<GROUP>__<FIELD>``, flag ``--<group>-<field>`` (``flags``), shared value types in
``types``.
"""

from kustodian.settings.capacity import CapacityGroup
from kustodian.settings.commands import (
    ControllersSettings,
    NodeAgentSettings,
    NodeCleanupSettings,
    Settings,
    ToolSettings,
    WebhookSettings,
)
from kustodian.settings.common import (
    ControllersGroup,
    Group,
    KubeGroup,
    LeaderElectionGroup,
    LogGroup,
    MetricsGroup,
)
from kustodian.settings.flags import (
    Flag,
    add_settings_flags,
    env_for,
    flag_table,
    flags_for,
    idle_problems,
    load_settings,
    settings_from_args,
    unknown_env,
)
from kustodian.settings.node_agent import DiskSpec, NodeAgentGroup, default_disk_name, parse_disk
from kustodian.settings.node_cleanup import NodeCleanupGroup
from kustodian.settings.reclaim import ReclaimGroup
from kustodian.settings.types import (
    CommaList,
    Duration,
    ListenAddress,
    NonNegativeDuration,
    PositiveDuration,
    format_go_duration,
    parse_duration,
)
from kustodian.settings.webhook import DeletionGuardGroup, PolicyReportsGroup, TlsGroup, WebhookGroup

__all__ = [
    "CapacityGroup",
    "CommaList",
    "ControllersGroup",
    "ControllersSettings",
    "DeletionGuardGroup",
    "DiskSpec",
    "Duration",
    "Flag",
    "Group",
    "KubeGroup",
    "LeaderElectionGroup",
    "ListenAddress",
    "LogGroup",
    "MetricsGroup",
    "NodeAgentGroup",
    "NodeAgentSettings",
    "NodeCleanupGroup",
    "NodeCleanupSettings",
    "NonNegativeDuration",
    "PolicyReportsGroup",
    "PositiveDuration",
    "ReclaimGroup",
    "Settings",
    "TlsGroup",
    "ToolSettings",
    "WebhookGroup",
    "WebhookSettings",
    "add_settings_flags",
    "default_disk_name",
    "env_for",
    "flag_table",
    "flags_for",
    "format_go_duration",
    "idle_problems",
    "load_settings",
    "parse_disk",
    "parse_duration",
    "settings_from_args",
    "unknown_env",
]
