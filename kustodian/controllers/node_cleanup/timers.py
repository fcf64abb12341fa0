"""Where the node-missing timer lives: on the PV (annotations) or, without patch rights, in memory.

With ``patch`` on PVs (Kustodian's chart) the timer is a set of annotations on the PV, where
an admin sees it; with upstream's ClusterRole (get/list/watch/delete only) the same
annotations are kept here per PV UID, as upstream keeps its timer.  Either way a restart
restarts the delay and never shortens it: a stamp older than the new process's watch of the
Nodes is no proof the node stayed gone (``NodeCleanup.watched_since``).  The decision sees
the same PV in both modes: :meth:`overlay` lays what is kept in memory over the PV a gather
read.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Protocol

from kustodian.kube.client import KubeClient
from kustodian.kube.resources import PERSISTENT_VOLUMES
from kustodian.policy.objects import str_field

Obj = dict[str, Any]


class NodeMissingTimers(Protocol):
    def overlay(self, pv: Obj) -> Obj:
        """``pv`` as if the kept annotations were on it."""
        ...

    def write(self, pv: Mapping[str, Any], annotations: Mapping[str, str | None]) -> None:
        """Apply the decision's annotation patch (``None`` removes a key) for the PV decided from."""
        ...

    def forget(self, pv_name: str) -> None:
        """The PV is gone."""
        ...


class TimersOnVolume:
    """The timer on the PV: a merge patch conditional on the resourceVersion decided from."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    def overlay(self, pv: Obj) -> Obj:
        return pv

    def write(self, pv: Mapping[str, Any], annotations: Mapping[str, str | None]) -> None:
        patch = {"metadata": {"annotations": dict(annotations),
                              "resourceVersion": str_field(pv, "metadata", "resourceVersion")}}
        self._client.patch(PERSISTENT_VOLUMES, str_field(pv, "metadata", "name"), patch)

    def forget(self, pv_name: str) -> None:
        return None


class TimersInMemory:
    """The timer in this process, per PV UID (a PV recreated under its name starts afresh)."""

    def __init__(self) -> None:
        self._kept: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    def overlay(self, pv: Obj) -> Obj:
        with self._lock:
            kept = self._kept.get(str_field(pv, "metadata", "uid"))
            kept = dict(kept) if kept else None
        if not kept:
            return pv
        meta = dict(pv.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}),
                               **{k: v for k, v in kept.items() if not k.startswith("#")}}
        return {**pv, "metadata": meta}

    def write(self, pv: Mapping[str, Any], annotations: Mapping[str, str | None]) -> None:
        with self._lock:
            kept = self._kept.setdefault(str_field(pv, "metadata", "uid"),
                                         {"#name": str_field(pv, "metadata", "name")})
            for key, value in annotations.items():
                if value is None:
                    kept.pop(key, None)
                else:
                    kept[key] = value

    def forget(self, pv_name: str) -> None:
        with self._lock:
            for key in [k for k, v in self._kept.items() if v.get("#name") == pv_name]:
                del self._kept[key]
