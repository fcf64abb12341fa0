"""Capacity reservation planning for local drives (csi-baremetal's model, made sound).

Split by what callers need, all pure:

- ``model``: kinds, storage classes, LVM arithmetic, ``ReservationDecision`` and ``PlanOptions``;
- ``planner``: ``plan`` (one ACR), ``plan_all`` (every REQUESTED ACR, in order) and the
  kept ``CapacityPlanner``, over one of two tables that decide alike: ``table`` (Python)
  or ``native_table`` (the compiled ``_native``), with what they share in ``holds`` and
  ``reading`` (how an AC is read: one parse, compiled into ``_native`` too);
- ``output``: ``apply_decision`` (the ACR to write) and ``plan_table`` (the CLI view);
- ``validation``: field-path error lists for the admission webhook;
- ``stale``: which ACRs the garbage collector should delete, which a bound pod shrinks;
- ``synthetic``: a reproducible cluster for the bench harness and property tests.
"""

from kustodian.policy.capacity.gc import ReservationGcInput, confirms, decide_reservation_gc
from kustodian.policy.capacity.model import (
    AC_KIND_KEY,
    ACR_KIND_KEY,
    API_VERSION,
    LVG_KIND_KEY,
    NODE_ID_KEY,
    REJECTED,
    REQUESTED,
    RESERVED,
    WAIT,
    PlanOptions,
    ReservationDecision,
)
from kustodian.policy.capacity.output import PLAN_TABLE_HEADER, apply_decision, narrow_to_node, plan_table
from kustodian.policy.capacity.planner import CapacityPlanner, plan, plan_all, plannable
from kustodian.policy.capacity.release import ReservationReleaseInput, decide_reservation_release
from kustodian.policy.capacity.stale import (
    PodState,
    StaleReservation,
    bound_releases,
    pod_key,
    stale_reservations,
)
from kustodian.policy.capacity.validation import validate_available_capacity, validate_reservation

__all__ = [
    "ACR_KIND_KEY",
    "AC_KIND_KEY",
    "API_VERSION",
    "LVG_KIND_KEY",
    "NODE_ID_KEY",
    "PLAN_TABLE_HEADER",
    "REJECTED",
    "REQUESTED",
    "RESERVED",
    "WAIT",
    "CapacityPlanner",
    "PlanOptions",
    "PodState",
    "ReservationDecision",
    "ReservationGcInput",
    "ReservationReleaseInput",
    "StaleReservation",
    "apply_decision",
    "bound_releases",
    "confirms",
    "decide_reservation_gc",
    "decide_reservation_release",
    "narrow_to_node",
    "plan",
    "plan_all",
    "plan_table",
    "plannable",
    "pod_key",
    "stale_reservations",
    "validate_available_capacity",
    "validate_reservation",
]
