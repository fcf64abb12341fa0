"""The one frozen input of reservation garbage collection, and the decision over it.

cert-manager's shape, as node cleanup has it: the capacity controller gathers one input
(the ACRs, then the pods they were made for, see ``stale``'s note on the order) from its
caches, this pure function says which ACRs are garbage, and before each delete the
controller gathers the same input again for that one ACR from the API server (the ACR and
its pod, read just now), runs the same function and deletes only what both decisions
collect (:func:`confirms`).  Where the input came from is none of the decision's business,
so both gathers fill this one type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from kustodian.policy.capacity.stale import PodState, StaleReservation, stale_reservations
from kustodian.policy.objects import RawObject

__all__ = ["ReservationGcInput", "confirms", "decide_reservation_gc"]


@dataclass(frozen=True)
class ReservationGcInput:
    """Everything one collection reads, gathered once.

    ``pods`` maps ``<namespace>/<name>`` of every live pod among those the reservations were
    made for (at least) to its state; ``ttl`` is how long a reservation may stay RESERVED.
    """

    reservations: tuple[RawObject, ...]
    pods: Mapping[str, PodState]
    ttl: timedelta


def decide_reservation_gc(observed: ReservationGcInput, now: datetime) -> tuple[StaleReservation, ...]:
    """The reservations to delete (sorted by name), each with why."""
    return tuple(stale_reservations(observed.reservations, observed.pods, now, observed.ttl))


def confirms(fresh: Sequence[StaleReservation], stale: StaleReservation) -> bool:
    """Whether the decision on a fresh gather collects the reservation ``stale`` names too.

    By name: the delete carries the UID of the ACR first judged, so one created again under
    that name since is refused by the API server, not deleted.
    """
    return any(s.name == stale.name for s in fresh)
