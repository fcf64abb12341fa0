"""The one place reclaim propagation reads: :func:`gather` fills a ``ReclaimPropagationInput``.

Two sources answer the same questions (this PVC, its Namespace, StorageClass and PV, the
CSIAddonsNodes): :class:`ReclaimCacheSource` from the watch caches, for every pass, and
:class:`ReclaimFreshClaimSource`, after a 409 on the patch: the PVC read from the API
server again (someone, perhaps its user, changed it), the rest from the caches (a change
to a StorageClass or Namespace enqueues the PVC again by itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import PERSISTENT_VOLUME_CLAIMS
from kustodian.policy.objects import field
from kustodian.policy.reclaim.config import ReclaimConfig
from kustodian.policy.reclaim.inputs import ReclaimPropagationInput
from kustodian.policy.reclaim.precedence import storage_class_name

Obj = dict[str, Any]


class ReclaimSource(Protocol):
    def claim(self, namespace: str, name: str) -> Obj | None: ...

    def namespace(self, name: str) -> Obj | None: ...

    def storage_class(self, name: str) -> Obj | None: ...

    def volume(self, name: str) -> Obj | None: ...

    def csi_addons_nodes(self) -> Sequence[Obj]:
        """Every CSIAddonsNode (none without csi-addons' CRD)."""
        ...


class ReclaimCacheSource:
    """The watch caches."""

    def __init__(self, *, pvcs: WatchCache, namespaces: WatchCache, storageclasses: WatchCache,
                 pvs: WatchCache, csi_addons_nodes: WatchCache | None) -> None:
        self._pvcs, self._namespaces, self._storageclasses = pvcs, namespaces, storageclasses
        self._pvs, self._csi_addons_nodes = pvs, csi_addons_nodes

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self._pvcs.get(namespace, name)

    def namespace(self, name: str) -> Obj | None:
        return self._namespaces.get(None, name)

    def storage_class(self, name: str) -> Obj | None:
        return self._storageclasses.get(None, name)

    def volume(self, name: str) -> Obj | None:
        return self._pvs.get(None, name)

    def csi_addons_nodes(self) -> Sequence[Obj]:
        return self._csi_addons_nodes.list() if self._csi_addons_nodes is not None else []


class ReclaimFreshClaimSource:
    """The PVC from the API server, everything else from ``cached``."""

    def __init__(self, cached: ReclaimSource, client: KubeClient) -> None:
        self._cached = cached
        self._client = client

    def claim(self, namespace: str, name: str) -> Obj | None:
        try:
            return self._client.get(PERSISTENT_VOLUME_CLAIMS, name, namespace)
        except NotFound:
            return None

    def namespace(self, name: str) -> Obj | None:
        return self._cached.namespace(name)

    def storage_class(self, name: str) -> Obj | None:
        return self._cached.storage_class(name)

    def volume(self, name: str) -> Obj | None:
        return self._cached.volume(name)

    def csi_addons_nodes(self) -> Sequence[Obj]:
        return self._cached.csi_addons_nodes()


def gather(source: ReclaimSource, key: str, config: ReclaimConfig, *,
           keyrotation: bool = False) -> ReclaimPropagationInput | None:
    """Everything one decision about PVC ``key`` (``namespace/name``) reads; ``None``: no such PVC."""
    namespace, _, name = key.partition("/")
    pvc = source.claim(namespace, name)
    if pvc is None:
        return None
    sc_name = storage_class_name(pvc)
    volume = field(pvc, "spec", "volumeName")
    return ReclaimPropagationInput(
        claim=pvc,
        namespace=source.namespace(str(field(pvc, "metadata", "namespace"))),
        storage_class=source.storage_class(sc_name) if sc_name else None,
        volume=source.volume(str(volume)) if volume else None,
        csi_addons_nodes=tuple(source.csi_addons_nodes()),
        config=config,
        keyrotation=keyrotation,
    )
