"""Settings of the capacity reservation controller (env ``KUSTODIAN_CAPACITY_*``, flags override).

Every field carries the ``capacity_`` prefix so the model can be mixed into
``ControllersSettings`` (``class ControllersSettings(CapacitySettings)``) without a
name clash; the chart sets ``KUSTODIAN_CAPACITY_SEQUENTIAL_LVG``.  Durations take
Go syntax (``300s``, ``1h``) or plain seconds.  A zero or negative interval would
make the garbage collector spin or delete fresh reservations, so it is refused.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, field_validator

from kustodian.kube.settings import GoDuration, KubeSettings
from kustodian.policy.capacity import PlanOptions


class CapacitySettings(KubeSettings):
    capacity_sequential_lvg: bool = Field(
        True, description="Plan LVG reservations one at a time so LVG volumes share drives (an ACR "
                          "with an xLVG request waits while another LVG reservation holds its nodes, "
                          "never longer than capacity_lvg_wait_timeout); on by default, as upstream")
    capacity_node_id_key: str = Field(
        "nodes.csi-baremetal.dell.com/uuid", min_length=1,
        description="Node annotation (or label) holding the csi-baremetal node ID that ACs and ACRs name")
    capacity_lvg_wait_timeout: GoDuration = Field(
        timedelta(seconds=300),
        description="Longest wait of an ACR in sequential LVG mode; it is planned anyway after it")
    capacity_reservation_ttl: GoDuration = Field(
        timedelta(seconds=3600), description="A RESERVED ACR in that status for longer than this is "
                                             "garbage-collected (its volume should long have been created)")
    capacity_max_reserved_nodes: int = Field(
        0, ge=0, description="Reserve an ACR on at most this many of its requested nodes (the first that "
                             "fit); 0 reserves on every node that fits, as csi-baremetal does")
    capacity_gc_interval: GoDuration = Field(
        timedelta(seconds=60), description="How often stale reservations are looked for")

    @field_validator("capacity_lvg_wait_timeout", "capacity_reservation_ttl", "capacity_gc_interval")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be positive")
        return value

    def plan_options(self) -> PlanOptions:
        return PlanOptions(sequential_lvg=self.capacity_sequential_lvg,
                           sequential_lvg_timeout=self.capacity_lvg_wait_timeout,
                           max_reserved_nodes=self.capacity_max_reserved_nodes)
