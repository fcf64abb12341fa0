"""Reclaim-space: the policy webhook and the propagation controller read the same group."""

from __future__ import annotations

from pydantic import Field

from kustodian.settings.common import Group

__all__ = ["ReclaimGroup"]


class ReclaimGroup(Group):
    enabled: bool = Field(True, description="Reclaim-space policy (webhook) and its propagation "
                                            "(controllers)")
    config_name: str = Field("kustodian-reclaim-config",
                             description="Name of the central reclaim-space ConfigMap (in --namespace)")
