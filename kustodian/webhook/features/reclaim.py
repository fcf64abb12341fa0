"""Reclaim-space policy at admission: inject schedules on PVC CREATE, refuse bad ones.

Kustodian sets the policy, csi-addons executes it; the keys are csi-addons' own.
The mutator reads the PVC's Namespace, StorageClass and the central ConfigMap from
watch caches (never the API server) and asks ``policy.reclaim`` for the minimal
patch.  The validator refuses a StorageClass, Namespace, PVC or ConfigMap whose
schedule does not parse, but only when the request *changes* that schedule: an
object that already carries a bad value (from before Kustodian) must still be
updatable, or finalizer removal and deletion would wedge.

A ConfigMap that got in while the webhook was down and does not parse is reported
(log + Warning event, once per resourceVersion) and the last good configuration
stays in force.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import CONFIG_MAPS
from kustodian.kube.view import CacheView
from kustodian.policy.objects import field
from kustodian.policy.reclaim.annotations import ENABLE, SCHEDULE
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.mutation import mutate_on_create
from kustodian.policy.reclaim.precedence import storage_class_name
from kustodian.policy.reclaim.tracker import LastGoodConfig
from kustodian.policy.reclaim.validation import (
    KIND_CONFIGMAP,
    KIND_NAMESPACE,
    KIND_PVC,
    KIND_STORAGECLASS,
    validate_object,
)
from kustodian.policy.store import Indexer
from kustodian.webhook.registry import Registry
from kustodian.webhook.review import AdmissionRequest, Answer, allowed, denied, patched

log = logging.getLogger(__name__)

_POLICY_KEYS = (SCHEDULE, ENABLE)


def _policy_annotations(obj: Any) -> tuple[Any, ...]:
    ann = field(obj, "metadata", "annotations")
    ann = ann if isinstance(ann, Mapping) else {}
    return tuple(ann.get(k) for k in _POLICY_KEYS)


class ReclaimPolicyWebhook:
    def __init__(self, namespace: str, config_name: str, recorder: EventRecorder | None = None) -> None:
        self.config_ref = (namespace, config_name)
        self.recorder = recorder
        self.view: CacheView | None = None
        self._config_cache: WatchCache | None = None
        self._lock = threading.Lock()
        self._tracker = LastGoodConfig()

    def needed_kinds(self) -> dict[str, dict[str, Indexer]]:
        return {KIND_NAMESPACE: {}, KIND_STORAGECLASS: {}}

    def config_cache(self, client: KubeClient) -> WatchCache:
        """A cache of just the central ConfigMap (a field selector, not every ConfigMap)."""
        ns, name = self.config_ref
        self._config_cache = WatchCache(client, CONFIG_MAPS, namespace=ns,
                                        field_selector=f"metadata.name={name}")
        return self._config_cache

    def register(self, registry: Registry, view: CacheView) -> None:
        self.view = view
        registry.mutate(KIND_PVC, ["CREATE"], self.on_pvc_create)
        for kind in (KIND_STORAGECLASS, KIND_NAMESPACE, KIND_PVC, KIND_CONFIGMAP):
            registry.validate(kind, ["CREATE", "UPDATE"], self.on_change)

    # -- configuration ------------------------------------------------------------------------

    def current_config(self) -> ReclaimConfig:
        cache = self._config_cache
        if cache is None:
            return self._tracker.in_force
        cm = cache.get(*self.config_ref)
        with self._lock:
            update = self._tracker.update(cm)
        if update.problems and cm is not None:
            ns, name = self.config_ref
            message = "; ".join(update.problems)
            log.error("reclaim-space ConfigMap %s/%s is invalid, keeping the last good configuration: %s",
                      ns, name, message)
            if self.recorder is not None:
                self.recorder.record(cm, "Warning", "InvalidConfig",
                                     f"ignored, the last good configuration stays in force: {message}")
        return update.config

    # -- handlers -----------------------------------------------------------------------------

    def on_pvc_create(self, req: AdmissionRequest) -> Answer:
        pvc = req.object
        if not isinstance(pvc, dict) or self.view is None:
            return allowed()
        meta = pvc.get("metadata")
        if not isinstance(meta, dict) or not meta.get("namespace"):
            base = meta if isinstance(meta, dict) else {}
            pvc = {**pvc, "metadata": {**base, "namespace": req.namespace}}
        ns_obj = self.view.get(KIND_NAMESPACE, "", req.namespace)
        sc_name = storage_class_name(pvc)
        sc_obj = self.view.get(KIND_STORAGECLASS, "", sc_name) if sc_name else None
        ops = mutate_on_create(pvc, ns_obj, sc_obj, self.current_config())
        if ops:
            log.debug("PVC %s/%s: reclaim-space schedule injected", req.namespace, req.name)
        return patched(ops)

    def on_change(self, req: AdmissionRequest) -> Answer:
        obj = req.object
        if not isinstance(obj, dict):
            return allowed()
        if req.kind_key == KIND_CONFIGMAP:
            if (req.namespace, req.name or field(obj, "metadata", "name")) != self.config_ref:
                return allowed()
            if req.operation == "UPDATE" and field(req.old_object, "data") == field(obj, "data"):
                return allowed()
        elif req.operation == "UPDATE" and _policy_annotations(req.old_object) == _policy_annotations(obj):
            return allowed()  # the schedule did not change: never block unrelated updates
        if req.kind_key == KIND_CONFIGMAP and not field(obj, "metadata", "namespace"):
            obj = {**obj, "metadata": {**obj.get("metadata", {}), "namespace": req.namespace}}
        errors = validate_object(req.kind_key, obj, config_map=self.config_ref)
        if errors:
            return denied("; ".join(errors), code=422, reason="Invalid")
        return allowed()
