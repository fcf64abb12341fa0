"""The node agent against the real API server, on real directories under ``tmp_path``.

The Orphan CRD comes from the chart; Longhorn's Replica CRD is a minimal open schema.
Each test gets its own namespace (Kustodian's namespace and Longhorn's, here) and its
own node name, so the agents of different tests never see each other's objects.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kustodian.controllers.orphans.agent import ORPHANS, NodeAgent, build
from kustodian.controllers.orphans.disks import STATUS_KEY, UUIDS_KEY, config_map_name
from kustodian.controllers.orphans.tracker import REPLICAS
from kustodian.kube.errors import NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import CONFIG_MAPS, EVENTS
from kustodian.policy.orphans import ANNOTATION_KEEP_DATA, ORPHAN_FINALIZER, orphan_name
from kustodian.settings import NodeAgentSettings
from tests.conftest import KubeApi
from tests.support import wait_for

pytestmark = pytest.mark.api

ROOT = Path(__file__).resolve().parents[3]
ORPHAN_CRD = ROOT / "charts" / "kustodian" / "crds" / "orphans.kustodian.io.yaml"
REPLICA_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "replicas.longhorn.io"},
    "spec": {"group": "longhorn.io", "scope": "Namespaced",
             "names": {"plural": "replicas", "singular": "replica", "kind": "Replica", "listKind": "ReplicaList"},
             "versions": [{"name": "v1beta2", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}
UUID = "3b1e6d3c-0e3f-4f5e-9d2a-000000000001"
OTHER_UUID = "3b1e6d3c-0e3f-4f5e-9d2a-000000000002"
ORPHAN_DIR = "pvc-1111-aaaaaaaa"
TRACKED_DIR = "pvc-2222-bbbbbbbb"
META = json.dumps({"Size": 1073741824, "Head": "volume-head-000.img", "Dirty": False, "Rebuilding": False,
                   "Error": "", "Parent": "", "SectorSize": 512, "BackingFilePath": ""})


class Clock:
    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


def make_disk(root: Path, disk_uuid: str = UUID) -> Path:
    disk = root / "disk"
    (disk / "replicas").mkdir(parents=True)
    (disk / "longhorn-disk.cfg").write_text(json.dumps({"diskName": "disk", "diskUUID": disk_uuid}))
    return disk


def make_replica_dir(disk: Path, name: str) -> Path:
    path = disk / "replicas" / name
    path.mkdir()
    (path / "volume.meta").write_text(META)
    (path / "volume-head-000.img").write_bytes(b"\0" * 4096)
    return path


@pytest.fixture(scope="module")
def crds(kube_api: KubeApi) -> None:
    kube_api.kubectl("apply", "-f", str(ORPHAN_CRD))
    kube_api.kubectl("apply", "-f", "-", input=json.dumps(REPLICA_CRD))
    kube_api.kubectl("wait", "--for", "condition=established", "--timeout=30s",
                     "crd/orphans.kustodian.io", "crd/replicas.longhorn.io")


class World:
    def __init__(self, kube_api: KubeApi, namespace: str, tmp_path: Path) -> None:
        self.api = kube_api
        self.client = kube_api.client
        self.ns = namespace
        self.node = f"node-{uuid.uuid4().hex[:8]}"
        self.disk = make_disk(tmp_path)
        self.agents: list[NodeAgent] = []
        self.recorder = EventRecorder(self.client, "kustodian-test", min_interval=0, default_namespace=namespace)
        self.clock = Clock()

    def agent(self, *, disk: str | None = None, monitor: bool = False, **settings: Any) -> NodeAgent:
        config = NodeAgentSettings(kube={"namespace": self.ns},
                                   node_agent={"node_name": self.node, "longhorn_namespace": self.ns,
                                               "disks": [disk or f"disk1={self.disk}@{UUID}"],
                                               "scan_interval": 0.1, **settings})
        agent = build(config, self.client, recorder=self.recorder, clock=self.clock)
        agent.retry_interval = 0.2
        self.agents.append(agent)
        return agent.start(15, monitor=monitor)

    def orphan(self, dir_name: str = ORPHAN_DIR, disk_uuid: str = UUID) -> dict[str, Any] | None:
        try:
            return self.client.get(ORPHANS, orphan_name(self.node, disk_uuid, dir_name), self.ns)
        except NotFound:
            return None

    def orphans(self) -> list[dict[str, Any]]:
        return self.client.list(ORPHANS, self.ns)[0]

    def replica(self, dir_name: str) -> None:
        self.client.create(REPLICAS, {
            "apiVersion": "longhorn.io/v1beta2", "kind": "Replica",
            "metadata": {"name": dir_name.rsplit("-", 1)[0] + "-r-" + uuid.uuid4().hex[:8], "namespace": self.ns},
            "spec": {"nodeID": self.node, "diskID": UUID, "diskPath": str(self.disk),
                     "dataDirectoryName": dir_name}})

    def delete_orphan(self, name: str) -> None:
        self.api.kubectl("delete", "orphan", name, "-n", self.ns, "--wait=true", "--timeout=15s")

    def events(self, reason: str) -> list[dict[str, Any]]:
        self.recorder.flush()
        return [e for e in self.client.list(EVENTS, self.ns)[0] if e.get("reason") == reason]

    def condition(self, obj: dict[str, Any] | None) -> dict[str, Any]:
        conds = ((obj or {}).get("status") or {}).get("conditions") or []
        return next((c for c in conds if c.get("type") == "DataCleanable"), {})


@pytest.fixture
def world(crds: None, kube_api: KubeApi, namespace: str, tmp_path: Path) -> Iterator[World]:
    w = World(kube_api, namespace, tmp_path)
    yield w
    for agent in w.agents:
        agent.stop()
    w.recorder.close()
    for obj in w.orphans():  # release what a failed test left, so the namespace can go
        if obj["metadata"].get("finalizers"):
            w.client.patch(ORPHANS, obj["metadata"]["name"], {"metadata": {"finalizers": []}}, w.ns)


def test_untracked_dir_becomes_an_orphan_and_deleting_it_removes_the_dir(world: World) -> None:
    orphaned = make_replica_dir(world.disk, ORPHAN_DIR)
    tracked = make_replica_dir(world.disk, TRACKED_DIR)
    (world.disk / "replicas" / "not-a-replica").mkdir()
    (world.disk / "replicas" / "pvc-3333-cccccccc").mkdir()  # replica name, no volume.meta
    world.replica(TRACKED_DIR)
    agent = world.agent(monitor=True)

    wait_for(lambda: world.condition(world.orphan()).get("status") == "True", "a cleanable Orphan")
    obj = world.orphan()
    assert obj is not None
    assert obj["spec"] == {"nodeID": world.node, "type": "replica", "parameters": {
        "DataName": ORPHAN_DIR, "DiskName": "disk1", "DiskUUID": UUID, "DiskPath": str(world.disk)}}
    assert obj["metadata"]["finalizers"] == [ORPHAN_FINALIZER]
    assert world.condition(obj)["reason"] == "Cleanable"
    wait_for(lambda: agent.scans_done >= 3, "more scans")
    assert [o["spec"]["parameters"]["DataName"] for o in world.orphans()] == [ORPHAN_DIR]  # the tracked one: never

    world.delete_orphan(obj["metadata"]["name"])
    assert not orphaned.exists()
    assert tracked.exists() and (tracked / "volume.meta").exists()
    assert world.orphan() is None
    assert world.events("DataRemoved")
    count = agent.scans_done
    wait_for(lambda: agent.scans_done >= count + 3, "more scans")
    assert world.orphans() == []  # not recreated: the directory is gone


def test_keep_data_annotation_deletes_only_the_object(world: World) -> None:
    orphaned = make_replica_dir(world.disk, ORPHAN_DIR)
    agent = world.agent()
    agent.scan_once()
    wait_for(lambda: world.orphan() is not None, "the Orphan")
    obj = world.orphan()
    assert obj is not None
    world.client.patch(ORPHANS, obj["metadata"]["name"],
                       {"metadata": {"annotations": {ANNOTATION_KEEP_DATA: "true"}}}, world.ns)
    world.delete_orphan(obj["metadata"]["name"])
    assert orphaned.exists() and (orphaned / "volume.meta").exists()
    again = world.orphan()
    assert again is None or again["metadata"]["uid"] != obj["metadata"]["uid"]
    assert any("KeepData" in e["message"] for e in world.events("DataKept"))


def test_dir_tracked_between_report_and_delete_is_not_removed(world: World) -> None:
    orphaned = make_replica_dir(world.disk, ORPHAN_DIR)
    agent = world.agent()
    agent.scan_once()
    wait_for(lambda: world.orphan() is not None, "the Orphan")
    obj = world.orphan()
    assert obj is not None
    world.replica(ORPHAN_DIR)  # Longhorn reuses the directory (e.g. the disk came back)
    world.delete_orphan(obj["metadata"]["name"])  # no scan in between: only the fresh re-check saves it
    assert orphaned.exists() and (orphaned / "volume.meta").exists()
    assert world.orphan() is None
    assert any("DataTracked" in e["message"] for e in world.events("DataKept"))
    agent.scan_once()
    assert world.orphans() == []  # tracked now: not reported again


def test_disk_whose_uuid_changed_is_skipped_and_nothing_is_removed(world: World) -> None:
    orphaned = make_replica_dir(world.disk, ORPHAN_DIR)
    agent = world.agent(disk=f"disk1={world.disk}")  # no UUID configured: the first one seen is recorded
    agent.scan_once()
    cm = world.client.get(CONFIG_MAPS, config_map_name(world.node), world.ns)
    assert json.loads(cm["data"][UUIDS_KEY]) == {str(world.disk): UUID}
    wait_for(lambda: world.orphan() is not None, "the Orphan")

    # another disk is mounted at the same path
    (world.disk / "longhorn-disk.cfg").write_text(json.dumps({"diskName": "disk", "diskUUID": OTHER_UUID}))
    make_replica_dir(world.disk, "pvc-4444-dddddddd")
    agent.scan_once()
    cm = world.client.get(CONFIG_MAPS, config_map_name(world.node), world.ns)
    [status] = json.loads(cm["data"][STATUS_KEY])
    assert status["conditions"][0]["status"] == "False"
    assert status["conditions"][0]["reason"] == "DiskUUIDMismatch"
    assert world.events("DiskUUIDMismatch")[0]["type"] == "Warning"
    assert world.orphan("pvc-4444-dddddddd", OTHER_UUID) is None
    assert world.orphan("pvc-4444-dddddddd", UUID) is None

    # a restarted agent still knows the recorded UUID
    agent.stop()
    restarted = world.agent(disk=f"disk1={world.disk}")
    restarted.scan_once()
    assert restarted.scan_disks(record=False)[0].expected_uuid == UUID

    obj = world.orphan()
    assert obj is not None
    wait_for(lambda: world.condition(world.orphan()).get("reason") == "DiskChanged", "DataCleanable=False")
    world.delete_orphan(obj["metadata"]["name"])
    assert orphaned.exists() and (orphaned / "volume.meta").exists()
    assert any("DiskChanged" in e["message"] for e in world.events("DataKept"))


def test_auto_delete_after_the_grace_period(world: World) -> None:
    orphaned = make_replica_dir(world.disk, ORPHAN_DIR)
    kept = make_replica_dir(world.disk, TRACKED_DIR)
    agent = world.agent(auto_delete=True, grace_period=60)
    agent.scan_once()
    wait_for(lambda: world.condition(world.orphan()).get("status") == "True", "a cleanable Orphan")
    keep = world.orphan(TRACKED_DIR)
    assert keep is not None
    world.client.patch(ORPHANS, keep["metadata"]["name"],
                       {"metadata": {"annotations": {ANNOTATION_KEEP_DATA: "true"}}}, world.ns)
    agent.resync()
    assert agent.controller.wait_idle(5)
    assert world.orphan() is not None and orphaned.exists()  # within the grace period

    world.clock.offset = timedelta(seconds=120)
    agent.resync()
    wait_for(lambda: world.orphan() is None, "the Orphan to be auto-deleted")
    assert not orphaned.exists()
    assert world.events("AutoDelete")
    assert kept.exists() and world.orphan(TRACKED_DIR) is not None  # keep-data: never auto-deleted



def test_orphans_whose_dir_vanished_or_became_tracked_are_pruned_without_touching_data(world: World) -> None:
    vanishing = make_replica_dir(world.disk, ORPHAN_DIR)
    reclaimed = make_replica_dir(world.disk, TRACKED_DIR)
    agent = world.agent()
    agent.scan_once()
    wait_for(lambda: len(world.orphans()) == 2, "two Orphans")

    for child in vanishing.iterdir():  # someone removed it by hand
        child.unlink()
    vanishing.rmdir()
    world.replica(TRACKED_DIR)  # and Longhorn took the other one back
    tracker_cache = getattr(agent.tracker, "cache", None)
    assert tracker_cache is not None
    wait_for(lambda: len(tracker_cache.list()) == 1, "the Replica in the watch cache")
    agent.scan_once()
    wait_for(lambda: world.orphans() == [], "both Orphans pruned")
    assert reclaimed.exists() and (reclaimed / "volume.meta").exists()
    assert not world.events("DataRemoved")
