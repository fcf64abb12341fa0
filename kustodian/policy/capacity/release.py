"""The one frozen input of releasing what the scheduler did not pick, and the decision over it.

Once a pod is bound, its RESERVED ACR keeps only the bound node's reservations
(``stale.bound_releases`` says which ACRs, ``output.narrow_to_node`` what each keeps).  The
capacity controller gathers the reservations, their pods, the Kubernetes nodes' csi-baremetal
IDs and the nodes of the ACs the bound reservations name from its caches into one input; this
pure function decides; the controller writes each narrowed ACR with the resourceVersion it
was judged on, so a reservation changed since is refused by the API server and looked at
again, not overwritten.  A binding is never undone, so no second gather is needed before the write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kustodian.policy.capacity.output import narrow_to_node
from kustodian.policy.capacity.stale import PodState, bound_releases
from kustodian.policy.objects import RawObject, name

__all__ = ["ReservationRelease", "ReservationReleaseInput", "decide_reservation_release"]


@dataclass(frozen=True)
class ReservationReleaseInput:
    """Everything one release pass reads, gathered once.

    ``pods``: ``<namespace>/<name>`` -> state, for the pods the reservations were made for (at
    least); ``node_ids``: Kubernetes node name -> csi-baremetal node ID; ``ac_nodes``: AC name ->
    its ``spec.NodeId``, for (at least) the ACs the reservations of bound pods name.
    """

    reservations: tuple[RawObject, ...]
    pods: Mapping[str, PodState]
    node_ids: Mapping[str, str]
    ac_nodes: Mapping[str, str]


@dataclass(frozen=True)
class ReservationRelease:
    """Narrow ``reservation`` to ``node_id``: write ``narrowed`` with ``reservation``'s resourceVersion."""

    reservation: RawObject
    node_id: str
    narrowed: Mapping[str, Any]


def decide_reservation_release(observed: ReservationReleaseInput) -> tuple[ReservationRelease, ...]:
    """Every RESERVED reservation whose pod is bound to one of its nodes, narrowed to that node."""
    by_name = {name(a): a for a in observed.reservations}
    out = []
    for acr_name, node_id in bound_releases(observed.reservations, observed.pods, observed.node_ids):
        acr = by_name[acr_name]
        narrowed = narrow_to_node(acr, node_id, lambda ac: observed.ac_nodes.get(ac, ""))
        if narrowed is not None:
            out.append(ReservationRelease(acr, node_id, narrowed))
    return tuple(out)
