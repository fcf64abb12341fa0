"""The orphan-cleanup reconciler: each Orphan of this node, gather -> decide -> confirm -> act.

It gathers one frozen :class:`policy.orphans.OrphanCleanupInput` from what the agent holds
(:mod:`controllers.orphans.gather`: the Orphan cache, the disk monitor's last scans and
brakes, Longhorn's caches, and the Orphan's directory looked at afresh),
:func:`policy.orphans.decide_orphan_cleanup` decides, and it keeps the ``DataCleanable``
condition and ``status.state`` current, auto-deletes after the grace period when enabled, and,
once the object is being deleted, moves the directory into the disk's quarantine or only drops
the finalizer.  That act is confirmed first: the same decision on a gather from the API server
and a *fresh* disk read, compared with the first (:func:`policy.orphans.confirms`).  The
Orphan keeps its finalizer while its data is in quarantine; the data is removed for good once
the retention passed, or moved back on a restore request (:mod:`policy.orphans.quarantine`),
and only then is the object released.  Every write and every directory move goes through
:class:`~controllers.orphans.actions.OrphanActions`.

A directory written within ``write_grace`` is live data and never removed, whatever the
ownership sources say; the mass-orphan brake also holds a disk whose every directory turned
orphan at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kustodian.controllers.orphans.actions import OrphanActions
from kustodian.controllers.orphans.gather import OrphanCleanupSource, gather
from kustodian.controllers.orphans.scan import RemovalOutcome
from kustodian.controllers.orphans.state import AgentOptions, AutoDeletionSource
from kustodian.kube.cache import WatchCache, object_key
from kustodian.kube.client import Obj
from kustodian.policy.objects import RawObject, is_deleting, list_field, str_field
from kustodian.policy.orphans import (
    ORPHAN_BY_NODE,
    ORPHAN_FINALIZER,
    RESTORE_REFUSED,
    RESTORE_RESTORED,
    STATE_QUARANTINED,
    STATE_REMOVED,
    STATE_RESTORED,
    AutoDeletion,
    DeleteOrphan,
    DropFinalizer,
    HoldQuarantined,
    NoAction,
    OrphanAction,
    OrphanCleanupInput,
    OrphanCleanupRules,
    OrphanDecision,
    PurgeQuarantined,
    RefuseRestore,
    RemoveDir,
    RestoreDir,
    Wait,
    confirms,
    decide_orphan_cleanup,
    quarantine_deadline,
    quarantine_path,
)
from kustodian.policy.timestamps import format_rfc3339
from kustodian.runtime import Result

__all__ = ["OrphanCleanupReconciler"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Confirmed:
    """The fresh Orphan and the action confirmed on it."""

    orphan: RawObject
    action: OrphanAction
    status: Mapping[str, Any]


class OrphanCleanupReconciler:
    """Keeps each Orphan of this node current, and removes (quarantines) or keeps its data on delete."""

    name = "orphans"

    def __init__(self, options: AgentOptions, orphans: WatchCache, actions: OrphanActions, *,
                 cache_source: OrphanCleanupSource, api_source: OrphanCleanupSource,
                 held_disks: Callable[[], Mapping[str, str]], auto_deletion: AutoDeletionSource,
                 clock: Callable[[], datetime], retry_interval: float = 10.0,
                 prepare: Callable[[], None] = lambda: None) -> None:
        self.options = options
        self.node, self.namespace = options.node, options.namespace
        self.orphans = orphans
        self.actions = actions
        self.cache_source = cache_source  # where every pass gathers: what the agent holds
        self.api_source = api_source  # where an act on a deleting Orphan is confirmed
        self.held_disks = held_disks
        self.auto_deletion = auto_deletion
        self.clock = clock
        self.retry_interval = retry_interval
        self.agent_since: datetime | None = None  # deletes requested before this are deferred ones
        self._prepare = prepare
        self._enqueue: Callable[[str], None] = lambda key: None

    def after_sync(self) -> None:
        """What must be ready before the first reconcile or scan (the node's disk record)."""
        self._prepare()

    def wire(self, enqueue: Callable[[str], None]) -> None:
        """This node's Orphan events enqueue; deletes requested from now on are not deferred ones."""
        self._enqueue = enqueue
        self.agent_since = self.clock()
        self.orphans.add_handler(self._on_orphan)

    def _on_orphan(self, etype: str, new: Obj | None, old: Obj | None) -> None:
        obj = new or old or {}
        if etype != "DELETED" and str_field(obj, "spec", "nodeID") == self.node:
            self._enqueue(object_key(obj))

    def reconcile_all(self) -> None:
        """Reconcile every Orphan of this node (after a sync, or when a timer may have passed)."""
        for obj in self.orphans.by_index(ORPHAN_BY_NODE, self.node):
            self._enqueue(object_key(obj))

    # -- one Orphan ---------------------------------------------------------------------------

    def reconcile(self, key: str) -> Result | None:
        """Gather from the caches, decide, act; an act on a deleting Orphan is confirmed first."""
        namespace, _, name = key.rpartition("/")
        policy = self.auto_deletion()
        options = self.options
        rules = OrphanCleanupRules(self.node, policy.enabled, policy.grace, self.agent_since,
                                   options.write_grace, options.quarantine)
        observed = gather(self.cache_source, namespace, name, rules, self.held_disks())
        if observed is None or str_field(observed.orphan, "spec", "nodeID") != self.node:
            return None
        deleting = is_deleting(observed.orphan)
        if deleting and ORPHAN_FINALIZER not in list_field(observed.orphan, "metadata", "finalizers"):
            return None
        now = self.clock()
        decision = decide_orphan_cleanup(observed, now)
        if not deleting:
            obj = self.actions.write_status(observed.orphan, decision.condition, decision.status)
            result = self._act(obj, decision.action, now, policy)
            return result if result is not None else self._look_again(observed)
        # about to remove data or to give up the request to: look again, at the disks and at the API server
        confirmed = self._confirm(namespace, name, observed, decision, now)
        if confirmed is None:
            return None  # the Orphan is gone
        if isinstance(confirmed, Result):
            return confirmed
        obj = self.actions.write_status(confirmed.orphan, None, confirmed.status)
        return self._act(obj, confirmed.action, now, policy)

    def _look_again(self, observed: OrphanCleanupInput) -> Result | None:
        """A directory kept as live data is looked at again once the write grace may have passed:
        nothing else would tell the agent that it went quiet."""
        probe, grace = observed.probe, self.options.write_grace.total_seconds()
        if probe is None or probe.idle is None or probe.idle >= grace:
            return None
        left = grace - max(probe.idle, 0.0)
        return Result(requeue_after=max(self.retry_interval, left + 0.05))

    def _confirm(self, namespace: str, name: str, observed: OrphanCleanupInput, first: OrphanDecision,
                 now: datetime) -> _Confirmed | Result | None:
        """The decision on ``gather(api)`` to act on, compared with ``first`` (made on ``observed``).

        Releasing the Orphan (the data kept) follows the fresh decision, as it always did;
        a removal is made only when two decisions agree, the last on a fresh gather: when the
        caches did not see the removal the fresh gather shows, one more fresh gather confirms it.
        """
        rules, held = observed.rules, observed.held_disks
        fresh = gather(self.api_source, namespace, name, rules, held)
        if fresh is None:
            return None
        decision = decide_orphan_cleanup(fresh, now)
        if isinstance(decision.action, RemoveDir) and not confirms(decision, first.action):
            again = gather(self.api_source, namespace, name, rules, held)
            if again is None:
                return None
            if not confirms(decide_orphan_cleanup(again, now), decision.action):
                log.info("Orphan %s/%s: the facts changed while confirming a removal; deciding again soon",
                         namespace, name)
                return Result(requeue_after=self.retry_interval)
            fresh = again
        return _Confirmed(fresh.orphan, decision.action, decision.status)

    def _act(self, obj: RawObject, action: OrphanAction, now: datetime,
             policy: AutoDeletion) -> Result | None:
        actions = self.actions
        if isinstance(action, RemoveDir):
            return self._quarantine(obj, action)
        if isinstance(action, PurgeQuarantined):
            return self._purge(obj, action)
        if isinstance(action, RestoreDir):
            return self._restore(obj, action)
        if isinstance(action, RefuseRestore):
            self._answer_restore(obj, action.request, f"{action.reason}: {action.message}")
        elif isinstance(action, HoldQuarantined):
            if action.remove_at is not None:
                return Result(requeue_after=max(0.0, (action.remove_at - now).total_seconds()) + 0.05)
        elif isinstance(action, DropFinalizer):
            actions.drop_finalizer(obj)
            why = action.message or "data left in place"
            actions.event(obj, "Normal", "DataKept", f"{action.reason}: {why}")
        elif isinstance(action, DeleteOrphan):
            if not actions.delete(action):
                return None
            actions.event(obj, "Normal", str(action.reason),
                          f"deleted after the grace period of {policy.grace} ({policy.source}): "
                          "its data is cleanable")
        elif isinstance(action, Wait):
            return Result(requeue_after=max(0.0, (action.requeue_at - now).total_seconds()) + 0.05)
        elif isinstance(action, NoAction):
            log.debug("Orphan %s/%s: nothing to do (%s)", str_field(obj, "metadata", "namespace"),
                      str_field(obj, "metadata", "name"), action.reason)
        return None

    # -- the data -----------------------------------------------------------------------------

    def _quarantine(self, obj: RawObject, action: RemoveDir) -> Result | None:
        """Every removal check, then one rename into the disk's quarantine; the finalizer stays."""
        actions = self.actions
        result = actions.quarantine(action, quiet_for=self.options.write_grace.total_seconds())
        name = str_field(obj, "metadata", "name")
        if result.outcome == RemovalOutcome.ALREADY_ABSENT:
            log.info("Orphan %s/%s: %s is already gone", self.namespace, name, result.path)
            actions.event(obj, "Normal", "DataRemoved", f"{result.path} was already gone")
            actions.drop_finalizer(obj)
            return None
        if result.outcome != RemovalOutcome.QUARANTINED:
            message = f"{result.path} not removed ({result.outcome}): {result.reason} {result.message}"
            log.warning("Orphan %s/%s: %s", self.namespace, name, message)
            actions.event(obj, "Warning", f"Remove{result.outcome}", message)
            return Result(requeue_after=self.retry_interval)  # re-decided on fresh facts then
        now = self.clock()
        deadline = quarantine_deadline(now, self.options.quarantine, actions.quarantine_free_share(action))
        if deadline <= now:  # no retention: removed at once, on the decision just confirmed
            held = quarantine_path(action.disk_path, action.dir_name) or result.path
            return self._purge(obj, PurgeQuarantined(action.disk_path, action.dir_name, action.expected_uuid,
                                                     held))
        obj = actions.write_status(obj, None, {"state": STATE_QUARANTINED,
                                               "quarantinedAt": format_rfc3339(now),
                                               "removeAfter": format_rfc3339(deadline)})
        log.info("Orphan %s/%s: %s %s", self.namespace, name, result.path, result.message)
        actions.event(obj, "Normal", "DataQuarantined",
                      f"{result.path} {result.message}; removed for good after {format_rfc3339(deadline)} "
                      f"unless restored (kustodian orphans restore {name})")
        return Result(requeue_after=0.05)  # decided again from the quarantine now

    def _purge(self, obj: RawObject, action: PurgeQuarantined) -> Result | None:
        """The retention has passed: remove the quarantined directory for good, then release the Orphan."""
        actions = self.actions
        result = actions.purge(action)
        name = str_field(obj, "metadata", "name")
        if not result.gone:
            message = f"{result.path} not removed ({result.outcome}): {result.reason} {result.message}"
            log.warning("Orphan %s/%s: %s", self.namespace, name, message)
            actions.event(obj, "Warning", f"Remove{result.outcome}", message)
            return Result(requeue_after=self.retry_interval)
        obj = actions.write_status(obj, None, {"state": STATE_REMOVED, "removeAfter": None})
        log.info("Orphan %s/%s: removed %s after its quarantine (%s)", self.namespace, name, result.path,
                 result.outcome)
        actions.event(obj, "Normal", "DataRemoved", f"{result.path} removed (quarantine retention passed)")
        actions.drop_finalizer(obj)
        return None

    def _restore(self, obj: RawObject, action: RestoreDir) -> Result | None:
        """Move the quarantined directory back (every check made again), answer the request, release."""
        actions = self.actions
        result = actions.restore(action)
        if result.outcome != RemovalOutcome.RESTORED:
            self._answer_restore(obj, action.request, f"{result.reason}: {result.message}")
            failed = result.outcome == RemovalOutcome.FAILED
            return Result(requeue_after=self.retry_interval) if failed else None
        message = f"{result.path} restored ({result.message})"
        obj = actions.write_status(obj, None, {
            "state": STATE_RESTORED, "removeAfter": None,
            "restore": {"request": action.request, "result": RESTORE_RESTORED, "message": message}})
        log.info("Orphan %s/%s: %s", self.namespace, str_field(obj, "metadata", "name"), message)
        actions.event(obj, "Normal", "DataRestored", message)
        actions.drop_finalizer(obj)  # the next scan reports the directory afresh
        return None

    def _answer_restore(self, obj: RawObject, request: str, message: str) -> None:
        self.actions.write_status(obj, None, {"restore": {"request": request, "result": RESTORE_REFUSED,
                                                          "message": message}})
        log.warning("Orphan %s/%s: restore refused: %s", self.namespace, str_field(obj, "metadata", "name"),
                    message)
        self.actions.event(obj, "Warning", "RestoreRefused", message)
