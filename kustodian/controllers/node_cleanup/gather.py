"""The one place node cleanup reads: :func:`gather` fills a :class:`NodeCleanupInput` from a source.

Three sources answer the same three questions (this PV, the claim it names, the Nodes it may
live on): :class:`NodeCleanupCacheSource` from the watch caches, for every pass;
:class:`NodeCleanupApiSource` from the API server itself, to confirm a delete (a lagging Node
cache must not delete) and to re-read after a conflict; :class:`NodeCleanupListSource` from objects
listed once, for a plan.  The decision never knows which one it was given.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any, Protocol

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import NODES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
from kustodian.policy.node_cleanup import (
    HOSTNAME_LABEL,
    NodeCleanupInput,
    NodeCleanupRules,
    NodeDirectory,
    NodeSnapshot,
    affinity_node_names,
)
from kustodian.policy.objects import str_field

Obj = dict[str, Any]

_ABSENCE_TTL = 1.0  # seconds a fresh "this Node is gone" answer is reused for its other PVs


class NodeCleanupSource(Protocol):
    """Where a gather reads from; a read that fails raises (``KubeError``), it never guesses."""

    def volume(self, name: str) -> Obj | None:
        """The PV, or ``None`` when it does not exist."""
        ...

    def claim(self, namespace: str, name: str) -> Obj | None:
        """The PVC, or ``None`` when it does not exist."""
        ...

    def nodes(self, names: Collection[str]) -> NodeDirectory:
        """The Nodes known by any of ``names`` (a Node name or a hostname label), at least."""
        ...


class NodeCleanupCacheSource:
    """The watch caches; the node directory is rebuilt only after a Node event (10k PVs, 1k nodes)."""

    def __init__(self, nodes: WatchCache, pvs: WatchCache, pvcs: WatchCache) -> None:
        self._nodes, self._pvs, self._pvcs = nodes, pvs, pvcs
        self._snapshot: NodeSnapshot | None = None
        self._lock = threading.Lock()
        nodes.add_handler(lambda etype, new, old: self._node_changed())

    def volume(self, name: str) -> Obj | None:
        return self._pvs.get(None, name)

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self._pvcs.get(namespace, name)

    def nodes(self, names: Collection[str]) -> NodeDirectory:
        with self._lock:
            if self._snapshot is None:
                self._snapshot = NodeSnapshot.from_nodes(self._nodes.list())
            return self._snapshot

    def _node_changed(self) -> None:
        with self._lock:
            self._snapshot = None


class _Lookup:
    """One confirmation of a Node in flight; the workers asking for the same Node meanwhile wait
    for its answer instead of asking again."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.found: list[Obj] | None = None  # None: it failed, each waiter asks for itself


class NodeCleanupApiSource:
    """The API server itself: the PV and PVC by name, the Nodes by name and by hostname label."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._absent_seen: dict[str, float] = {}
        self._lock = threading.Lock()
        self._in_flight: dict[str, _Lookup] = {}

    def volume(self, name: str) -> Obj | None:
        try:
            return self._client.get(PERSISTENT_VOLUMES, name)
        except NotFound:
            return None

    def claim(self, namespace: str, name: str) -> Obj | None:
        try:
            return self._client.get(PERSISTENT_VOLUME_CLAIMS, name, namespace)
        except NotFound:
            return None

    def nodes(self, names: Collection[str]) -> NodeDirectory:
        found: list[Obj] = []
        for node_name in sorted(names):
            found.extend(self._node(node_name))
        return NodeSnapshot.from_nodes(found)

    def _node(self, node_name: str) -> list[Obj]:
        """The Nodes known as ``node_name`` (by name or hostname label), as the API server says.

        A lost Node usually carries many local PVs; their deadlines fall together and ten workers
        confirm them at once.  One read is made for all of them: a worker that asks while another's
        read of the same Node is in flight waits for that answer, and a Node the API server said is
        gone less than a second ago is not asked about again (:meth:`_confirmed_absent`).  A read that
        failed is no answer: each waiter then asks for itself, and a failure raises.
        """
        with self._lock:
            if self._confirmed_absent(node_name):
                return []
            lookup = self._in_flight.get(node_name)
            leader = lookup is None
            if lookup is None:
                lookup = self._in_flight[node_name] = _Lookup()
        if not leader:
            lookup.done.wait()
            return lookup.found if lookup.found is not None else self._read_node(node_name)
        try:
            lookup.found = self._read_node(node_name)
            return lookup.found
        finally:
            with self._lock:
                del self._in_flight[node_name]
            lookup.done.set()

    def _read_node(self, node_name: str) -> list[Obj]:
        these = []
        with contextlib.suppress(NotFound):
            these.append(self._client.get(NODES, node_name))
        these.extend(self._client.list(NODES, label_selector=f"{HOSTNAME_LABEL}={node_name}")[0])
        if not these:
            with self._lock:
                self._absent_seen[node_name] = time.monotonic()
        return these

    def _confirmed_absent(self, node_name: str) -> bool:
        """A Node the API server said is gone less than a second ago (by name and by label).

        The window is short enough that a Node coming back is seen on the next deadline.
        Called with ``_lock`` held.
        """
        seen = self._absent_seen.get(node_name)
        return seen is not None and time.monotonic() - seen < _ABSENCE_TTL


class NodeCleanupListSource:
    """Objects listed once, for a plan (``kustodian node-cleanup plan``): from the API server or from
    a directory of manifests.  Nothing is watched, so its gathers carry no ``watched_since``."""

    def __init__(self, pvs: Collection[Obj], pvcs: Collection[Obj], nodes: Collection[Obj]) -> None:
        self._pvs = {str_field(pv, "metadata", "name"): pv for pv in pvs}
        self._pvcs = {(str_field(c, "metadata", "namespace"), str_field(c, "metadata", "name")): c
                      for c in pvcs}
        self._nodes = NodeSnapshot.from_nodes(list(nodes))

    @property
    def volume_names(self) -> list[str]:
        return sorted(self._pvs)

    def volume(self, name: str) -> Obj | None:
        return self._pvs.get(name)

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self._pvcs.get((namespace, name))

    def nodes(self, names: Collection[str]) -> NodeDirectory:
        return self._nodes


def gather(source: NodeCleanupSource, pv_name: str, rules: NodeCleanupRules,
           overlay: Callable[[Obj], Obj] = lambda pv: pv,
           watched_since: Callable[[Collection[str]], datetime | None] = lambda names: None,
           ) -> NodeCleanupInput | None:
    """Everything one decision about PV ``pv_name`` reads, from ``source``; ``None``: no such PV.

    ``overlay`` lays the timer annotations kept in memory over the PV (see ``timers``);
    ``watched_since`` says since when this process has watched the Nodes the PV may live on
    without a gap and without seeing one of them deleted, asked after the reads, so that a gap
    or a deletion during them is counted.
    """
    pv = source.volume(pv_name)
    if pv is None:
        return None
    pv = overlay(pv)
    claim_ns = str_field(pv, "spec", "claimRef", "namespace")
    claim_name = str_field(pv, "spec", "claimRef", "name")
    claim = source.claim(claim_ns, claim_name) if claim_ns and claim_name else None
    names = affinity_node_names(pv).node_names
    nodes = source.nodes(names)
    return NodeCleanupInput(pv, claim, nodes, rules, watched_since(names))
