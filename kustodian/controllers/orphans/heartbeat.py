"""Who speaks for the Orphans of a node whose agent is gone.

An Orphan's ``DataCleanable`` condition is written by the agent of its node; when that
node is down (or its agent is), nobody would correct a ``DataCleanable=True`` written
before, and a delete would sit in Terminating with nothing to say why.  So every agent
renews a heartbeat in its own node's disk record (ConfigMap ``kustodian-disks-<node>``,
key ``heartbeat.json``: ``renewTime``, ``leaseDurationSeconds``; the one object the agent may
write, see the chart's node-records policy), and watches over the others: on each pass,
for every other node that has Orphans, it reads that node's record, and when its heartbeat
expired it writes ``DataCleanable=False`` (reason ``NodeAgentGone``) on that node's Orphans.
A record without a heartbeat (an agent of an older version) says nothing.  A delete of one
of them is answered:

* when the node's agent returns: the delete was requested while it was away, so it is a
  deferred one (:func:`policy.orphans.ownership.deferred_delete`): the finalizer is
  dropped, the data kept, and the next scan reports the directory afresh;
* when the node is removed from Longhorn (its Longhorn Node deleted): any agent drops the
  finalizer, the data is left where it is (there is nobody to remove it).

Both within one heartbeat pass (``interval``) of the event.  The decision is
:func:`policy.orphans.agent_gone` (pure); this module only reads and writes.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from kustodian.controllers.orphans.disks import HEARTBEAT_KEY, DiskRegistry, config_map_name
from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import KubeError, NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import CONFIG_MAPS, Resource
from kustodian.policy.objects import field, is_deleting, list_field, str_field
from kustodian.policy.orphans import (
    CONDITION_DATA_CLEANABLE,
    ORPHAN_BY_NODE,
    ORPHAN_FINALIZER,
    OrphanReason,
    agent_gone,
    agent_gone_condition,
)
from kustodian.runtime import Periodic

log = logging.getLogger(__name__)

def _micro_time(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Heartbeat:
    """This node's heartbeat, and the watch over the other nodes' Orphans (a periodic runnable)."""

    def __init__(self, client: KubeClient, registry: DiskRegistry, *, node: str, namespace: str,
                 longhorn_namespace: str, orphans: WatchCache, orphan_resource: Resource,
                 longhorn_nodes: Resource, recorder: EventRecorder, clock: Callable[[], datetime],
                 interval: timedelta, timeout: timedelta) -> None:
        self.client, self.registry, self.node, self.namespace = client, registry, node, namespace
        self.longhorn_namespace = longhorn_namespace
        self.orphans, self.orphan_resource, self.longhorn_nodes = orphans, orphan_resource, longhorn_nodes
        self.recorder, self.clock = recorder, clock
        self.interval, self.timeout = interval, timeout
        self.passes = 0  # read by tests

    def loop(self) -> Periodic:
        """A pass every ``interval`` (one that fails is logged; the next one comes all the same)."""
        return Periodic("heartbeat", self.beat_once, self.interval.total_seconds(), join_timeout=10)

    def beat_once(self) -> None:
        """Renew this node's heartbeat, then speak for the nodes whose heartbeat expired."""
        self.renew()
        now = self.clock()
        others = sorted({str_field(o, "spec", "nodeID") for o in self.orphans.list()} - {self.node, ""})
        for other in others:
            beat = self._heartbeat_of(other)
            if beat is None:
                continue
            why = agent_gone(other, str(beat.get("renewTime") or ""), beat.get("leaseDurationSeconds"), now)
            if why:
                self._speak_for(other, why, now)
        self.passes += 1

    def renew(self) -> None:
        """Write this node's heartbeat into its disk record."""
        try:
            self.registry.publish(HEARTBEAT_KEY, {
                "renewTime": _micro_time(self.clock()),
                "leaseDurationSeconds": max(1, int(self.timeout.total_seconds()))})
        except KubeError as exc:
            log.warning("node %s: cannot renew the heartbeat: %s", self.node, exc)

    def _heartbeat_of(self, other: str) -> dict[str, object] | None:
        try:
            cm = self.client.get(CONFIG_MAPS, config_map_name(other), self.namespace)
        except NotFound:
            return None
        except KubeError as exc:
            log.info("cannot read the heartbeat of node %s: %s", other, exc)
            return None
        try:
            doc = json.loads((cm.get("data") or {}).get(HEARTBEAT_KEY) or "null")
        except ValueError:
            return None
        return doc if isinstance(doc, dict) else None

    def _speak_for(self, other: str, why: str, now: datetime) -> None:
        removed: bool | None = None  # whether the node is gone from Longhorn; looked up once, when needed
        for obj in self.orphans.by_index(ORPHAN_BY_NODE, other):
            if is_deleting(obj) and ORPHAN_FINALIZER in list_field(obj, "metadata", "finalizers"):
                if removed is None:
                    removed = self._removed_from_longhorn(other)
                if removed:
                    self._release(obj, other)
                    continue
            condition = agent_gone_condition(obj, why, now)
            if condition is not None:
                self._write_condition(obj, condition)

    def _removed_from_longhorn(self, other: str) -> bool:
        try:
            self.client.get(self.longhorn_nodes, other, self.longhorn_namespace)
        except NotFound:
            return True
        except KubeError as exc:
            log.warning("cannot tell whether node %s is still in Longhorn: %s", other, exc)
        return False

    def _release(self, obj: Obj, other: str) -> None:
        meta = obj.get("metadata") or {}
        remaining = [f for f in list_field(obj, "metadata", "finalizers") if f != ORPHAN_FINALIZER]
        with contextlib.suppress(NotFound):
            self.client.patch(self.orphan_resource, str(meta.get("name")), {"metadata": {
                "finalizers": remaining, "resourceVersion": meta.get("resourceVersion")}},
                str(meta.get("namespace")))
        message = (f"{OrphanReason.NODE_AGENT_GONE}: node {other} was removed from Longhorn and its agent "
                   "is gone; the Orphan is released, its data left on the node "
                   f"(released by the agent on {self.node})")
        log.info("Orphan %s/%s: %s", meta.get("namespace"), meta.get("name"), message)
        self.recorder.record(obj, "Normal", "DataKept", message)

    def _write_condition(self, obj: Obj, condition: dict[str, str]) -> None:
        conditions = list_field(obj, "status", "conditions")
        merged = [c for c in conditions if field(c, "type") != CONDITION_DATA_CLEANABLE] + [condition]
        meta = obj.get("metadata") or {}
        try:
            self.client.patch(self.orphan_resource, str(meta.get("name")), {
                "metadata": {"resourceVersion": meta.get("resourceVersion")},
                "status": {"conditions": merged}}, str(meta.get("namespace")), subresource="status")
        except NotFound:
            return
        except KubeError as exc:  # a conflict: the next pass writes it on the newer object
            log.info("Orphan %s/%s: cannot mark it not cleanable yet: %s", meta.get("namespace"),
                     meta.get("name"), exc)
