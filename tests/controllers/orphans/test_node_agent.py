"""The node agent against the real API server, Longhorn's real CRDs and real replica directories.

Longhorn's CRDs are ``../shared/upstream/longhorn/crds.yaml`` applied as they are, the
OrphanedReplicaDir CRD comes from the chart, and every replica directory is written by
``mkreplica`` (longhorn-engine's own ``pkg/replica`` code, built by the kit's
``build.sh``).  Each test gets its own namespace (Kustodian's and Longhorn's, here) and
its own node name, so the agents of different tests never see each other's objects.
Longhorn's Node object for the test node is written the way longhorn-manager writes
it: spec, then status through the status subresource.

Tests that port a scenario of longhorn-tests' ``manager/integration/tests/test_orphan.py``
name it in their docstring and say where Kustodian deliberately differs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kustodian.controllers.orphans.agent import ORPHANS, NodeAgent, install
from kustodian.controllers.orphans.disks import OWNERSHIP_KEY, STATUS_KEY, UUIDS_KEY, config_map_name
from kustodian.controllers.orphans.gather import OrphanCleanupSource
from kustodian.controllers.orphans.tracker import (
    LONGHORN_NODES,
    LONGHORN_SETTINGS,
    REPLICAS,
    Longhorn,
    LonghornWatch,
)
from kustodian.kube.errors import NotFound
from kustodian.kube.events import EventRecorder
from kustodian.kube.resources import CONFIG_MAPS, EVENTS, NAMESPACES, Resource
from kustodian.policy.orphans import ANNOTATION_KEEP_DATA, ORPHAN_FINALIZER, DiskScan, Ownership, orphan_name
from kustodian.runtime.manager import Manager
from kustodian.settings import NodeAgentSettings
from tests.conftest import KubeApi
from tests.longhorn import Disk, node_spec, node_status, replica_object
from tests.support import wait_for

pytestmark = pytest.mark.api

ROOT = Path(__file__).resolve().parents[3]
ORPHAN_CRD = ROOT / "charts" / "kustodian" / "crds" / "orphanedreplicadirs.kustodian.io.yaml"
LONGHORN_ORPHANS = Resource("longhorn.io", "v1beta2", "orphans", "Orphan", True)
UUID = "3b1e6d3c-0e3f-4f5e-9d2a-000000000001"
UUID2 = "3b1e6d3c-0e3f-4f5e-9d2a-000000000002"
OTHER_UUID = "3b1e6d3c-0e3f-4f5e-9d2a-0000000000ff"
ORPHAN_DIR = "pvc-9e2c9311-1686-456e-a61c-70473d952566-22c03ab0"
TRACKED_DIR = "pvc-fc9bd94e-8726-4e52-afdc-85f7d77515a8-2c0688c2"


class Clock:
    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


@pytest.fixture(scope="session")
def mkreplica(upstream: Path) -> Path:
    """longhorn-engine's replica code as a tool (built once, cached by the kit)."""
    from kustodian.testing.upstream import UpstreamMissing, build

    try:
        return build("longhorn")
    except UpstreamMissing as exc:
        pytest.fail(f"mkreplica could not be built from ../shared/upstream/longhorn: {exc}")


def make_disk(path: Path, disk_uuid: str = UUID) -> Path:
    (path / "replicas").mkdir(parents=True)
    # what longhorn-manager's generateFilesystemTypeDiskConfig writes (no trailing newline)
    (path / "longhorn-disk.cfg").write_text(json.dumps(
        {"diskName": path.name, "diskUUID": disk_uuid, "diskDriver": "", "state": "ready"},
        separators=(",", ":")))
    return path


def settled(path: Path, age: timedelta = timedelta(hours=1)) -> Path:
    """Make every modification time under ``path`` ``age`` old: a replica nobody writes any more
    (a directory written within the agent's write grace is live data and never removed)."""
    then = (datetime.now(UTC) - age).timestamp()
    for item in sorted(path.rglob("*"), reverse=True):
        os.utime(item, (then, then), follow_symlinks=False)
    os.utime(path, (then, then))
    return path


@pytest.fixture(scope="module")
def crds(kube_api: KubeApi, upstream: Path) -> None:
    kube_api.kubectl("apply", "-f", str(ORPHAN_CRD))
    kube_api.kubectl("apply", "-f", str(upstream / "longhorn" / "crds.yaml"))
    kube_api.kubectl("wait", "--for", "condition=established", "--timeout=60s",
                     "crd/orphanedreplicadirs.kustodian.io", "crd/replicas.longhorn.io", "crd/nodes.longhorn.io",
                     "crd/orphans.longhorn.io", "crd/settings.longhorn.io")


class World:
    def __init__(self, kube_api: KubeApi, namespace: str, tmp_path: Path, mkreplica: Path) -> None:
        self.api = kube_api
        self.client = kube_api.client
        self.ns = namespace
        self.node = f"node-{uuid.uuid4().hex[:8]}"
        self.tmp = tmp_path
        self.mkreplica_bin = mkreplica
        self.disk = make_disk(tmp_path / "disk")
        self.disks = [Disk("disk1", str(self.disk), UUID)]
        self.agents: dict[int, tuple[NodeAgent, Manager]] = {}
        self.recorder = EventRecorder(self.client, "kustodian-test", min_interval=0, default_namespace=namespace)
        self.clock = Clock()

    # -- Longhorn's side ---------------------------------------------------------------------

    def longhorn_node(self, *, ready: bool = True, evict: bool = False, since: datetime | None = None,
                      create: bool = True) -> None:
        """Write this node's nodes.longhorn.io as longhorn-manager does: spec, then status."""
        stamp = (since or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
        spec = {**node_spec(self.disks, evict=evict), "name": self.node}
        if create:
            self.client.create(LONGHORN_NODES, {"apiVersion": "longhorn.io/v1beta2", "kind": "Node",
                                                "metadata": {"name": self.node, "namespace": self.ns},
                                                "spec": spec})
        else:
            self.client.patch(LONGHORN_NODES, self.node, {"spec": spec}, self.ns)
        self.client.patch(LONGHORN_NODES, self.node, {"status": node_status(self.disks, ready=ready, since=stamp)},
                          self.ns, subresource="status")

    def update_longhorn_node(self, **kw: Any) -> None:
        self.longhorn_node(create=False, **kw)

    def replica(self, dir_name: str, disk: Disk | None = None) -> str:
        disk = disk or self.disks[0]
        name = f"{dir_name.rsplit('-', 1)[0][:40]}-r-{uuid.uuid4().hex[:8]}"
        self.client.create(REPLICAS, dict(replica_object(name, self.node, disk.uuid, disk.path, dir_name, self.ns)))
        return name

    def setting(self, name: str, value: str) -> None:
        try:
            self.client.patch(LONGHORN_SETTINGS, name, {"value": value}, self.ns)
        except NotFound:
            self.client.create(LONGHORN_SETTINGS, {"apiVersion": "longhorn.io/v1beta2", "kind": "Setting",
                                                   "metadata": {"name": name, "namespace": self.ns},
                                                   "value": value})

    # -- disks -----------------------------------------------------------------------------

    def mkreplica(self, disk: Path, dir_name: str, *, snapshots: int = 1, copy: bool = False) -> Path:
        """A replica directory written by longhorn-engine's code.

        ``copy``: written on the test's ext4 first, then ``cp -a`` to the disk, as
        longhorn-tests' ``create_orphaned_directories_on_host`` does; for a tmpfs disk,
        where the engine's FIEMAP check refuses to create one in place.
        """
        path = disk / "replicas" / dir_name
        made = self.tmp / "staging" / dir_name if copy else path
        made.parent.mkdir(exist_ok=True)
        proc = subprocess.run([str(self.mkreplica_bin), "-dir", str(made), "-size", str(16 << 20),
                               "-snapshots", str(snapshots)], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        if copy:
            subprocess.run(["cp", "-a", str(made), str(path)], check=True)
        assert (path / "volume.meta").is_file()
        return settled(path)

    # -- the agent -------------------------------------------------------------------------

    def agent(self, *, disks: list[str] | None = None, monitor: bool = False, **settings: Any) -> NodeAgent:
        settings.setdefault("longhorn_namespace", self.ns)
        # these tests are about what a delete may remove: the quarantine's retention is 0 here (the
        # directory is moved into quarantine, then removed at once); the quarantine's own tests set one
        settings.setdefault("quarantine_retention", "0s")
        settings.setdefault("quarantine_min_retention", "0s")
        group = {k.removeprefix("orphan_"): v for k, v in settings.items()}
        config = NodeAgentSettings(kube={"namespace": self.ns},
                                   node_agent={"node_name": self.node, "scan_interval": 0.1,
                                               "disks": disks or [f"{d.name}={d.path}@{d.uuid}" for d in self.disks],
                                               **group})
        return self.start(config, monitor=monitor, retry_interval=0.2)

    def start(self, config: NodeAgentSettings, *, monitor: bool = False, retry_interval: float | None = None,
              tracker: Any = None) -> NodeAgent:
        """The agent on a Manager of its own, as ``kustodian node-agent`` runs it, caches synced."""
        manager = Manager(self.client, name="node-agent-test", sync_timeout=15)
        agent = install(manager, config, recorder=self.recorder, clock=self.clock, tracker=tracker, monitor=monitor)
        if retry_interval is not None:
            agent.retry_interval = retry_interval
        self.agents[id(agent)] = (agent, manager)
        assert manager.start(), "the node agent's caches did not sync"
        return agent

    def stop(self, agent: NodeAgent) -> None:
        """The agent's process stops: its Manager stops the monitor, the workers, the caches."""
        self.agents[id(agent)][1].stop_acting()

    def settle(self, agent: NodeAgent) -> None:
        """One scan on the current watch state, then every reconcile it caused."""
        agent.scan_once()
        assert agent.controller.wait_idle(10)

    # -- Kustodian's objects ---------------------------------------------------------------

    def orphan(self, dir_name: str = ORPHAN_DIR, disk_uuid: str = UUID) -> dict[str, Any] | None:
        try:
            return self.client.get(ORPHANS, orphan_name(self.node, disk_uuid, dir_name), self.ns)
        except NotFound:
            return None

    def orphans(self) -> list[dict[str, Any]]:
        return self.client.list(ORPHANS, self.ns)[0]

    def data_names(self) -> list[str]:
        return sorted(o["spec"]["parameters"]["DataName"] for o in self.orphans())

    def delete_orphan(self, name: str, *, wait: bool = True) -> None:
        self.api.kubectl("delete", "orphanedreplicadir", name, "-n", self.ns, f"--wait={str(wait).lower()}",
                         "--timeout=15s")

    def events(self, reason: str) -> list[dict[str, Any]]:
        self.recorder.flush()
        return [e for e in self.client.list(EVENTS, self.ns)[0] if e.get("reason") == reason]

    def condition(self, obj: dict[str, Any] | None) -> dict[str, Any]:
        conds = ((obj or {}).get("status") or {}).get("conditions") or []
        return next((c for c in conds if c.get("type") == "DataCleanable"), {})

    def config_map(self, key: str) -> Any:
        cm = self.client.get(CONFIG_MAPS, config_map_name(self.node), self.ns)
        return json.loads(cm["data"][key])


@pytest.fixture
def world(crds: None, kube_api: KubeApi, namespace: str, tmp_path: Path, mkreplica: Path) -> Iterator[World]:
    w = World(kube_api, namespace, tmp_path, mkreplica)
    yield w
    for _, manager in w.agents.values():
        manager.stop_acting()
    w.recorder.close()
    for obj in w.orphans():  # release what a failed test left, so the namespace can go
        if obj["metadata"].get("finalizers"):
            w.client.patch(ORPHANS, obj["metadata"]["name"], {"metadata": {"finalizers": []}}, w.ns)


def cleanable(world: World, dir_name: str = ORPHAN_DIR, disk_uuid: str = UUID) -> bool:
    return world.condition(world.orphan(dir_name, disk_uuid)).get("status") == "True"


# -- the basics, on real replica directories ------------------------------------------------


def test_untracked_dir_becomes_an_orphan_and_deleting_it_removes_the_dir(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    tracked = world.mkreplica(world.disk, TRACKED_DIR)
    (world.disk / "replicas" / "not-a-replica").mkdir()
    (world.disk / "replicas" / "pvc-3333-cccccccc").mkdir()  # replica name, no volume.meta
    world.replica(TRACKED_DIR)
    agent = world.agent(monitor=True)

    wait_for(lambda: cleanable(world), "a cleanable Orphan")
    obj = world.orphan()
    assert obj is not None
    assert obj["kind"] == "OrphanedReplicaDir"
    assert obj["spec"] == {"nodeID": world.node, "type": "replica", "parameters": {
        "DataName": ORPHAN_DIR, "DiskName": "disk1", "DiskUUID": UUID, "DiskPath": str(world.disk)}}
    assert obj["metadata"]["finalizers"] == [ORPHAN_FINALIZER]
    assert world.condition(obj)["reason"] == "Cleanable"
    assert world.config_map(OWNERSHIP_KEY)[0]["status"] == "True"
    count = agent.scans_done
    wait_for(lambda: agent.scans_done >= count + 3, "more scans")
    assert world.data_names() == [ORPHAN_DIR]  # the tracked one: never

    world.delete_orphan(obj["metadata"]["name"])
    assert not orphaned.exists()
    assert (tracked / "volume.meta").exists() and len(list(tracked.iterdir())) == 6
    assert world.orphan() is None
    assert world.events("DataRemoved")
    count = agent.scans_done
    wait_for(lambda: agent.scans_done >= count + 3, "more scans")
    assert world.orphans() == []  # not recreated: the directory is gone


def test_keep_data_annotation_deletes_only_the_object(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent()
    world.settle(agent)
    obj = world.orphan()
    assert obj is not None
    world.client.patch(ORPHANS, obj["metadata"]["name"],
                       {"metadata": {"annotations": {ANNOTATION_KEEP_DATA: "true"}}}, world.ns)
    world.delete_orphan(obj["metadata"]["name"])
    assert (orphaned / "volume.meta").exists()
    again = world.orphan()
    assert again is None or again["metadata"]["uid"] != obj["metadata"]["uid"]
    assert any("KeepData" in e["message"] for e in world.events("DataKept"))


def test_dir_tracked_between_report_and_delete_is_not_removed(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent()
    world.settle(agent)
    obj = world.orphan()
    assert obj is not None
    world.replica(ORPHAN_DIR)  # Longhorn reuses the directory (e.g. the disk came back)
    world.delete_orphan(obj["metadata"]["name"])  # no scan in between: only the fresh re-check saves it
    assert (orphaned / "volume.meta").exists()
    assert world.orphan() is None
    kept = world.events("DataKept")
    assert any("DataTracked" in e["message"] for e in kept), [e["message"] for e in kept]
    world.settle(agent)
    assert world.orphans() == []  # tracked now: not reported again


class LoggingSource:
    """An orphan source that logs each gather that found the Orphan under its ``name``; ``hide`` leaves
    directories out of its scans (a stale scan)."""

    def __init__(self, name: str, inner: OrphanCleanupSource, log: list[str],
                 hide: frozenset[str] = frozenset()) -> None:
        self.name, self.inner, self.log, self.hide = name, inner, log, hide

    def orphan(self, namespace: str, name: str) -> dict[str, Any] | None:
        found = self.inner.orphan(namespace, name)
        if found is not None:
            self.log.append(self.name)
        return found

    def scans(self) -> Sequence[DiskScan]:
        return [replace(s, entries={k: v for k, v in s.entries.items() if k not in self.hide})
                for s in self.inner.scans()]

    def ownership(self) -> Ownership:
        return self.inner.ownership()

    def orphans(self) -> list[dict[str, Any]]:
        return self.inner.orphans()


def test_a_removal_decided_on_the_caches_is_confirmed_by_one_gather_from_the_api_server(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent()
    world.settle(agent)
    wait_for(lambda: cleanable(world), "a cleanable Orphan")
    obj = world.orphan()
    assert obj is not None
    gathers: list[str] = []
    agent.cache_source = LoggingSource("cache", agent.cache_source, gathers)
    agent.api_source = LoggingSource("api", agent.api_source, gathers)
    world.delete_orphan(obj["metadata"]["name"])
    assert not orphaned.exists()
    assert world.orphan() is None
    # decided on the caches, confirmed on the API server and the disk (passes before the delete,
    # and after it on a cache that still has the Orphan, read the caches only or find it gone)
    assert gathers.count("api") == 1, gathers
    assert gathers[gathers.index("api") - 1] == "cache", gathers


def test_a_removal_the_lagging_caches_did_not_see_is_made_on_two_agreeing_fresh_decisions(world: World) -> None:
    """The monitor's last scan misses the directory (it reads "data missing", so: release); the disk
    read just now has it and the API server no Replica for it: the delete is honoured, as the fresh
    facts say, once a second fresh gather agrees."""
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent()
    world.settle(agent)
    wait_for(lambda: cleanable(world), "a cleanable Orphan")
    obj = world.orphan()
    assert obj is not None
    gathers: list[str] = []
    agent.cache_source = LoggingSource("cache", agent.cache_source, gathers, hide=frozenset({ORPHAN_DIR}))
    agent.api_source = LoggingSource("api", agent.api_source, gathers)
    world.delete_orphan(obj["metadata"]["name"])
    assert not orphaned.exists()
    assert not world.events("DataKept")
    assert gathers.count("api") == 2, gathers
    first = gathers.index("api")
    assert gathers[first - 1:first + 2] == ["cache", "api", "api"], gathers


def test_disk_whose_uuid_changed_is_skipped_and_nothing_is_removed(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent(disks=[f"disk1={world.disk}"])  # no UUID configured: the first one seen is recorded
    world.settle(agent)
    cm = world.client.get(CONFIG_MAPS, config_map_name(world.node), world.ns)
    assert json.loads(cm["data"][UUIDS_KEY]) == {str(world.disk): UUID}
    assert world.orphan() is not None

    # another disk is mounted at the same path
    make_disk(world.tmp / "other", OTHER_UUID)
    (world.disk / "longhorn-disk.cfg").write_text((world.tmp / "other" / "longhorn-disk.cfg").read_text())
    world.mkreplica(world.disk, "pvc-4444-dddddddd")
    world.settle(agent)
    [status] = world.config_map(STATUS_KEY)
    assert status["conditions"][0]["status"] == "False"
    assert status["conditions"][0]["reason"] == "DiskUUIDMismatch"
    assert world.events("DiskUUIDMismatch")[0]["type"] == "Warning"
    assert world.orphan("pvc-4444-dddddddd", OTHER_UUID) is None
    assert world.orphan("pvc-4444-dddddddd", UUID) is None

    # a restarted agent still knows the recorded UUID
    world.stop(agent)
    restarted = world.agent(disks=[f"disk1={world.disk}"])
    restarted.scan_once()
    assert restarted.scan_disks(record=False)[0].expected_uuid == UUID

    obj = world.orphan()
    assert obj is not None
    wait_for(lambda: world.condition(world.orphan()).get("reason") == "DiskChanged", "DataCleanable=False")
    world.delete_orphan(obj["metadata"]["name"])
    assert (orphaned / "volume.meta").exists()
    assert any("DiskChanged" in e["message"] for e in world.events("DataKept"))


def test_orphans_whose_dir_vanished_or_became_tracked_are_pruned_without_touching_data(world: World) -> None:
    world.longhorn_node()
    vanishing = world.mkreplica(world.disk, ORPHAN_DIR)
    reclaimed = world.mkreplica(world.disk, TRACKED_DIR)
    agent = world.agent()
    world.settle(agent)
    assert len(world.orphans()) == 2

    shutil.rmtree(vanishing)  # someone removed it by hand
    world.replica(TRACKED_DIR)  # and Longhorn took the other one back
    replicas = getattr(agent.tracker, "cache", None)
    assert replicas is not None
    wait_for(lambda: len(replicas.list()) == 1, "the Replica in the watch cache")
    world.settle(agent)
    wait_for(lambda: world.orphans() == [], "both Orphans pruned")
    assert (reclaimed / "volume.meta").exists()
    assert not world.events("DataRemoved")


class ReplicaGoneThere(LoggingSource):
    """The API server side of a lagging Replica cache: the Replica of ``dir_name`` is already gone there."""

    def __init__(self, inner: OrphanCleanupSource, log: list[str], dir_name: str) -> None:
        super().__init__("api", inner, log)
        self.dir_name = dir_name

    def ownership(self) -> Ownership:
        owners = self.inner.ownership()
        assert owners.tracked is not None
        return replace(owners, tracked=frozenset(t for t in owners.tracked if t.data_dir_name != self.dir_name))

    def orphans(self) -> list[dict[str, Any]]:
        self.log.append(self.name)
        return self.inner.orphans()


def test_a_prune_the_api_server_does_not_confirm_is_not_made(world: World) -> None:
    """The Replica cache still has a Replica for the directory, the API server no longer: the
    Orphan stays; once both agree it is pruned."""
    world.longhorn_node()
    world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent()
    world.settle(agent)
    obj = world.orphan()
    assert obj is not None
    world.replica(ORPHAN_DIR)
    replicas = getattr(agent.tracker, "cache", None)
    assert replicas is not None
    wait_for(lambda: len(replicas.list()) == 1, "the Replica in the watch cache")
    real, gathers = agent.api_source, list[str]()
    agent.api_source = ReplicaGoneThere(real, gathers, ORPHAN_DIR)
    world.settle(agent)
    assert gathers == ["api"]  # the cache said prune: the API server was asked
    kept = world.orphan()
    assert kept is not None and kept["metadata"]["uid"] == obj["metadata"]["uid"]
    agent.api_source = real
    world.settle(agent)  # the unconfirmed prune is decided again
    wait_for(lambda: world.orphans() == [], "the Orphan pruned")


# -- HIGH: an empty or unreadable ownership source never means "nothing is owned" ---------


def test_wrong_longhorn_namespace_reports_nothing_deletes_nothing_and_says_why(world: World) -> None:
    """The incident: --longhorn-namespace naming a namespace without Longhorn, auto-delete on."""
    world.longhorn_node()
    live = [world.mkreplica(world.disk, f"pvc-{i}{i}{i}{i}-aaaaaaa{i}") for i in range(3)]
    for path in live:
        world.replica(path.name)  # all three are live, in the real Longhorn namespace
    empty_ns = f"{world.ns}-nolh"
    world.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": empty_ns}})
    try:
        agent = world.agent(longhorn_namespace=empty_ns, orphan_auto_delete=True, orphan_grace_period=0)
        for _ in range(5):
            world.settle(agent)
        world.clock.offset = timedelta(hours=1)
        world.settle(agent)
        assert world.orphans() == []
        for path in live:
            assert (path / "volume.meta").exists() and len(list(path.iterdir())) == 6
        [cond] = world.config_map(OWNERSHIP_KEY)
        assert (cond["type"], cond["status"], cond["reason"]) == ("OwnershipKnown", "False", "LonghornNodeMissing")
        assert f"no Longhorn Node '{world.node}' in namespace '{empty_ns}'" in cond["message"]
        [event] = world.events("LonghornNodeMissing")
        assert event["type"] == "Warning" and "nothing is reported or removed" in event["message"]
        assert event["involvedObject"]["name"] == config_map_name(world.node)
    finally:
        world.client.delete(NAMESPACES, empty_ns)


def test_node_unknown_to_longhorn_reports_nothing_until_registered(world: World) -> None:
    # the node is not (yet) known to Longhorn in the right namespace: same answer
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent(orphan_auto_delete=True, orphan_grace_period=3600)
    world.clock.offset = timedelta(hours=2)  # any Orphan would be old enough
    world.settle(agent)
    assert world.orphans() == []
    assert (orphaned / "volume.meta").exists()
    assert world.config_map(OWNERSHIP_KEY)[0]["reason"] == "LonghornNodeMissing"
    # Longhorn registers the node: ownership becomes known, the orphan is reported
    world.clock.offset = timedelta(0)
    world.longhorn_node()

    def ready() -> bool:
        owners = agent.tracker.ownership()
        return owners.known and owners.node is not None and owners.node.ready

    wait_for(ready, "the Ready Longhorn Node in the watch cache")
    world.settle(agent)
    assert world.data_names() == [ORPHAN_DIR]
    assert world.config_map(OWNERSHIP_KEY)[0]["status"] == "True"
    assert [e["type"] for e in world.events("OwnershipKnown")] == ["Normal"]
    assert (orphaned / "volume.meta").exists()


def test_longhorn_api_not_answering_reports_nothing(world: World) -> None:
    """Longhorn's Node resource not served (CRDs missing, another version): unknown, never "unowned"."""
    world.longhorn_node()
    live = world.mkreplica(world.disk, ORPHAN_DIR)
    tracker = Longhorn(world.client, world.ns, world.node, recheck_interval=3600)
    tracker.nodes = LonghornWatch(world.client, Resource("longhorn.io", "v1beta9", "nodes", "Node", True), world.ns,
                                  recheck_interval=3600)
    config = NodeAgentSettings(kube={"namespace": world.ns},
                               node_agent={"node_name": world.node, "longhorn_namespace": world.ns,
                                           "disks": [f"disk1={world.disk}@{UUID}"], "auto_delete": True,
                                           "grace_period": 0})
    agent = world.start(config, tracker=tracker)
    world.settle(agent)
    assert world.orphans() == []
    [cond] = world.config_map(OWNERSHIP_KEY)
    assert (cond["status"], cond["reason"]) == ("False", "LonghornNodeMissing")
    assert "Node.longhorn.io is not served" in cond["message"]
    assert (live / "volume.meta").exists()


def test_replicas_the_longhorn_node_lists_but_the_list_lacks_stop_everything(world: World) -> None:
    """longhorn#7749-style: Replica objects vanish while Longhorn's Node still schedules them."""
    world.disks[0].scheduled = ["gone-replica-1", "gone-replica-2"]
    world.longhorn_node()
    live = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent(orphan_auto_delete=True, orphan_grace_period=0)
    world.settle(agent)
    assert world.orphans() == []
    [cond] = world.config_map(OWNERSHIP_KEY)
    assert (cond["status"], cond["reason"]) == ("False", "ReplicasInconsistent")
    assert "gone-replica-1" in cond["message"]
    assert (live / "volume.meta").exists()


def test_ownership_lost_after_reporting_keeps_the_data_of_a_deleted_orphan(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent()
    world.settle(agent)
    wait_for(lambda: cleanable(world), "a cleanable Orphan")
    world.client.delete(LONGHORN_NODES, world.node, world.ns)  # Longhorn forgot the node
    wait_for(lambda: not agent.tracker.ownership().known, "the Node gone from the watch cache")
    world.settle(agent)
    wait_for(lambda: world.condition(world.orphan()).get("reason") == "NodeUnavailable", "NodeUnavailable")
    obj = world.orphan()
    assert obj is not None
    world.delete_orphan(obj["metadata"]["name"])
    assert (orphaned / "volume.meta").exists()


# -- Longhorn's node and disk state ------------------------------------------------------------

STATE_CASES = [
    ("node-not-ready", {"ready": False}, {}, "NodeUnavailable"),
    ("node-evicted", {"evict": True}, {}, "NodeEvicted"),
    ("disk-not-ready", {}, {"ready": False}, "DiskInvalid"),
    ("disk-evicted", {}, {"evicted": True}, "DiskEvicted"),
    ("disk-uuid-changed-in-longhorn", {}, {"uuid": OTHER_UUID}, "DiskChanged"),
]


@pytest.mark.parametrize(("node_kw", "disk_kw", "reason"), [c[1:] for c in STATE_CASES],
                         ids=[c[0] for c in STATE_CASES])
def test_node_or_disk_not_usable_makes_orphans_not_cleanable_with_longhorns_reason(
        world: World, node_kw: dict[str, Any], disk_kw: dict[str, Any], reason: str) -> None:
    """Ports test_disk_evicted / test_node_evicted (longhorn-tests test_orphan.py).

    Longhorn deletes the Orphan CR in the background and keeps the data; Kustodian keeps
    the object with DataCleanable=False and Longhorn's reason, so people see why, and the
    data stays all the same.  Back to normal, the Orphan is cleanable again.
    """
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    world.clock.offset = timedelta(seconds=-3600)  # young Orphans: auto-deletion waits for the grace
    agent = world.agent(monitor=True, orphan_auto_delete=True, orphan_grace_period=0)
    wait_for(lambda: cleanable(world), "a cleanable Orphan")

    for key, value in disk_kw.items():
        setattr(world.disks[0], key, value)
    world.update_longhorn_node(**node_kw)
    wait_for(lambda: world.condition(world.orphan()).get("reason") == reason, f"DataCleanable=False {reason}")
    cond = world.condition(world.orphan())
    assert cond["status"] == "False" and cond["message"]
    # nothing new is reported on that node/disk either
    world.mkreplica(world.disk, "pvc-5555-eeeeeeee")
    count = agent.scans_done
    wait_for(lambda: agent.scans_done >= count + 3, "more scans")
    assert world.data_names() == [ORPHAN_DIR]
    # auto-deletion does not touch it, even with the grace period long over
    world.clock.offset = timedelta(hours=1)
    agent.reconcile_all()
    assert agent.controller.wait_idle(10)
    assert world.orphan() is not None and (orphaned / "volume.meta").exists()

    # Longhorn back to normal: cleanable again, then auto-deleted with its data
    world.disks[0] = Disk("disk1", str(world.disk), UUID)
    world.update_longhorn_node()
    wait_for(lambda: world.orphan() is None, "the Orphan auto-deleted once cleanable again", timeout=20)
    assert not orphaned.exists()


def test_user_delete_while_longhorn_node_is_down_keeps_the_data(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent(monitor=True)
    wait_for(lambda: cleanable(world), "a cleanable Orphan")
    world.update_longhorn_node(ready=False)
    wait_for(lambda: world.condition(world.orphan()).get("reason") == "NodeUnavailable", "NodeUnavailable")
    obj = world.orphan()
    assert obj is not None
    world.delete_orphan(obj["metadata"]["name"])
    assert (orphaned / "volume.meta").exists()
    assert any("NodeUnavailable" in e["message"] for e in world.events("DataKept"))
    assert agent.scans_done > 0


def test_node_down_then_back_runs_no_stale_delete(world: World) -> None:
    """The delete requested while the node (and its agent) was away is re-decided, not replayed."""
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent(monitor=True)
    wait_for(lambda: cleanable(world), "a cleanable Orphan")
    stale = world.orphan()
    assert stale is not None and world.condition(stale)["status"] == "True"

    # the node goes down: its agent with it, and Longhorn marks its Node not Ready
    world.stop(agent)
    world.update_longhorn_node(ready=False)
    # someone deletes the Orphan, trusting the stale DataCleanable=True: stuck Terminating
    world.delete_orphan(stale["metadata"]["name"], wait=False)
    terminating = world.orphan()
    assert terminating is not None and terminating["metadata"].get("deletionTimestamp")
    assert world.condition(terminating)["status"] == "True"  # stale, as in the incident

    # the node comes back (a second later at least: timestamps have second precision):
    # Longhorn Ready again, a new agent starts. The API server stamps deletions by the wall
    # clock, so Ready must be stamped by it too: after the stale request, not after the
    # fresh delete below; wait for the clock to pass the request's second (not a fixed 1.1 s)
    requested = datetime.fromisoformat(terminating["metadata"]["deletionTimestamp"])
    wait_for(lambda: datetime.now(UTC) >= requested + timedelta(seconds=1), "the wall clock to pass the request's second")
    world.update_longhorn_node(ready=True)
    back = world.agent(monitor=True)
    wait_for(lambda: (o := world.orphan()) is not None and o["metadata"]["uid"] != stale["metadata"]["uid"],
             "the stale Orphan released and the directory reported afresh")
    assert (orphaned / "volume.meta").exists() and len(list(orphaned.iterdir())) == 6
    [event] = [e for e in world.events("DataKept") if "DeferredDelete" in e["message"]]
    assert "while Longhorn Node" in event["message"] or "before the node agent was running" in event["message"]
    assert not world.events("DataRemoved")
    # the fresh Orphan is decided on fresh facts: deleting it now removes the data
    wait_for(lambda: cleanable(world), "the fresh Orphan cleanable")
    fresh = world.orphan()
    assert fresh is not None
    world.delete_orphan(fresh["metadata"]["name"])
    assert not orphaned.exists()
    assert back.scans_done > 0


# -- mounts ------------------------------------------------------------------------------------


def test_bind_mount_inside_an_orphan_survives_a_delete(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    live = world.mkreplica(world.disk, TRACKED_DIR)
    world.replica(TRACKED_DIR)
    (orphaned / "mnt").mkdir()
    settled(orphaned)  # the mount point made now: not a write of replica data
    proc = subprocess.run(["mount", "--bind", str(live), str(orphaned / "mnt")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, f"mount --bind (the agent tests run as root): {proc.stderr}"
    try:
        agent = world.agent()
        world.settle(agent)
        assert world.data_names() == [ORPHAN_DIR]
        obj = world.orphan()
        assert obj is not None
        world.delete_orphan(obj["metadata"]["name"], wait=False)
        wait_for(lambda: bool(world.events("RemoveRefused")), "the refusal")
        [event] = world.events("RemoveRefused")[:1]
        assert event["type"] == "Warning" and "MountInside" in event["message"]
        assert len(list(live.iterdir())) == 6 and (live / "volume.meta").exists()
        assert world.orphan() is not None  # the finalizer holds: it is retried, not forgotten
    finally:
        subprocess.run(["umount", "-l", str(orphaned / "mnt")], check=False)
    wait_for(lambda: world.orphan() is None, "removal once the mount is gone")
    assert not orphaned.exists()
    assert len(list(live.iterdir())) == 6


# -- shared filesystems ----------------------------------------------------------------------


def test_orphaned_dirs_in_duplicated_disks(world: World) -> None:
    """Ports test_orphaned_dirs_in_duplicated_disks (longhorn-tests test_orphan.py).

    The second disk is a folder inside the first (one filesystem).  Only the first disk's
    orphans are reported; deleting them all empties the first disk and leaves the
    duplicated disk's directories alone.  Longhorn marks the duplicate not Ready; here
    Longhorn's Node says both are Ready, so Kustodian's own filesystem check is what holds.
    """
    dup = make_disk(world.disk / "vol-disk-dup", UUID2)
    world.disks.append(Disk("disk2", str(dup), UUID2))
    world.longhorn_node()
    first = [world.mkreplica(world.disk, f"pvc-aaaa-{i}bcdefgh") for i in range(5)]
    second = [world.mkreplica(dup, f"pvc-bbbb-{i}bcdefgh") for i in range(5)]
    agent = world.agent()
    world.settle(agent)
    assert world.data_names() == sorted(p.name for p in first)
    [s1, s2] = world.config_map(STATUS_KEY)
    assert (s1["conditions"][0]["status"], s2["conditions"][0]["reason"]) == ("True", "DiskFilesystemShared")
    for obj in world.orphans():
        world.delete_orphan(obj["metadata"]["name"])
    assert world.orphans() == []
    assert list((world.disk / "replicas").iterdir()) == []
    assert sorted(p.name for p in (dup / "replicas").iterdir()) == sorted(p.name for p in second)


# -- the mass-orphan brake --------------------------------------------------------------------


def test_mass_orphan_brake_holds_auto_deletion(world: World) -> None:
    world.longhorn_node()
    dirs = [world.mkreplica(world.disk, f"pvc-{i}{i}{i}{i}-abcdefg{i}") for i in range(4)]
    agent = world.agent(orphan_auto_delete=True, orphan_grace_period=0)
    world.clock.offset = timedelta(hours=1)
    for _ in range(3):
        world.settle(agent)
    assert len(world.orphans()) == 4  # reported, so people can look
    assert all(d.exists() for d in dirs)  # but none auto-deleted
    [event] = world.events("MassOrphanBrake")
    assert event["type"] == "Warning" and "4 of 4 replica directories are orphans" in event["message"]
    [status] = world.config_map(STATUS_KEY)
    held = [c for c in status["conditions"] if c["type"] == "AutoDeleteHeld"]
    assert held and held[0]["reason"] == "MassOrphanBrake"
    # a person may still delete one by hand
    world.delete_orphan(world.orphans()[0]["metadata"]["name"])
    assert sum(d.exists() for d in dirs) == 3
    # the Replicas come back for two of the three: one orphan left, below the brake
    remaining = [d for d in dirs if d.exists()]
    for d in remaining[:2]:
        world.replica(d.name)
    wait_for(lambda: len(agent.tracker.ownership().tracked or ()) == 2, "the Replicas in the watch cache")
    world.settle(agent)
    assert world.events("MassOrphanBrakeReleased")
    wait_for(lambda: len(world.orphans()) == 0, "the last orphan auto-deleted once the brake is off")
    assert [d.exists() for d in remaining] == [True, True, False]


# -- live data is never removed on one witness (issue 34) -------------------------------------


class HeadWriter:
    """What an engine serving a replica does: write its head file, again and again, until stopped."""

    def __init__(self, *replicas: Path) -> None:
        self.heads = [next(p for p in sorted(r.glob("volume-head-*.img")) if p.suffix == ".img") for r in replicas]
        self.writes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for head in self.heads:
                with head.open("r+b") as f:
                    f.seek(4096 * (self.writes % 16))
                    f.write(os.urandom(4096))
            self.writes += 1
            self._stop.wait(0.05)

    def __enter__(self) -> HeadWriter:
        self._thread.start()
        wait_for(lambda: self.writes > 0, "the first write")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def test_a_directory_whose_head_file_is_being_written_is_never_removed(world: World) -> None:
    """Every ownership source says orphan (Longhorn's Node Ready, no Replica names it, the disk
    trusted, the brake not engaged): the writes to its head file alone keep it."""
    world.longhorn_node()
    live = world.mkreplica(world.disk, ORPHAN_DIR)
    world.mkreplica(world.disk, TRACKED_DIR)
    world.replica(TRACKED_DIR)  # so that the brake is not what holds it
    with HeadWriter(live):
        agent = world.agent(orphan_auto_delete=True, orphan_grace_period=0)
        world.clock.offset = timedelta(hours=1)
        for _ in range(3):
            world.settle(agent)
        wait_for(lambda: world.condition(world.orphan()).get("reason") == "DataInUse", "DataInUse")
        obj = world.orphan()
        assert obj is not None  # reported: every ownership source says orphan
        cond = world.condition(obj)
        assert (cond["status"], cond["reason"]) == ("False", "DataInUse")
        assert "live data is never removed" in cond["message"]
        assert not world.events("MassOrphanBrake") and not world.events("AutoDelete")
        # a person's delete: the Orphan is released, the data kept
        world.delete_orphan(obj["metadata"]["name"])
        assert (live / "volume.meta").exists() and len(list(live.iterdir())) == 6
        assert any("DataInUse" in e["message"] for e in world.events("DataKept"))
        assert not world.events("DataRemoved")
    # quiet for the write grace: the next look finds an idle orphan, removed as before
    settled(live)
    world.settle(agent)
    agent.reconcile_all()  # what the requeue at the end of the write grace does
    wait_for(lambda: world.orphan() is None and not live.exists(), "the idle orphan auto-deleted")


def test_two_live_directories_beside_a_stale_longhorn_node_are_not_removed(world: World) -> None:
    """The incident: a Ready copy of this node's Longhorn Node (same disk path and UUID, no Replicas)
    in the namespace the agent was told, auto-deletion on: both directories of the disk look
    orphaned.  Two witnesses hold them, each on its own: the writes, and the brake."""
    world.longhorn_node()  # the stale copy: Ready, this disk, no scheduled Replica, no Replica object
    dirs = [world.mkreplica(world.disk, ORPHAN_DIR), world.mkreplica(world.disk, TRACKED_DIR)]
    with HeadWriter(*dirs):
        agent = world.agent(orphan_auto_delete=True, orphan_grace_period=0)
        world.clock.offset = timedelta(hours=1)
        for _ in range(3):
            world.settle(agent)
        assert world.data_names() == sorted([ORPHAN_DIR, TRACKED_DIR])
        wait_for(lambda: {world.condition(o).get("reason") for o in world.orphans()} == {"DataInUse"},
                 "both DataInUse")
        [event] = world.events("MassOrphanBrake")
        assert "all 2 replica directories of the disk turned orphan at once" in event["message"]
        assert all((d / "volume.meta").exists() and len(list(d.iterdir())) == 6 for d in dirs)
    # the engines stop writing: the brake alone still holds them
    for d in dirs:
        settled(d)
    world.settle(agent)
    agent.reconcile_all()  # what the requeue at the end of the write grace does
    assert agent.controller.wait_idle(10)
    assert {world.condition(o)["reason"] for o in world.orphans()} == {"Cleanable"}
    assert len(world.orphans()) == 2 and all(d.exists() for d in dirs)
    assert not world.events("AutoDelete") and not world.events("DataRemoved")


def test_a_volume_meta_corrupted_after_the_report_is_not_removed(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    world.mkreplica(world.disk, TRACKED_DIR)
    world.replica(TRACKED_DIR)
    agent = world.agent()
    world.settle(agent)
    wait_for(lambda: cleanable(world), "a cleanable Orphan")
    # corrupted after the report; old timestamps, so that only volume.meta can tell
    (orphaned / "volume.meta").write_bytes(b'{"Size": "not a replica"')
    settled(orphaned)
    world.settle(agent)  # the cached scan reuses the entry it found valid
    assert agent._scans[str(world.disk)].entries[ORPHAN_DIR].has_valid_meta
    agent.reconcile_all()
    wait_for(lambda: world.condition(world.orphan()).get("reason") == "DataInvalid", "DataInvalid")
    assert "volume.meta read again is not valid" in world.condition(world.orphan())["message"]
    obj = world.orphan()
    assert obj is not None
    world.delete_orphan(obj["metadata"]["name"])
    assert orphaned.exists() and len(list(orphaned.iterdir())) == 6
    assert any("DataInvalid" in e["message"] for e in world.events("DataKept"))
    assert not world.events("DataRemoved")


def other_agent(world: World, **group: Any) -> NodeAgent:
    """An agent on another node of the same cluster (no disks of its own)."""
    config = NodeAgentSettings(kube={"namespace": world.ns},
                               node_agent={"node_name": f"{world.node}-other", "disks": [],
                                           "longhorn_namespace": world.ns, **group})
    return world.start(config)


def gone(world: World, agent: NodeAgent, watcher: NodeAgent) -> dict[str, Any]:
    """``agent``'s node goes away with its agent; ``watcher`` sees its heartbeat expire."""
    assert agent.heartbeat is not None and watcher.heartbeat is not None
    agent.heartbeat.beat_once()
    world.stop(agent)
    watcher.heartbeat.beat_once()
    stale = world.orphan()
    assert stale is not None and world.condition(stale)["status"] == "True"  # heartbeat still valid
    world.clock.offset += timedelta(seconds=61)  # past the default 60 s heartbeat timeout
    watcher.heartbeat.beat_once()
    wait_for(lambda: world.condition(world.orphan()).get("reason") == "NodeAgentGone", "NodeAgentGone")
    obj = world.orphan()
    assert obj is not None
    cond = world.condition(obj)
    assert cond["status"] == "False" and "last renewed its heartbeat" in cond["message"]
    return obj


def test_a_node_whose_agent_is_gone_shows_its_orphans_not_cleanable_until_it_returns(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent()
    world.settle(agent)
    wait_for(lambda: cleanable(world), "a cleanable Orphan")
    watcher = other_agent(world)
    obj = gone(world, agent, watcher)
    # a delete now waits: nobody may judge the data, and the node is still in Longhorn
    world.delete_orphan(obj["metadata"]["name"], wait=False)
    watcher.heartbeat.beat_once()  # type: ignore[union-attr]
    terminating = world.orphan()
    assert terminating is not None and terminating["metadata"].get("deletionTimestamp")
    assert world.condition(terminating)["reason"] == "NodeAgentGone"
    # the agent returns: the delete was requested while it was away, so the data is kept
    requested = datetime.fromisoformat(terminating["metadata"]["deletionTimestamp"])
    wait_for(lambda: datetime.now(UTC) >= requested + timedelta(seconds=1), "the wall clock to pass the request's second")
    back = world.agent()
    world.settle(back)
    wait_for(lambda: (o := world.orphan()) is None or o["metadata"]["uid"] != obj["metadata"]["uid"],
             "the delete answered")
    assert (orphaned / "volume.meta").exists() and len(list(orphaned.iterdir())) == 6
    assert any("DeferredDelete" in e["message"] for e in world.events("DataKept"))


def test_a_delete_on_a_node_removed_from_longhorn_is_answered_by_another_agent(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent()
    world.settle(agent)
    wait_for(lambda: cleanable(world), "a cleanable Orphan")
    watcher = other_agent(world)
    obj = gone(world, agent, watcher)
    world.delete_orphan(obj["metadata"]["name"], wait=False)
    watcher.heartbeat.beat_once()  # type: ignore[union-attr]
    assert world.orphan() is not None  # still in Longhorn: waits for the agent
    world.client.delete(LONGHORN_NODES, world.node, world.ns)
    watcher.heartbeat.beat_once()  # type: ignore[union-attr]
    wait_for(lambda: world.orphan() is None, "the Orphan released")
    assert (orphaned / "volume.meta").exists()
    assert any("removed from Longhorn" in e["message"] for e in world.events("DataKept"))


# -- living beside Longhorn --------------------------------------------------------------------


def test_kubectl_get_orphans_lists_longhorns_when_both_crds_are_installed(world: World) -> None:
    world.longhorn_node()
    world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent()
    world.settle(agent)
    assert len(world.orphans()) == 1
    world.client.create(LONGHORN_ORPHANS, {
        "apiVersion": "longhorn.io/v1beta2", "kind": "Orphan",
        "metadata": {"name": "orphan-longhorns-own", "namespace": world.ns},
        "spec": {"nodeID": world.node, "orphanType": "replica-data", "dataEngine": "v1",
                 "parameters": {"DataName": TRACKED_DIR, "DiskName": "disk1", "DiskUUID": UUID,
                                "DiskPath": str(world.disk), "DiskType": "filesystem"}}})
    for args in (["orphans"], ["orphan"], ["lho"]):
        out = world.api.kubectl("get", *args, "-n", world.ns, "-o", "name").stdout.split()
        assert out == ["orphan.longhorn.io/orphan-longhorns-own"], (args, out)
    ours = [f"orphanedreplicadir.kustodian.io/{orphan_name(world.node, UUID, ORPHAN_DIR)}"]
    for args in (["orphanedreplicadirs"], ["ordir"], ["orphanedreplicadirs.kustodian.io"]):
        assert world.api.kubectl("get", *args, "-n", world.ns, "-o", "name").stdout.split() == ours, args
    table = world.api.kubectl("get", "ordir", "-n", world.ns).stdout
    assert "CLEANABLE" in table.splitlines()[0] and ORPHAN_DIR in table


# -- longhorn-tests' orphan scenarios ----------------------------------------------------------


def test_orphaned_dirs_with_wrong_naming_format(world: World) -> None:
    """Ports test_orphaned_dirs_with_wrong_naming_format: only the valid directory is reported."""
    world.longhorn_node()
    world.mkreplica(world.disk, ORPHAN_DIR)
    volume = "pvc-7777"
    replicas = world.disk / "replicas"
    (replicas / volume).mkdir()  # 8-byte random id missing
    world.mkreplica(world.disk, f"{volume}-abcd")  # wrong random id length
    (world.mkreplica(world.disk, f"{volume}-aaaa1111") / "volume.meta").unlink()  # volume.meta missing
    (world.mkreplica(world.disk, f"{volume}-bbbb2222") / "volume.meta").write_text("xxx")  # corrupted
    agent = world.agent()
    world.settle(agent)
    assert world.data_names() == [ORPHAN_DIR]


def test_delete_orphans(world: World) -> None:
    """Ports test_delete_orphans: five orphans reported, all deleted, the replicas dir empty."""
    world.longhorn_node()
    for i in range(5):
        world.mkreplica(world.disk, f"pvc-5555-{i}000000a")
    agent = world.agent(monitor=True)
    wait_for(lambda: len(world.orphans()) == 5 and all(cleanable(world, o["spec"]["parameters"]["DataName"])
                                                       for o in world.orphans()), "five cleanable Orphans")
    for obj in world.orphans():
        world.delete_orphan(obj["metadata"]["name"])
    assert world.orphans() == []
    assert list((world.disk / "replicas").iterdir()) == []
    assert agent.scans_done > 0


def test_orphaned_replica_dir_missing(world: World) -> None:
    """Ports test_orphaned_replica_dir_missing: the Orphan goes in the background once its dir is gone."""
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent(monitor=True)
    wait_for(lambda: len(world.orphans()) == 1, "the Orphan")
    shutil.rmtree(orphaned)
    wait_for(lambda: world.orphans() == [], "the Orphan pruned in the background")
    assert not world.events("DataRemoved")
    assert agent.scans_done > 0


def test_delete_orphan_after_orphaned_dir_is_deleted(world: World) -> None:
    """Ports test_delete_orphan_after_orphaned_dir_is_deleted: deleting it right after the dir went."""
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = world.agent()
    world.settle(agent)
    obj = world.orphan()
    assert obj is not None
    shutil.rmtree(orphaned)
    world.delete_orphan(obj["metadata"]["name"])
    assert world.orphans() == []


@pytest.fixture
def second_fs(tmp_path: Path) -> Iterator[Path]:
    """A directory on a filesystem of its own (a tmpfs): a second Longhorn disk, really separate."""
    path = tmp_path / "second-fs"
    path.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(path)], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"mount -t tmpfs (the agent tests run as root): {proc.stderr.strip()}")
    yield path
    subprocess.run(["umount", "-l", str(path)], check=False)


def two_disks(world: World, second_fs: Path) -> Path:
    second = make_disk(second_fs / "disk2", UUID2)
    world.disks.append(Disk("disk2", str(second), UUID2))
    world.longhorn_node()
    return second


def test_orphan_creation_and_deletion_in_multiple_disks(world: World, second_fs: Path) -> None:
    """Ports test_orphan_creation_and_deletion_in_multiple_disks: 5 per disk, all deleted, both empty."""
    second = two_disks(world, second_fs)
    for disk, tag in ((world.disk, "a"), (second, "b")):
        for i in range(5):
            world.mkreplica(disk, f"pvc-{tag}{tag}{tag}{tag}-{i}1234567", copy=disk == second)
    agent = world.agent()
    world.settle(agent)
    assert len(world.orphans()) == 10
    assert {o["spec"]["parameters"]["DiskName"] for o in world.orphans()} == {"disk1", "disk2"}
    for obj in world.orphans():
        world.delete_orphan(obj["metadata"]["name"])
    assert world.orphans() == []
    assert list((world.disk / "replicas").iterdir()) == list((second / "replicas").iterdir()) == []


def test_orphan_creation_and_background_deletion_in_multiple_disks(world: World, second_fs: Path) -> None:
    """Ports test_orphan_creation_and_background_deletion_in_multiple_disks: dirs removed by hand."""
    second = two_disks(world, second_fs)
    made = [world.mkreplica(disk, f"pvc-{tag}{tag}{tag}{tag}-{i}1234567", copy=disk == second)
            for disk, tag in ((world.disk, "a"), (second, "b")) for i in range(5)]
    agent = world.agent(monitor=True)
    wait_for(lambda: len(world.orphans()) == 10, "ten Orphans")
    for path in made:
        shutil.rmtree(path)
    wait_for(lambda: world.orphans() == [], "all Orphans pruned in the background")
    assert agent.scans_done > 0


def test_orphan_auto_deletion(world: World) -> None:
    """Ports test_orphan_auto_deletion: enabling Longhorn's setting deletes orphan and directory.

    Kustodian has no auto-deletion setting of its own here (the chart default): Longhorn's
    ``orphan-resource-auto-deletion`` and its grace period decide.
    """
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    world.setting("orphan-resource-auto-deletion", "")
    world.setting("orphan-resource-auto-deletion-grace-period", "60")
    agent = world.agent(monitor=True)
    wait_for(lambda: cleanable(world), "a cleanable Orphan")
    world.clock.offset = timedelta(seconds=120)  # past Longhorn's grace period
    agent.reconcile_all()
    assert agent.controller.wait_idle(10)
    assert world.orphan() is not None and orphaned.exists()  # Longhorn's setting: off

    world.setting("orphan-resource-auto-deletion", "replica-data")
    wait_for(lambda: agent.auto_deletion().enabled, "the setting in the watch cache")
    world.clock.offset = timedelta(seconds=30)  # inside Longhorn's 60 s grace: not yet
    agent.reconcile_all()
    assert agent.controller.wait_idle(10)
    assert world.orphan() is not None and orphaned.exists()
    world.clock.offset = timedelta(seconds=120)
    agent.reconcile_all()
    wait_for(lambda: world.orphan() is None, "the Orphan auto-deleted")
    assert list((world.disk / "replicas").iterdir()) == []
    [event] = world.events("AutoDelete")
    assert "orphan-resource-auto-deletion" in event["message"]


def test_chart_setting_overrides_longhorns_auto_deletion(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    world.setting("orphan-resource-auto-deletion", "replica-data")
    world.setting("orphan-resource-auto-deletion-grace-period", "0")
    agent = world.agent(orphan_auto_delete=False)
    world.settle(agent)
    world.clock.offset = timedelta(hours=1)
    agent.reconcile_all()
    assert agent.controller.wait_idle(10)
    assert world.orphan() is not None and orphaned.exists()
