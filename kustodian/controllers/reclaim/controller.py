"""Reclaim-space propagation: every existing PVC follows its policy when a source changes.

The seed's "handle existing PVCs" and "handle annotation modification": watch
StorageClasses, Namespaces, the central ConfigMap and PVCs, and bring each PVC's
annotations in line with ``policy.reclaim``'s decision.  Level-based: a PVC key is
reconciled from the caches whatever woke it up, so missed or repeated events are
harmless.  Only PVCs whose marker says Kustodian wrote the schedule (or that have
none) are changed; the decision carries the resourceVersion it was computed from,
so a user's concurrent edit yields 409, and the retry re-reads and sees it.

csi-addons runs beside it and writes the same PVC annotation (see
``policy.reclaim.annotations``): its configuration (``csi-addons-config``: precedence,
read from csi-addons' own namespace), the PVs (each PVC's CSI driver) and the
CSIAddonsNodes (which drivers advertise ReclaimSpace) are cached as well, so every
decision is the one csi-addons' own rules lead to.  Without the CSIAddonsNode CRD there
is no csi-addons and no driver counts as capable.

Each pass is gather -> decide -> act: :func:`~controllers.reclaim.gather.gather` fills one
frozen ``ReclaimPropagationInput`` from the caches, ``decide_reclaim_propagation`` (pure)
returns the annotation change, and the PVC is patched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from kustodian.controllers.reclaim.gather import (
    ReclaimCacheSource,
    ReclaimFreshClaimSource,
    ReclaimSource,
    gather,
)
from kustodian.kube.cache import NAMESPACE_INDEX, CacheFactory, StandaloneCaches, WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.discovery import resolve
from kustodian.kube.errors import Conflict, NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import (
    CONFIG_MAPS,
    NAMESPACES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
)
from kustodian.policy.objects import field
from kustodian.policy.reclaim.annotations import ENABLE, SCHEDULE
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.inputs import ReclaimPropagationInput, decide_reclaim_propagation
from kustodian.policy.reclaim.keyrotation import KEYROTATION_KEYS
from kustodian.policy.reclaim.propagation import INDEXERS
from kustodian.policy.reclaim.tracker import LastGoodConfig
from kustodian.policy.reclaim.upstream import (
    CSI_ADDONS_CONFIG,
    CsiAddonsConfig,
    CsiAddonsConfigTracker,
)
from kustodian.runtime import Manager
from kustodian.settings import ReclaimGroup

log = logging.getLogger(__name__)

Enqueue = Callable[[str], None]
_POLICY_KEYS = (SCHEDULE, ENABLE, KEYROTATION_KEYS[SCHEDULE], KEYROTATION_KEYS[ENABLE])
_BY_SC = "storageclass"
CSI_ADDONS_NODE = "CSIAddonsNode.csiaddons.openshift.io"


def _policy(obj: Mapping[str, Any] | None) -> tuple[Any, ...]:
    ann = field(obj, "metadata", "annotations")
    ann = ann if isinstance(ann, Mapping) else {}
    return tuple(ann.get(k) for k in _POLICY_KEYS)


class ReclaimPropagation:
    """A reconciler for the Manager: PVC keys, resynced from ``primary`` (the PVC cache)."""

    name = "reclaim-space"

    def __init__(self, client: KubeClient, *, config_namespace: str, config_name: str,
                 recorder: EventRecorder | None = None, caches: CacheFactory | None = None,
                 csi_addons_config: tuple[str, str] | None = CSI_ADDONS_CONFIG,
                 keyrotation: bool = False) -> None:
        self.client = client
        self.keyrotation = keyrotation  # the same machinery for keyrotation.csiaddons.openshift.io (opt-in)
        self.recorder = recorder
        self.config_ref = (config_namespace, config_name)
        cache = caches if caches is not None else StandaloneCaches(client)
        self.pvcs = cache(PERSISTENT_VOLUME_CLAIMS, indexers=dict(INDEXERS["PersistentVolumeClaim"]))
        self.primary = self.pvcs
        self.namespaces = cache(NAMESPACES)
        self.storageclasses = cache(STORAGE_CLASSES)
        self.configmaps = cache(CONFIG_MAPS, namespace=config_namespace,
                                field_selector=f"metadata.name={config_name}")
        self.tracker = LastGoodConfig()
        self.csi_addons_ref = csi_addons_config
        # not read at all when not granted (csi-addons' defaults, as csi-addons without its ConfigMap)
        self.csi_addons_configmaps = None if csi_addons_config is None else cache(
            CONFIG_MAPS, namespace=csi_addons_config[0],
            field_selector=f"metadata.name={csi_addons_config[1]}")
        if csi_addons_config is None:
            log.info("csi-addons' ConfigMap is not read (--reclaim-csi-addons-config is empty): csi-addons' "
                     "defaults apply (schedule-precedence %s)", CsiAddonsConfig().precedence)
        self.pvs = cache(PERSISTENT_VOLUMES)  # shared with node cleanup under one Manager
        node_res = resolve(client, [CSI_ADDONS_NODE]).get(CSI_ADDONS_NODE)
        self.csi_addons_nodes = cache(node_res) if node_res is not None else None
        self._csi_addons = CsiAddonsConfigTracker()
        self.cached = ReclaimCacheSource(pvcs=self.pvcs, namespaces=self.namespaces,
                                         storageclasses=self.storageclasses, pvs=self.pvs,
                                         csi_addons_nodes=self.csi_addons_nodes)
        self.fresh_claim = ReclaimFreshClaimSource(self.cached, client)
        self.writes = 0
        self.conflicts = 0

    @property
    def caches(self) -> list[WatchCache]:
        extra = [c for c in (self.csi_addons_configmaps, self.csi_addons_nodes) if c is not None]
        return [self.pvcs, self.namespaces, self.storageclasses, self.configmaps, self.pvs, *extra]

    def csi_addons_config(self) -> CsiAddonsConfig:
        """csi-addons' configuration as it will run it; the last good one if csi-addons would refuse it."""
        ref, cache = self.csi_addons_ref, self.csi_addons_configmaps
        error = self._csi_addons.update(cache.get(*ref) if cache is not None and ref is not None else None)
        if error is not None and ref is not None:
            log.error("csi-addons ConfigMap %s/%s would stop csi-addons from starting: %s", *ref, error)
        return self._csi_addons.in_force

    def wire(self, enqueue: Enqueue) -> None:
        """Turn watch events into PVC keys to reconcile."""

        def on_pvc(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            if new is not None:
                enqueue(_key(new))

        def on_sc(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            obj = new or old
            if obj is None or (etype == "MODIFIED" and _policy(new) == _policy(old)):
                return
            for pvc in self.pvcs.by_index(_BY_SC, str(field(obj, "metadata", "name"))):
                enqueue(_key(pvc))

        def on_ns(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            obj = new or old
            if obj is None or (etype == "MODIFIED" and _policy(new) == _policy(old)):
                return
            for pvc in self.pvcs.by_index(NAMESPACE_INDEX, str(field(obj, "metadata", "name"))):
                enqueue(_key(pvc))

        def on_config(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            update = self._config_update()
            if update:
                for pvc in self.pvcs.list():
                    enqueue(_key(pvc))

        def on_everything(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            for pvc in self.pvcs.list():
                enqueue(_key(pvc))

        def on_pv(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            obj = new or old
            ref = field(obj, "spec", "claimRef")
            if isinstance(ref, Mapping) and ref.get("namespace") and ref.get("name"):
                enqueue(f"{ref['namespace']}/{ref['name']}")

        if self.csi_addons_configmaps is not None:
            self.csi_addons_configmaps.add_handler(on_everything)
        if self.csi_addons_nodes is not None:
            self.csi_addons_nodes.add_handler(on_everything)
        self.pvs.add_handler(on_pv)
        self.pvcs.add_handler(on_pvc)
        self.storageclasses.add_handler(on_sc)
        self.namespaces.add_handler(on_ns)
        self.configmaps.add_handler(on_config)

    def after_sync(self) -> None:
        self.refresh_config()

    def refresh_config(self) -> bool:
        """Take the ConfigMap into account now (after the caches synced, before any reconcile)."""
        return self._config_update()

    def _config_update(self) -> bool:
        cm = self.configmaps.get(*self.config_ref)
        update = self.tracker.update(cm)
        if update.problems and cm is not None:
            message = "; ".join(update.problems)
            log.error("reclaim-space ConfigMap %s/%s is invalid, keeping the last good configuration: %s",
                      *self.config_ref, message)
            if self.recorder is not None:
                self.recorder.record(cm, "Warning", "InvalidConfig",
                                     f"ignored, the last good configuration stays in force: {message}")
        return update.changed

    def config(self) -> ReclaimConfig:
        """Kustodian's configuration in force, with the precedence csi-addons runs with."""
        return replace(self.tracker.in_force, precedence=self.csi_addons_config().precedence)

    def gather(self, source: ReclaimSource, key: str) -> ReclaimPropagationInput | None:
        return gather(source, key, self.config(), keyrotation=self.keyrotation)

    def reconcile(self, key: str) -> None:
        """One PVC: gather (caches), decide (``decide_reclaim_propagation``), patch.

        A 409 means the PVC changed under us (its user, perhaps): it is gathered again with
        the PVC read from the API server and the same decision runs on that; three 409s in
        a row propagate and the work queue retries with backoff.
        """
        namespace, _, name = key.partition("/")
        observed = self.gather(self.cached, key)
        if observed is None:
            return
        change = decide_reclaim_propagation(observed)
        for attempt in range(3):
            if change is None:
                return
            try:
                self.client.patch(PERSISTENT_VOLUME_CLAIMS, name, change.merge_patch(), namespace)
                self.writes += 1
                log.info("PVC %s: %s", key, change.reason,
                         extra={"kind": "PersistentVolumeClaim", "namespace": namespace, "object": name})
                return
            except NotFound:
                return
            except Conflict:  # someone (the user?) changed it: decide again on a fresh read
                self.conflicts += 1
                log.debug("PVC %s changed under us (attempt %d); re-reading", key, attempt + 1)
                observed = self.gather(self.fresh_claim, key)
                if observed is None:
                    return
                change = decide_reclaim_propagation(observed)
        raise Conflict(409, "Conflict", f"PVC {key} kept changing; will retry")


def _key(obj: Mapping[str, Any]) -> str:
    return f"{field(obj, 'metadata', 'namespace')}/{field(obj, 'metadata', 'name')}"


def install(manager: Manager, settings: ReclaimGroup, *, namespace: str,
            recorder: EventRecorder | None = None) -> ReclaimPropagation:
    """Reclaim-space propagation on ``manager``, its caches shared with the other controllers."""
    client = manager.client
    assert client is not None, "reclaim propagation writes through the API server"
    reclaim = ReclaimPropagation(client, config_namespace=namespace, config_name=settings.config_name,
                                 recorder=recorder, caches=manager.cache,
                                 csi_addons_config=settings.csi_addons_config_ref,
                                 keyrotation=settings.keyrotation)
    manager.add(reclaim)
    return reclaim
