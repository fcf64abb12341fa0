"""The one place reservation garbage collection reads: :func:`gather` fills a :class:`ReservationGcInput`.

Two sources answer the same two questions (these ACRs, the pods they were made for):
:class:`ReservationCacheSource` from the controller's view (the ACR cache with our newer
writes laid over it, the pod cache), for every pass, and :class:`ReservationApiSource` from
the API server itself, to confirm each delete (a pod cache behind the ACR cache must not
delete a reservation whose pod was merely created a moment ago).  The decision never knows
which one it was given.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import timedelta
from typing import Protocol

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import PODS, Resource
from kustodian.policy.capacity.gc import ReservationGcInput
from kustodian.policy.capacity.stale import PodState, pod_key
from kustodian.policy.objects import RawObject, name, str_field


def pod_state(pod: RawObject) -> PodState:
    """What housekeeping reads of a pod: where it is bound and its phase."""
    return PodState(node_name=str_field(pod, "spec", "nodeName"), phase=str_field(pod, "status", "phase"))


def _key(pod: RawObject) -> str:
    return f"{str_field(pod, 'metadata', 'namespace')}/{name(pod)}"


class ReservationSource(Protocol):
    """Where a gather reads from; a read that fails raises (``KubeError``), it never guesses."""

    def reservations(self, names: Collection[str] | None = None) -> list[Obj]:
        """The ACRs named (those that exist), or every ACR for ``None``."""
        ...

    def pods(self, keys: Collection[str] | None = None) -> dict[str, PodState]:
        """The live pods among ``keys`` (``<namespace>/<name>``), or every pod for ``None``."""
        ...


class ReservationCacheSource:
    """The controller's view: ``snapshot`` (the ACR cache, our newer writes preferred) and the pod cache."""

    def __init__(self, snapshot: Callable[[], list[Obj]], pods: WatchCache) -> None:
        self._snapshot, self._pods = snapshot, pods

    def reservations(self, names: Collection[str] | None = None) -> list[Obj]:
        acrs = self._snapshot()
        return acrs if names is None else [a for a in acrs if name(a) in names]

    def pods(self, keys: Collection[str] | None = None) -> dict[str, PodState]:
        found = {_key(p): pod_state(p) for p in self._pods.list()}
        return found if keys is None else {k: v for k, v in found.items() if k in keys}


class ReservationApiSource:
    """The API server itself: each ACR and each pod read by name."""

    def __init__(self, client: KubeClient, acr_resource: Resource) -> None:
        self._client, self._acr_resource = client, acr_resource

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


def gather(source: ReservationSource, ttl: timedelta,
           names: Collection[str] | None = None) -> ReservationGcInput:
    """Everything one collection over the ACRs ``names`` (every ACR for ``None``) reads, from ``source``.

    The ACRs first, then their pods: a pod missing afterwards is gone, not merely newer.
    """
    acrs = source.reservations(names)
    keys = None if names is None else {k for k in (pod_key(a) for a in acrs) if k}
    return ReservationGcInput(tuple(acrs), source.pods(keys), ttl)
