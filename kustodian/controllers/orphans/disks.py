"""What this node remembers about its disks: recorded UUIDs and the last disk status.

A disk configured without a UUID is trusted with the UUID found on it the first time
(``longhorn-disk.cfg``), and only with that one afterwards: another disk mounted at
the same path later, or the mount missing so the path shows the root filesystem,
must not be scanned as if it were the same disk.  That first UUID has to survive a
restart of the agent, so it is kept in the ConfigMap ``kustodian-disks-<node>`` in
Kustodian's namespace (``data["uuids.json"]``: path -> UUID), written with a
resourceVersion precondition and never overwritten.  A UUID that could not be
recorded is not used: the disk is skipped until it is.

The same ConfigMap carries each disk's ``Ready`` condition (``data["status.json"]``),
so ``kubectl get cm kustodian-disks-<node> -o yaml`` shows why a disk is skipped,
and it is the object the disk Warning events are about.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from kustodian.kube.client import KubeClient, Obj, retry_on_conflict
from kustodian.kube.errors import AlreadyExists, NotFound
from kustodian.kube.resources import CONFIG_MAPS
from kustodian.settings import DiskSpec

log = logging.getLogger(__name__)

CONFIG_MAP_PREFIX = "kustodian-disks-"
UUIDS_KEY = "uuids.json"
STATUS_KEY = "status.json"
OWNERSHIP_KEY = "ownership.json"
HEARTBEAT_KEY = "heartbeat.json"  # the agent's heartbeat (controllers.orphans.heartbeat)
CONDITION_READY = "Ready"


def config_map_name(node: str) -> str:
    return f"{CONFIG_MAP_PREFIX}{node}"


def _uuids_of(cm: Mapping[str, Any]) -> dict[str, str]:
    raw = (cm.get("data") or {}).get(UUIDS_KEY) or "{}"
    try:
        doc = json.loads(raw)
    except ValueError:
        log.warning("ConfigMap key %s is not JSON; treating it as empty", UUIDS_KEY)
        return {}
    if not isinstance(doc, dict):
        return {}
    return {str(k): v for k, v in doc.items() if isinstance(v, str) and v}


class DiskRegistry:
    """The recorded disk UUIDs of one node (thread-safe), backed by its ConfigMap."""

    def __init__(self, client: KubeClient, *, namespace: str, node: str) -> None:
        self.client = client
        self.namespace = namespace
        self.node = node
        self.name = config_map_name(node)
        self._lock = threading.Lock()
        self._recorded: dict[str, str] = {}
        self._status = ""
        self.config_map: Obj = {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": self.name, "namespace": namespace}}

    def load(self) -> None:
        """Read (or create, empty) the ConfigMap; call before the first scan."""
        try:
            cm = self.client.get(CONFIG_MAPS, self.name, self.namespace)
        except NotFound:
            try:
                cm = self.client.create(CONFIG_MAPS, {**self.config_map, "data": {UUIDS_KEY: "{}"}})
            except AlreadyExists:
                cm = self.client.get(CONFIG_MAPS, self.name, self.namespace)
        with self._lock:
            self.config_map = cm
            self._recorded = _uuids_of(cm)
            self._status = str((cm.get("data") or {}).get(STATUS_KEY) or "")

    def expected_uuid(self, disk: DiskSpec) -> str:
        """The UUID ``disk`` must carry: the configured one, else the recorded one, else ``""``."""
        if disk.uuid:
            return disk.uuid
        with self._lock:
            return self._recorded.get(disk.path, "")

    def record(self, disk: DiskSpec, found_uuid: str) -> str:
        """Record ``found_uuid`` for ``disk`` unless a UUID is recorded already; return the recorded one.

        Raises :class:`kube.errors.KubeError` when the ConfigMap cannot be written: the
        caller must then not trust ``found_uuid``.
        """

        def read() -> Obj:
            return self.client.get(CONFIG_MAPS, self.name, self.namespace)

        def write(cm: Obj) -> Obj:
            uuids = _uuids_of(cm)
            if disk.path in uuids:
                return cm  # recorded meanwhile (another incarnation of this agent): keep it
            uuids[disk.path] = found_uuid
            cm.setdefault("data", {})[UUIDS_KEY] = json.dumps(uuids, sort_keys=True)
            return self.client.replace(CONFIG_MAPS, cm)  # carries resourceVersion: compare-and-swap

        cm = retry_on_conflict(read, write)
        with self._lock:
            self.config_map = cm
            self._recorded = _uuids_of(cm)
            recorded = self._recorded.get(disk.path, "")
        if recorded == found_uuid:
            log.info("disk %s at %s: recorded UUID %s in ConfigMap %s/%s",
                     disk.name, disk.path, recorded, self.namespace, self.name)
        return recorded

    def publish_status(self, disks: Sequence[Mapping[str, Any]]) -> None:
        """Write each disk's status into the ConfigMap when it changed (only this key is touched)."""
        text = json.dumps(list(disks), sort_keys=True)
        with self._lock:
            if text == self._status:
                return
        self.publish(STATUS_KEY, list(disks))
        with self._lock:
            self._status = text

    def publish(self, key: str, doc: Any) -> None:
        """Write ``doc`` as JSON under ``key`` of the ConfigMap (only this key is touched)."""
        text = json.dumps(doc, sort_keys=True)
        cm = self.client.patch(CONFIG_MAPS, self.name, {"data": {key: text}}, self.namespace)
        with self._lock:
            self.config_map = cm
