"""The reclaim-space MutatingAdmissionPolicy's params: one ReclaimSpaceParams object, kept current.

On Kubernetes >= 1.36 the chart can give a new PVC its schedule with a MutatingAdmissionPolicy
(``reclaimSpace.mutation``); its CEL reads the PVC, its Namespace and one params object, nothing
else. This reconciler writes that object from the caches propagation already holds (StorageClasses,
Namespaces, the central ConfigMap, csi-addons' ConfigMap and CSIAddonsNodes): gather (the caches),
decide (``policy.reclaim.mutation_params``, pure), act (one PUT, only when the spec changed). It
has a single key; every change of a source enqueues it, so a burst of changes is one write.

The object is convenience data: while it is missing (before the first write) the policy is
skipped (``parameterNotFoundAction: Allow``) and PVCs are left to the webhook or the controllers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from kustodian.controllers.reclaim.controller import ReclaimPropagation
from kustodian.kube.client import KubeClient
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import Resource
from kustodian.policy.reclaim.mutation_params import mutation_params
from kustodian.runtime import Manager

log = logging.getLogger(__name__)

__all__ = ["RECLAIM_SPACE_PARAMS", "ReclaimMutationParams", "install"]

RECLAIM_SPACE_PARAMS = Resource("kustodian.io", "v1alpha1", "reclaimspaceparams", "ReclaimSpaceParams", True)
_KEY = "params"
Enqueue = Callable[[str], None]


class ReclaimMutationParams:
    """A reconciler for the Manager: the one key ``params``, written into ``namespace/name``."""

    name = "reclaim-space-params"

    def __init__(self, client: KubeClient, propagation: ReclaimPropagation, *, namespace: str,
                 name: str) -> None:
        self.client = client
        self.propagation = propagation
        self.ref = (namespace, name)
        self.written: Mapping[str, Any] | None = None  # the spec last written (or read back)
        self.writes = 0

    def wire(self, enqueue: Enqueue) -> None:
        def on_change(etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
            enqueue(_KEY)

        p = self.propagation
        sources = (p.storageclasses, p.namespaces, p.configmaps, p.csi_addons_configmaps, p.csi_addons_nodes)
        for cache in sources:
            if cache is not None:
                cache.add_handler(on_change)

    def resync(self, enqueue: Enqueue) -> None:
        self.written = None  # read the stored object again: an edit by hand is overwritten
        enqueue(_KEY)

    def after_sync(self) -> None:
        self.written = None  # read what is stored on the first pass

    def spec(self) -> dict[str, Any]:
        """The spec the sources call for now (from the caches; no API call)."""
        p = self.propagation
        nodes = p.csi_addons_nodes.list() if p.csi_addons_nodes is not None else []
        decided = mutation_params(p.storageclasses.list(), p.namespaces.list(), p.config(), nodes)
        if decided.omitted:
            log.warning("reclaim-space policy params: %d entries left out to stay under the size limit "
                        "(their PVCs get their schedule from the controllers)", decided.omitted)
        return dict(decided.spec)

    def reconcile(self, key: str) -> None:
        spec = self.spec()
        if spec == self.written:
            return
        namespace, name = self.ref
        res = RECLAIM_SPACE_PARAMS
        body: dict[str, Any] = {"apiVersion": res.api_version, "kind": res.kind,
                                "metadata": {"name": name, "namespace": namespace}, "spec": spec}
        try:
            stored = self.client.get(RECLAIM_SPACE_PARAMS, name, namespace)
        except NotFound:
            self.client.create(RECLAIM_SPACE_PARAMS, body, namespace)
        else:
            if stored.get("spec") != spec:
                body["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
                self.client.replace(RECLAIM_SPACE_PARAMS, body)  # a 409 is retried by the work queue
            else:
                self.written = spec
                return
        self.written = spec
        self.writes += 1
        log.info("reclaim-space policy params %s/%s written (%d StorageClasses, %d Namespaces)",
                 namespace, name, len(spec["storageClasses"]), len(spec["namespaces"]))


def install(manager: Manager, propagation: ReclaimPropagation, *, namespace: str,
            name: str) -> ReclaimMutationParams:
    """The params writer on ``manager``, reading ``propagation``'s caches and configuration."""
    client = manager.client
    assert client is not None, "the params writer writes through the API server"
    writer = ReclaimMutationParams(client, propagation, namespace=namespace, name=name)
    manager.add(writer)
    return writer
