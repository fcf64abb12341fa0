"""Reclaim-space propagation against the real API server: existing PVCs follow their sources."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kustodian.controllers.reclaim.controller import ReclaimPropagation
from kustodian.kube.resources import PERSISTENT_VOLUME_CLAIMS, STORAGE_CLASSES
from tests.conftest import KubeApi
from tests.support import wait_for

pytestmark = pytest.mark.api

SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
SOURCE = "reclaimspace.kustodian.io/source"
APPLIED = "reclaimspace.kustodian.io/applied"


class Queue:
    """Collects the keys the handlers enqueue; the test drains them by calling reconcile."""

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, key: str) -> None:
        with self.lock:
            self.keys.add(key)

    def drain(self, ctl: ReclaimPropagation) -> set[str]:
        with self.lock:
            keys, self.keys = self.keys, set()
        for key in sorted(keys):
            ctl.reconcile(key)
        return keys




@pytest.fixture
def propagation(kube_api: KubeApi, namespace: str) -> Iterator[tuple[ReclaimPropagation, Queue]]:
    ctl = ReclaimPropagation(kube_api.client, config_namespace=namespace, config_name="reclaim-config")
    queue = Queue()
    ctl.wire(queue)
    for cache in ctl.caches:
        cache.start()
    for cache in ctl.caches:
        assert cache.wait_synced(10)
    yield ctl, queue
    for cache in ctl.caches:
        cache.stop(timeout=1)


def sc(name: str, schedule: str | None) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "x",
            "metadata": {"name": name, "annotations": {SCHEDULE: schedule} if schedule else {}}}


def pvc(ns: str, name: str, sc_name: str, ann: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns, "annotations": ann or {}},
            "spec": {"storageClassName": sc_name, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}


def ann(kube_api: KubeApi, ns: str, name: str) -> dict[str, str]:
    got: dict[str, str] = kube_api.client.get(PERSISTENT_VOLUME_CLAIMS, name, ns)["metadata"].get("annotations") or {}
    return got


def settle(ctl: ReclaimPropagation, queue: Queue, kube_api: KubeApi, ns: str,
           cond: Callable[[], bool], what: str) -> None:
    def drained_and_met() -> bool:
        queue.drain(ctl)
        return cond()

    wait_for(drained_and_met, what, poll=0.05)


def test_existing_pvcs_follow_the_storageclass_and_user_owned_ones_do_not(
        kube_api: KubeApi, namespace: str, propagation: tuple[ReclaimPropagation, Queue]) -> None:
    ctl, queue = propagation
    client = kube_api.client
    name = f"prop-{namespace}"
    client.create(STORAGE_CLASSES, sc(name, None))
    try:
        for p in ("a", "b"):
            client.create(PERSISTENT_VOLUME_CLAIMS, pvc(namespace, p, name))
        client.create(PERSISTENT_VOLUME_CLAIMS, pvc(namespace, "user", name, {SCHEDULE: "0 3 * * 1"}))
        wait_for(lambda: len(ctl.pvcs.list(namespace)) == 3, "PVCs in the cache")
        queue.drain(ctl)
        assert SCHEDULE not in ann(kube_api, namespace, "a")  # no policy yet: nothing written

        # the admin annotates the StorageClass once: existing PVCs follow
        client.patch(STORAGE_CLASSES, name, {"metadata": {"annotations": {SCHEDULE: "@daily"}}})
        settle(ctl, queue, kube_api, namespace, lambda: all(
            ann(kube_api, namespace, p).get(SCHEDULE) == "@daily" for p in ("a", "b")), "@daily on a and b")
        assert ann(kube_api, namespace, "a")[SOURCE] == f"storageclass/{name}"
        assert ann(kube_api, namespace, "user") == {SCHEDULE: "0 3 * * 1"}

        # the admin changes it: marked PVCs follow, the user's does not
        client.patch(STORAGE_CLASSES, name, {"metadata": {"annotations": {SCHEDULE: "@weekly"}}})
        settle(ctl, queue, kube_api, namespace, lambda: all(
            ann(kube_api, namespace, p).get(SCHEDULE) == "@weekly" for p in ("a", "b")), "@weekly")
        assert ann(kube_api, namespace, "user") == {SCHEDULE: "0 3 * * 1"}

        # a user edits Kustodian's schedule on b: b is the user's now (marks removed, value kept)
        client.patch(PERSISTENT_VOLUME_CLAIMS, "b", {"metadata": {"annotations": {SCHEDULE: "@hourly"}}}, namespace)
        settle(ctl, queue, kube_api, namespace,
               lambda: SOURCE not in ann(kube_api, namespace, "b"), "marks removed from b")
        assert ann(kube_api, namespace, "b") == {SCHEDULE: "@hourly"}

        # the admin removes the policy: Kustodian's copy goes, the users' stay
        client.patch(STORAGE_CLASSES, name, {"metadata": {"annotations": {SCHEDULE: None}}})
        settle(ctl, queue, kube_api, namespace,
               lambda: SCHEDULE not in ann(kube_api, namespace, "a"), "schedule removed from a")
        assert SOURCE not in ann(kube_api, namespace, "a") and APPLIED not in ann(kube_api, namespace, "a")
        assert ann(kube_api, namespace, "b") == {SCHEDULE: "@hourly"}
        assert ann(kube_api, namespace, "user") == {SCHEDULE: "0 3 * * 1"}
    finally:
        client.delete(STORAGE_CLASSES, name)


def test_a_concurrent_user_edit_wins_over_a_stale_decision(
        kube_api: KubeApi, namespace: str, propagation: tuple[ReclaimPropagation, Queue]) -> None:
    ctl, _ = propagation
    client = kube_api.client
    name = f"race-{namespace}"
    client.create(STORAGE_CLASSES, sc(name, "@daily"))
    try:
        client.create(PERSISTENT_VOLUME_CLAIMS, pvc(namespace, "p", name))
        wait_for(lambda: ctl.pvcs.get(namespace, "p") is not None and ctl.storageclasses.get(None, name)
                 is not None, "caches")
        ctl.pvcs.stop(timeout=1)  # freeze the cache: it keeps the copy without a schedule
        # the user sets their own schedule after our cache read, before our write
        client.patch(PERSISTENT_VOLUME_CLAIMS, "p", {"metadata": {"annotations": {SCHEDULE: "@monthly"}}}, namespace)
        assert SCHEDULE not in (ctl.pvcs.get(namespace, "p") or {})["metadata"].get("annotations", {})
        ctl.reconcile(f"{namespace}/p")  # decides from the stale copy -> 409 -> fresh read -> user's
        assert ctl.conflicts == 1 and ctl.writes == 0
        assert ann(kube_api, namespace, "p") == {SCHEDULE: "@monthly"}
    finally:
        client.delete(STORAGE_CLASSES, name)


KR = "keyrotation.csiaddons.openshift.io/schedule"


@pytest.mark.parametrize("keyrotation", [False, True], ids=["keyrotation-off-by-default", "keyrotation-on"])
def test_key_rotation_schedules_follow_the_same_rules_when_switched_on(
        kube_api: KubeApi, namespace: str, keyrotation: bool) -> None:
    ctl = ReclaimPropagation(kube_api.client, config_namespace=namespace, config_name="reclaim-config",
                             keyrotation=keyrotation)
    queue = Queue()
    ctl.wire(queue)
    for cache in ctl.caches:
        cache.start()
    client = kube_api.client
    name = f"kr-{namespace}"
    try:
        for cache in ctl.caches:
            assert cache.wait_synced(10)
        client.create(STORAGE_CLASSES, {**sc(name, "@daily"),
                                        "metadata": {"name": name, "annotations": {SCHEDULE: "@daily",
                                                                                   KR: "@monthly"}}})
        client.create(PERSISTENT_VOLUME_CLAIMS, pvc(namespace, "p", name))
        settle(ctl, queue, kube_api, namespace, lambda: ann(kube_api, namespace, "p").get(SCHEDULE) == "@daily",
               "reclaim schedule")
        got = ann(kube_api, namespace, "p")
        if keyrotation:
            assert (got.get(KR), got.get("keyrotation.kustodian.io/source")) == ("@monthly", f"storageclass/{name}")
        else:
            assert KR not in got
        assert got[SOURCE] == f"storageclass/{name}"
    finally:
        for cache in ctl.caches:
            cache.stop(timeout=1)
        client.delete(STORAGE_CLASSES, name)


CRONJOB = "reclaimspace.csiaddons.openshift.io/cronjob"
FALLBACK = "reclaimspace.kustodian.io/csi-addons-fallback"
PREVIOUS = "reclaimspace.kustodian.io/previous"


def test_csi_addons_fallback_is_replaced_once_the_storageclass_is_fixed(
        kube_api: KubeApi, namespace: str, propagation: tuple[ReclaimPropagation, Queue]) -> None:
    """Issue 34, the controller's half (csi-addons' writes played by hand, as its manager makes them)."""
    ctl, queue = propagation
    client = kube_api.client
    name = f"fallback-{namespace}"
    client.create(STORAGE_CLASSES, sc(name, "daily"))  # robfig refuses it: csi-addons runs @weekly
    try:
        client.create(PERSISTENT_VOLUME_CLAIMS, pvc(namespace, "p", name))
        weekly = {SCHEDULE: "@weekly", CRONJOB: "p-1700000000"}
        client.patch(PERSISTENT_VOLUME_CLAIMS, "p", {"metadata": {"annotations": weekly}}, namespace)
        settle(ctl, queue, kube_api, namespace, lambda: ann(kube_api, namespace, "p").get(FALLBACK) == "@weekly",
               "csi-addons' fallback recorded")
        assert ann(kube_api, namespace, "p") == {**weekly, FALLBACK: "@weekly"}

        client.patch(STORAGE_CLASSES, name, {"metadata": {"annotations": {SCHEDULE: "@daily"}}})
        settle(ctl, queue, kube_api, namespace, lambda: ann(kube_api, namespace, "p").get(SCHEDULE) == "@daily",
               "the fixed StorageClass schedule")
        assert ann(kube_api, namespace, "p") == {SCHEDULE: "@daily", CRONJOB: "p-1700000000",
                                                 SOURCE: f"storageclass/{name}", APPLIED: "@daily",
                                                 PREVIOUS: "@weekly"}

        # csi-addons writing its old value back from a stale cache is not a person's edit
        client.patch(PERSISTENT_VOLUME_CLAIMS, "p", {"metadata": {"annotations": {SCHEDULE: "@weekly"}}}, namespace)
        settle(ctl, queue, kube_api, namespace, lambda: ann(kube_api, namespace, "p").get(SCHEDULE) == "@daily",
               "Kustodian's schedule re-asserted")
        assert ann(kube_api, namespace, "p")[SOURCE] == f"storageclass/{name}"
    finally:
        client.delete(STORAGE_CLASSES, name)
