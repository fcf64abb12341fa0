"""Deletion guard: deny the DELETE of a storage provider that still has dependents.

Unlike Rook (which accepts the DELETE and then holds the object Terminating behind
a finalizer) the request is refused at once, so nothing is ever half-deleted, and
``kubectl delete`` prints the dependents.  Decisions read only the watch caches.
Events (``DeletionBlocked``, ``DeletionOverridden``) are queued off the request
path and never written for ``dryRun`` requests.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kustodian.kube.events import EventRecorder
from kustodian.kube.view import CacheView
from kustodian.logs import about
from kustodian.policy.deletion import RuleSet, decide_delete, decide_namespace_delete
from kustodian.policy.store import Indexer
from kustodian.webhook.registry import Registry
from kustodian.webhook.review import AdmissionRequest, Answer, allowed, denied

log = logging.getLogger(__name__)

NAMESPACE = "Namespace"
NOT_SYNCED = ("kustodian's caches have not synced yet, so the dependents of this object are "
              "unknown; refusing to delete it for now (retry in a few seconds)")


def needed_kinds(rules: RuleSet) -> dict[str, dict[str, Indexer]]:
    """Every kind the guard reads, with the indexers the rules declare."""
    kinds: dict[str, dict[str, Indexer]] = {k: {} for k in rules.provider_kinds() | rules.dependent_kinds()}
    kinds.setdefault("CephCluster.ceph.rook.io", {})  # cleanupPolicy.allowUninstallWithVolumes
    for kind, named in rules.indexers().items():
        kinds.setdefault(kind, {}).update(named)
    return kinds


class DeletionGuard:
    def __init__(self, rules: RuleSet, view: CacheView, recorder: EventRecorder | None) -> None:
        self.rules = rules
        self.view = view
        self.recorder = recorder

    def register(self, registry: Registry) -> None:
        for kind in sorted(self.rules.provider_kinds()):
            registry.validate(kind, ["DELETE"], self.on_delete)
        registry.validate(NAMESPACE, ["DELETE"], self.on_namespace_delete)

    def _event(self, req: AdmissionRequest, obj: Mapping[str, Any], reason: str, message: str) -> None:
        if req.dry_run or self.recorder is None:
            return
        self.recorder.record(obj, "Warning", reason, message)

    def on_delete(self, req: AdmissionRequest) -> Answer:
        if not self.view.synced():
            return denied(NOT_SYNCED, code=503, reason="ServiceUnavailable")
        provider = req.subject or self.view.get(req.kind_key, req.namespace, req.name)
        if provider is None:
            # oldObject is null (old API servers) and the synced cache does not know the
            # object: it does not exist, and the API server will answer 404 itself.
            return allowed()
        decision = decide_delete(req.kind_key, provider, self.view, self.rules)
        if not decision.allowed:
            self._event(req, provider, "DeletionBlocked", decision.message)
            return denied(decision.message)
        if decision.overridden:
            who = req.user_info.username or "an unknown user"
            # the decision already says "is being deleted despite its dependents": add only who
            note = f"{decision.message} (by {who})"
            log.warning("%s %s/%s: %s", req.kind_key, req.namespace, req.name, note,
                        extra={**about(req.kind_key, req.namespace, req.name), "user": who})
            self._event(req, provider, "DeletionOverridden", note)
            return allowed(warnings=(f"kustodian: {note}",))
        return allowed()

    def on_namespace_delete(self, req: AdmissionRequest) -> Answer:
        if not self.view.synced():
            return denied(NOT_SYNCED, code=503, reason="ServiceUnavailable")
        decision = decide_namespace_delete(req.name, self.view, self.rules)
        if not decision.allowed:
            ns_obj = req.subject or {"apiVersion": "v1", "kind": NAMESPACE, "metadata": {"name": req.name}}
            self._event(req, ns_obj, "DeletionBlocked", decision.message)
            return denied(decision.message)
        return allowed()
