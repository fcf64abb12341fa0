"""Reclaim-space policy at admission: inject schedules on PVC CREATE, refuse bad ones.

Kustodian sets the policy, csi-addons executes it; the keys are csi-addons' own.
The mutator reads the PVC's Namespace, StorageClass and the central ConfigMap from
watch caches (never the API server) and asks ``policy.reclaim`` for the minimal
patch.  The validator refuses a StorageClass, Namespace, PVC or ConfigMap whose
schedule does not parse, but only when the request *changes* that schedule: an
object that already carries a bad value (from before Kustodian) must still be
updatable, or finalizer removal and deletion would wedge.

Validation never blocks csi-addons, which writes the same schedule annotation on PVCs:
requests from its service account (``reclaim_csi_addons_users``) are never refused, an
UPDATE is judged only on the policy annotations it *changes* (a pre-existing value,
valid or not, never wedges an unrelated update), and the language accepted is exactly
robfig's (``policy.reclaim.schedule``).  Values robfig accepts that are probably
mistakes get an admission warning instead.  Injection follows csi-addons' own rules:
its ``schedule-precedence`` (from ``csi-addons-config``) and, for a Namespace schedule,
whether the PVC's driver (its StorageClass's provisioner: a new PVC is not bound yet)
has a CSIAddonsNode advertising ReclaimSpace.

A ConfigMap that got in while the webhook was down and does not parse is reported
(log + Warning event, once per resourceVersion) and the last good configuration
stays in force.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from kustodian.kube.cache import CacheFactory, WatchCache
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import CONFIG_MAPS
from kustodian.kube.view import CacheView
from kustodian.policy.modes import Mode
from kustodian.policy.objects import RawObject, field, map_field
from kustodian.policy.reclaim.annotations import ENABLE, SCHEDULE
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.keyrotation import reconcile_keyrotation
from kustodian.policy.reclaim.mutation import patch_ops
from kustodian.policy.reclaim.precedence import storage_class_name
from kustodian.policy.reclaim.propagation import merge_changes, reconcile_annotations
from kustodian.policy.reclaim.schedule import schedule_warning
from kustodian.policy.reclaim.tracker import LastGoodConfig
from kustodian.policy.reclaim.upstream import (
    CSI_ADDONS_CONFIG,
    KEYROTATION,
    CsiAddonsConfig,
    CsiAddonsConfigTracker,
    driver_capable,
    pvc_driver,
)
from kustodian.policy.reclaim.validation import (
    KIND_CONFIGMAP,
    KIND_NAMESPACE,
    KIND_PVC,
    KIND_STORAGECLASS,
    validate_object,
)
from kustodian.policy.store import Indexer
from kustodian.webhook.outcomes import Outcomes, judged
from kustodian.webhook.registry import Registry
from kustodian.webhook.review import AdmissionRequest, Answer, allowed, patched

log = logging.getLogger(__name__)

_POLICY_KEYS = (SCHEDULE, ENABLE)
CSI_ADDONS_NODE = "CSIAddonsNode.csiaddons.openshift.io"
DEFAULT_CSI_ADDONS_USERS = ("system:serviceaccount:csi-addons-system:csi-addons-controller-manager",)


def _policy_annotations(obj: Any) -> tuple[Any, ...]:
    ann = field(obj, "metadata", "annotations")
    ann = ann if isinstance(ann, Mapping) else {}
    return tuple(ann.get(k) for k in _POLICY_KEYS)


class ReclaimPolicyWebhook:
    # enforcement mode of the schedule/config validator (issue 20); set by the webhook's wiring
    mode: Mode = Mode.ENFORCE
    outcomes: Outcomes | None = None
    # told when warn or audit mode stores a policy that does not validate (the policy report
    # writer's ``poke``, a flag set; never an API call on the request path)
    on_stored_invalid: Callable[[], None] | None = None

    def __init__(self, namespace: str, config_name: str, recorder: EventRecorder | None = None, *,
                 csi_addons_config: tuple[str, str] | None = CSI_ADDONS_CONFIG,
                 csi_addons_users: tuple[str, ...] = DEFAULT_CSI_ADDONS_USERS,
                 keyrotation: bool = False) -> None:
        self.keyrotation = keyrotation
        self.config_ref = (namespace, config_name)
        self.csi_addons_ref = csi_addons_config
        self.csi_addons_users = frozenset(csi_addons_users)
        self._csi_addons_cache: WatchCache | None = None
        self._csi_addons = CsiAddonsConfigTracker()
        self.recorder = recorder
        self.view: CacheView | None = None
        self._config_cache: WatchCache | None = None
        self._lock = threading.Lock()
        self._tracker = LastGoodConfig()

    def needed_kinds(self) -> dict[str, dict[str, Indexer]]:
        return {KIND_NAMESPACE: {}, KIND_STORAGECLASS: {}, CSI_ADDONS_NODE: {}}

    def config_cache(self, caches: CacheFactory) -> WatchCache:
        """A cache of just the central ConfigMap (a field selector, not every ConfigMap)."""
        ns, name = self.config_ref
        self._config_cache = caches(CONFIG_MAPS, namespace=ns, field_selector=f"metadata.name={name}")
        return self._config_cache

    def config_caches(self, caches: CacheFactory) -> dict[str, WatchCache]:
        """Kustodian's ConfigMap (one object), from ``caches`` (the process's Manager): its cache gates
        readiness like every other."""
        return {"ConfigMap#reclaim-config": self.config_cache(caches)}

    def csi_addons_cache(self, caches: CacheFactory) -> WatchCache | None:
        """csi-addons' own ``csi-addons-config`` (one object), None when it is not to be read.

        The convenience path: it never gates readiness. Until it is read (no access granted,
        csi-addons not installed) csi-addons' defaults are in force, as in csi-addons without its
        ConfigMap; ``csi_addons_status`` says which (a /readyz note), the cache logs why."""
        if self.csi_addons_ref is None:
            log.info("csi-addons' ConfigMap is not read (--reclaim-csi-addons-config is empty): csi-addons' "
                     "defaults apply (schedule-precedence %s)", CsiAddonsConfig().precedence)
            return None
        ns, name = self.csi_addons_ref
        self._csi_addons_cache = caches(CONFIG_MAPS, namespace=ns, field_selector=f"metadata.name={name}",
                                        waited=False)
        return self._csi_addons_cache

    def stored_config(self) -> tuple[bool, RawObject | None]:
        """Whether the central ConfigMap's cache is current, and the ConfigMap as cached (None: none)."""
        cache = self._config_cache
        if cache is None:
            return True, None
        return cache.fresh, cache.get(*self.config_ref)

    def csi_addons_config(self) -> CsiAddonsConfig:
        cache, ref = self._csi_addons_cache, self.csi_addons_ref
        cm = cache.get(*ref) if cache is not None and ref is not None else None
        with self._lock:
            error = self._csi_addons.update(cm)
            if error is not None and ref is not None:
                log.error("csi-addons ConfigMap %s/%s would stop csi-addons from starting: %s", *ref, error)
            return self._csi_addons.in_force

    def csi_addons_settled(self) -> str | None:
        """A readiness check: None once the ConfigMap was read, or could not be (an error: csi-addons'
        defaults, said in the note); only its first list still in flight holds a replica back, so a
        PVC is not given a schedule by a precedence that is about to change."""
        cache = self._csi_addons_cache
        if cache is None or cache.synced.is_set() or cache.last_error:
            return None
        return "listing csi-addons' ConfigMap"

    def csi_addons_status(self) -> str:
        """Where the csi-addons configuration in force comes from, one line (a /readyz note)."""
        cache, ref = self._csi_addons_cache, self.csi_addons_ref
        precedence = self.csi_addons_config().precedence
        if ref is None or cache is None:
            return ("not read (no --reclaim-csi-addons-config): csi-addons' defaults, "
                    f"schedule-precedence {precedence}")
        where = "/".join(ref)
        if not cache.synced.is_set():
            return (f"{where} not read yet ({cache.last_error or 'listing'}): csi-addons' defaults, "
                    f"schedule-precedence {precedence}")
        if cache.get(*ref) is None:
            return f"{where} absent: csi-addons' defaults, schedule-precedence {precedence}"
        return f"{where}: schedule-precedence {precedence}"

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
        nodes = self.view.list(CSI_ADDONS_NODE)
        driver = pvc_driver(None, sc_obj)
        config = replace(self.current_config(), precedence=self.csi_addons_config().precedence)
        change = reconcile_annotations(pvc, ns_obj, sc_obj, config, capable=driver_capable(driver, nodes))
        if self.keyrotation:
            change = merge_changes(change, reconcile_keyrotation(
                pvc, ns_obj, sc_obj, precedence=config.precedence,
                capable=driver_capable(driver, nodes, KEYROTATION)))
        ops = patch_ops(pvc, change)
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
        else:
            if req.user_info.username in self.csi_addons_users:
                return allowed()  # csi-addons writing back the schedule it runs: never block it
            if req.operation == "UPDATE":
                if _policy_annotations(req.old_object) == _policy_annotations(obj):
                    return allowed()  # the schedule did not change: never block unrelated updates
                obj = _only_changed_policy(req.old_object, obj)
        if req.kind_key == KIND_CONFIGMAP:  # judged as the object the request names (metadata may be null)
            obj = {**obj, "metadata": {**map_field(obj, "metadata"), "namespace": req.namespace,
                                       "name": req.name or field(obj, "metadata", "name")}}
        errors = validate_object(req.kind_key, obj, config_map=self.config_ref)
        if errors:
            where = f"{req.namespace}/{req.name}" if req.namespace else req.name
            answer = judged("reclaim-validation", req.kind_key, self.mode, "; ".join(errors), self.outcomes,
                            subject=f"{req.kind_key.partition('.')[0]} {where}", code=422, reason="Invalid")
            if answer.allowed and not req.dry_run and self.on_stored_invalid is not None:
                self.on_stored_invalid()
            return answer
        value = field(obj, "metadata", "annotations", SCHEDULE) if req.kind_key != KIND_CONFIGMAP else None
        warning = schedule_warning(value) if isinstance(value, str) else None
        if warning:
            return allowed(warnings=(f"{SCHEDULE}: {value!r} is accepted (csi-addons runs it as robfig/cron "
                                     f"reads it) but looks wrong: {warning}",))
        return allowed()


def _only_changed_policy(old: Any, new: dict[str, Any]) -> dict[str, Any]:
    """``new`` keeping only the policy annotations whose value differs from ``old`` (what it changes)."""
    old_ann = field(old, "metadata", "annotations")
    old_ann = old_ann if isinstance(old_ann, Mapping) else {}
    new_ann = field(new, "metadata", "annotations")
    new_ann = new_ann if isinstance(new_ann, Mapping) else {}
    kept = {k: v for k, v in new_ann.items() if k not in _POLICY_KEYS or old_ann.get(k) != v}
    return {**new, "metadata": {**map_field(new, "metadata"), "annotations": kept}}
