"""The one place capacity housekeeping reads: :func:`gather` fills a :class:`ReservationGcInput`,
:func:`gather_release` a :class:`ReservationReleaseInput`.

Two sources answer the same questions (these ACRs, the pods they were made for, the nodes'
csi-baremetal IDs, the nodes of some ACs): :class:`ReservationCacheSource` from the
controller's view (the ACR cache with our newer writes laid over it, the other caches), for
every pass, and :class:`ReservationApiSource` from the API server itself, to confirm each
delete (a pod cache behind the ACR cache must not delete a reservation whose pod was merely
created a moment ago).  The decisions never know which one they were given.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import timedelta
from typing import Protocol

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import NODES, PODS, Resource
from kustodian.policy.capacity import RESERVED, PodState, ReservationGcInput, ReservationReleaseInput, pod_key
from kustodian.policy.objects import RawObject, list_field, map_field, name, str_field


def pod_state(pod: RawObject) -> PodState:
    """What housekeeping reads of a pod: where it is bound and its phase."""
    return PodState(node_name=str_field(pod, "spec", "nodeName"), phase=str_field(pod, "status", "phase"))


def _key(pod: RawObject) -> str:
    return f"{str_field(pod, 'metadata', 'namespace')}/{name(pod)}"


def node_id(node: RawObject, key: str) -> str:
    """A Node's csi-baremetal node ID: the ``key`` annotation, else the label ("" when neither)."""
    found = (map_field(node, "metadata", "annotations").get(key)
             or map_field(node, "metadata", "labels").get(key))
    return found if isinstance(found, str) else ""


def _node_ids(nodes: list[Obj], key: str) -> dict[str, str]:
    return {name(n): i for n in nodes if (i := node_id(n, key))}


class ReservationSource(Protocol):
    """Where a gather reads from; a read that fails raises (``KubeError``), it never guesses."""

    def reservations(self, names: Collection[str] | None = None) -> list[Obj]:
        """The ACRs named (those that exist), or every ACR for ``None``."""
        ...

    def pods(self, keys: Collection[str] | None = None) -> dict[str, PodState]:
        """The live pods among ``keys`` (``<namespace>/<name>``), or every pod for ``None``."""
        ...

    def node_ids(self) -> dict[str, str]:
        """Kubernetes node name -> csi-baremetal node ID, for every Node that carries one."""
        ...

    def ac_nodes(self, names: Collection[str]) -> dict[str, str]:
        """AC name -> its ``spec.NodeId``, for the ACs among ``names`` that exist."""
        ...


class ReservationCacheSource:
    """The controller's view: ``snapshot`` (the ACR cache, our newer writes preferred) and the pod cache."""

    def __init__(self, snapshot: Callable[[], list[Obj]], pods: WatchCache, nodes: WatchCache,
                 acs: WatchCache, node_id_key: str) -> None:
        self._snapshot, self._pods, self._nodes, self._acs = snapshot, pods, nodes, acs
        self._node_id_key = node_id_key

    def reservations(self, names: Collection[str] | None = None) -> list[Obj]:
        acrs = self._snapshot()
        return acrs if names is None else [a for a in acrs if name(a) in names]

    def pods(self, keys: Collection[str] | None = None) -> dict[str, PodState]:
        found = {_key(p): pod_state(p) for p in self._pods.list()}
        return found if keys is None else {k: v for k, v in found.items() if k in keys}

    def node_ids(self) -> dict[str, str]:
        return _node_ids(self._nodes.list(), self._node_id_key)

    def ac_nodes(self, names: Collection[str]) -> dict[str, str]:
        found = ((n, self._acs.get(None, n)) for n in names)
        return {n: str_field(ac, "spec", "NodeId") for n, ac in found if ac is not None}


class ReservationApiSource:
    """The API server itself: each ACR and each pod read by name."""

    def __init__(self, client: KubeClient, acr_resource: Resource, ac_resource: Resource,
                 node_id_key: str) -> None:
        self._client, self._acr_resource, self._ac_resource = client, acr_resource, ac_resource
        self._node_id_key = node_id_key

    def reservations(self, names: Collection[str] | None = None) -> list[Obj]:
        if names is None:
            return self._client.list(self._acr_resource)[0]
        found = []
        for acr_name in sorted(names):
            try:
                found.append(self._client.get(self._acr_resource, acr_name))
            except NotFound:
                continue
        return found

    def pods(self, keys: Collection[str] | None = None) -> dict[str, PodState]:
        if keys is None:
            return {_key(p): pod_state(p) for p in self._client.list(PODS)[0]}
        found = {}
        for key in sorted(keys):
            namespace, _, pod_name = key.partition("/")
            try:
                found[key] = pod_state(self._client.get(PODS, pod_name, namespace))
            except NotFound:
                continue
        return found

    def node_ids(self) -> dict[str, str]:
        return _node_ids(self._client.list(NODES)[0], self._node_id_key)

    def ac_nodes(self, names: Collection[str]) -> dict[str, str]:
        found = {}
        for ac_name in sorted(names):
            # a list by name, not a GET: the controller's role grants ACs list and watch, not get
            for ac in self._client.list(self._ac_resource, field_selector=f"metadata.name={ac_name}")[0]:
                found[ac_name] = str_field(ac, "spec", "NodeId")
        return found


def gather(source: ReservationSource, ttl: timedelta,
           names: Collection[str] | None = None) -> ReservationGcInput:
    """Everything one collection over the ACRs ``names`` (every ACR for ``None``) reads, from ``source``.

    The ACRs first, then their pods: a pod missing afterwards is gone, not merely newer.
    """
    acrs = source.reservations(names)
    keys = None if names is None else {k for k in (pod_key(a) for a in acrs) if k}
    return ReservationGcInput(tuple(acrs), source.pods(keys), ttl)


def _bound_acs(acrs: list[Obj], pods: dict[str, PodState]) -> set[str]:
    """The ACs named by the RESERVED reservations whose pod is bound: all a release may look up."""
    named: set[str] = set()
    for acr in acrs:
        pod = pods.get(pod_key(acr))
        if str_field(acr, "spec", "Status") != RESERVED or pod is None or not pod.node_name:
            continue
        for request in list_field(acr, "spec", "ReservationRequests"):
            named.update(a for a in list_field(request, "Reservations") if isinstance(a, str))
    return named


def gather_release(source: ReservationSource) -> ReservationReleaseInput:
    """Everything one release pass reads, from ``source``."""
    acrs = source.reservations()
    pods = source.pods()
    return ReservationReleaseInput(tuple(acrs), pods, source.node_ids(),
                                   source.ac_nodes(_bound_acs(acrs, pods)))
