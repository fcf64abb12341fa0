"""Reclaim-space: the policy webhook and the propagation controller read the same group."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kustodian.settings.common import Group
from kustodian.settings.types import CommaList

__all__ = ["ReclaimGroup"]


class ReclaimGroup(Group):
    enabled: bool = Field(True, description="Reclaim-space policy (webhook) and its propagation "
                                            "(controllers)")
    config_name: str = Field("kustodian-reclaim-config",
                             description="Name of the central reclaim-space ConfigMap (in --namespace)")
    csi_addons_config: str = Field(
        "csi-addons-system/csi-addons-config", pattern=r"^([a-z0-9-]+/[a-z0-9.-]+)?$",
        description="namespace/name of csi-addons' own ConfigMap (schedule-precedence is read from it); "
                    "empty: not read, csi-addons' defaults apply (as in csi-addons without it)")
    csi_addons_users: CommaList = Field(
        default_factory=lambda: ["system:serviceaccount:csi-addons-system:csi-addons-controller-manager"],
        description="Users whose schedule writes are never refused (csi-addons' controller; webhook)")
    keyrotation: bool = Field(
        False, description="Also keyrotation.csiaddons.openshift.io schedules, by the same rules")
    mode: Literal["enforce", "warn", "audit"] = Field(
        "enforce", description="Schedule/config validation: enforce refuses a bad one; warn allows it with a "
                               "warning kubectl prints; audit allows it silently (both counted)")

    @property
    def csi_addons_config_ref(self) -> tuple[str, str] | None:
        """(namespace, name) of csi-addons' ConfigMap, or None when it is not to be read."""
        if not self.csi_addons_config:
            return None
        namespace, _, name = self.csi_addons_config.partition("/")
        return namespace, name
