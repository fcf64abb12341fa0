"""Capacity reservations: the webhook validates the objects, the controller plans and collects.

A zero or negative interval would make the garbage collector spin or delete fresh
reservations, so it is refused."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from pydantic import Field

from kustodian.settings.common import Group
from kustodian.settings.types import PositiveDuration

if TYPE_CHECKING:
    from kustodian.policy.capacity import PlanOptions

__all__ = ["CapacityGroup"]


class CapacityGroup(Group):
    enabled: bool = Field(False, description="Capacity reservations: validation (webhook) or the "
                                             "reservation controller (controllers)")
    sequential_lvg: bool = Field(
        True, description="Plan LVG reservations one at a time so LVG volumes share drives (an ACR "
                          "with an xLVG request waits while another LVG reservation holds its nodes, "
                          "never longer than the LVG wait timeout); on by default, as upstream")
    node_id_key: str = Field(
        "nodes.csi-baremetal.dell.com/uuid", min_length=1,
        description="Node annotation (or label) holding the csi-baremetal node ID that ACs and ACRs name")
    lvg_wait_timeout: PositiveDuration = Field(
        timedelta(seconds=300),
        description="Longest wait of an ACR in sequential LVG mode; it is planned anyway after it")
    reservation_ttl: PositiveDuration = Field(
        timedelta(seconds=3600), description="A RESERVED ACR in that status for longer than this is "
                                             "garbage-collected (its volume should long have been created)")
    max_reserved_nodes: int = Field(
        0, ge=0, description="Reserve an ACR on at most this many of its requested nodes (the first that "
                             "fit); 0 reserves on every node that fits, as csi-baremetal does")
    gc_interval: PositiveDuration = Field(timedelta(seconds=60),
                                          description="How often stale reservations are looked for")

    def plan_options(self) -> PlanOptions:
        from kustodian.policy.capacity import PlanOptions

        return PlanOptions(sequential_lvg=self.sequential_lvg, sequential_lvg_timeout=self.lvg_wait_timeout,
                           max_reserved_nodes=self.max_reserved_nodes)
