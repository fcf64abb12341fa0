"""The one place the node agent's reconcilers touch the outside: Orphan writes, Events, replica directories.

Every write about an Orphan (create, prune, status, finalizer, delete, its size) and every
move of a replica directory (into the disk's quarantine, out of it, removed for good) goes
through :class:`OrphanActions`; the reconcilers (:mod:`~controllers.orphans.sync`,
:mod:`~controllers.orphans.cleanup`) and the sizer decide, and call it.  Writes that could
hurt carry preconditions: a prune patches with the Orphan's UID and deletes with it, status
writes and the finalizer's removal carry the resourceVersion read (a 409 is retried on a
fresh read); each directory move makes every removal check again right before its one
rename (:mod:`controllers.orphans.quarantine`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from kustodian.controllers.orphans.quarantine import (
    probe_quarantine,
    purge_quarantined,
    quarantine_replica_dir,
    restore_quarantined,
)
from kustodian.controllers.orphans.scan import RemovalResult
from kustodian.controllers.orphans.state import ORPHANS
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import AlreadyExists, KubeError, NotFound
from kustodian.kube.events import EventRecorder
from kustodian.policy.objects import RawObject, field, list_field, str_field
from kustodian.policy.orphans import (
    ANNOTATION_KEEP_DATA,
    CONDITION_DATA_CLEANABLE,
    ORPHAN_FINALIZER,
    DeleteOrphan,
    OrphanedReplicaDir,
    PruneOrphan,
    PurgeQuarantined,
    RemoveDir,
    RestoreDir,
    orphan_object,
)

__all__ = ["OrphanActions"]

log = logging.getLogger(__name__)


class OrphanActions:
    """Orphan writes, Events and directory moves of one node agent."""

    def __init__(self, client: KubeClient, recorder: EventRecorder, *, namespace: str) -> None:
        self.client, self.recorder, self.namespace = client, recorder, namespace

    # -- the objects --------------------------------------------------------------------------

    def create(self, orphan: OrphanedReplicaDir) -> bool:
        """Report ``orphan`` (an Orphan that exists already is fine); False when it could not be written."""
        obj = orphan_object(orphan, namespace=self.namespace)
        try:
            self.client.create(ORPHANS, obj)
        except AlreadyExists:
            return True
        except KubeError as exc:
            log.warning("cannot create Orphan for %s/replicas/%s: %s", orphan.disk_path, orphan.dir_name, exc)
            return False
        log.info("Orphan %s/%s: %s/replicas/%s is not owned by any replica", self.namespace,
                 obj["metadata"]["name"], orphan.disk_path, orphan.dir_name)
        return True

    def prune(self, prune: PruneOrphan) -> bool:
        """Keep the data, then delete the object: it no longer stands for an orphan."""
        try:
            # metadata.uid in a patch is a precondition: a recreated Orphan is left alone
            self.client.patch(ORPHANS, prune.name, {"metadata": {
                "uid": prune.uid, "annotations": {ANNOTATION_KEEP_DATA: "true"}}}, prune.namespace)
            self.client.delete(ORPHANS, prune.name, prune.namespace, uid=prune.uid)
        except NotFound:
            return True
        except KubeError as exc:
            log.warning("cannot prune Orphan %s/%s: %s", prune.namespace, prune.name, exc)
            return False
        log.info("Orphan %s/%s pruned (%s); its directory is left alone", prune.namespace, prune.name,
                 prune.reason)
        return True

    def delete(self, action: DeleteOrphan) -> bool:
        """Delete the Orphan (auto-deletion), by UID; False when it was gone already."""
        try:
            self.client.delete(ORPHANS, action.name, action.namespace, uid=action.uid)
        except NotFound:
            return False
        return True

    def write_status(self, obj: RawObject, condition: Mapping[str, str] | None,
                     fields: Mapping[str, Any]) -> RawObject:
        """Merge ``condition`` (``DataCleanable``) and ``fields`` (``None``: remove) into the status, when
        anything differs; the object as written (its new resourceVersion), else ``obj``."""
        status = obj.get("status") or {}
        patch: dict[str, Any] = {k: v for k, v in fields.items() if status.get(k) != v}
        if condition is not None:
            conditions = list_field(obj, "status", "conditions")
            current = next((c for c in conditions if field(c, "type") == CONDITION_DATA_CLEANABLE), None)
            same = current is not None and all(field(current, k) == condition[k]
                                               for k in ("status", "reason", "message"))
            if not same:
                others = [c for c in conditions if field(c, "type") != CONDITION_DATA_CLEANABLE]
                patch["conditions"] = [*others, dict(condition)]
        if not patch:
            return obj
        meta = obj.get("metadata") or {}
        try:
            return self.client.patch(ORPHANS, str(meta.get("name")), {
                "metadata": {"resourceVersion": meta.get("resourceVersion")},
                "status": patch}, str(meta.get("namespace")), subresource="status")
        except NotFound:
            return obj

    def write_size(self, obj: RawObject, size: int) -> None:
        """``status.sizeBytes``, the sizer's own field: written without a resourceVersion, so it never
        fights the reconciler's compare-and-swap writes."""
        name = str_field(obj, "metadata", "name")
        try:
            self.client.patch(ORPHANS, name, {"status": {"sizeBytes": size}},
                              str_field(obj, "metadata", "namespace"), subresource="status")
        except NotFound:
            pass
        except KubeError as exc:
            log.warning("Orphan %s/%s: cannot write its size: %s", self.namespace, name, exc)

    def drop_finalizer(self, obj: RawObject) -> None:
        meta: Obj = dict(obj.get("metadata") or {})
        remaining = [f for f in list_field(obj, "metadata", "finalizers") if f != ORPHAN_FINALIZER]
        # resourceVersion makes this a compare-and-swap: a 409 is retried on a fresh read
        with contextlib.suppress(NotFound):
            self.client.patch(ORPHANS, str(meta.get("name")), {"metadata": {
                "finalizers": remaining, "resourceVersion": meta.get("resourceVersion")}},
                str(meta.get("namespace")))

    def event(self, obj: RawObject, event_type: str, reason: str, message: str) -> None:
        self.recorder.record(obj, event_type, reason, message)

    # -- the directories ------------------------------------------------------------------------

    def quarantine(self, action: RemoveDir, *, quiet_for: float) -> RemovalResult:
        """Every removal check, then one rename into the disk's quarantine."""
        return quarantine_replica_dir(action.disk_path, action.dir_name, action.expected_uuid,
                                      quiet_for=quiet_for)

    def quarantine_free_share(self, action: RemoveDir) -> float | None:
        """The free share of the disk's quarantine filesystem (what shortens the retention)."""
        return probe_quarantine(action.disk_path, action.dir_name).free_share

    def purge(self, action: PurgeQuarantined) -> RemovalResult:
        """Remove the quarantined directory for good (every check made again)."""
        return purge_quarantined(action.disk_path, action.dir_name, action.expected_uuid)

    def restore(self, action: RestoreDir) -> RemovalResult:
        """Move the quarantined directory back into ``replicas/`` (every check made again)."""
        return restore_quarantined(action.disk_path, action.dir_name, action.expected_uuid)
