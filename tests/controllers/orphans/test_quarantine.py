"""Quarantine before removal (issue 37), on real replica directories and the real API server.

Every replica directory is written by ``mkreplica`` (longhorn-engine's own replica code), Longhorn's
CRDs are applied as they are and the OrphanedReplicaDir CRD comes from the chart (see
``test_node_agent``, whose world these tests share).  Time passes through the agent's injected
clock: no test sleeps through a retention.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kustodian.cli.main import main
from kustodian.controllers.orphans.quarantine import (
    apparent_size,
    purge_quarantined,
    quarantine_replica_dir,
    restore_quarantined,
)
from kustodian.controllers.orphans.scan import RemovalOutcome
from kustodian.policy.orphans import ANNOTATION_RESTORE
from kustodian.policy.timestamps import parse_rfc3339
from tests.conftest import KubeApi
from tests.controllers.orphans.test_node_agent import ORPHAN_DIR, TRACKED_DIR, UUID, World, make_disk, settled
from tests.support import wait_for

pytestmark = pytest.mark.api

QUARANTINE = "kustodian-quarantine"


def snapshot(path: Path) -> dict[str, tuple[int, str]]:
    """Every file below ``path``: its inode and the sha256 of its content."""
    return {str(p.relative_to(path)): (p.stat().st_ino, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(path.rglob("*")) if p.is_file()}


def du_sb(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def state_of(world: World) -> str:
    return str(((world.orphan() or {}).get("status") or {}).get("state", ""))


def quarantining_agent(world: World, **kw: Any) -> Any:
    kw.setdefault("quarantine_retention", "2h")
    kw.setdefault("quarantine_min_retention", "30m")
    kw.setdefault("quarantine_pressure_free", 0)
    return world.agent(**kw)


def delete_into_quarantine(world: World, agent: Any) -> dict[str, Any]:
    world.settle(agent)
    wait_for(lambda: state_of(world) == "Reported", "the Orphan reported")
    obj = world.orphan()
    assert obj is not None
    world.delete_orphan(obj["metadata"]["name"], wait=False)
    wait_for(lambda: state_of(world) == "Quarantined", "the directory quarantined")
    quarantined = world.orphan()
    assert quarantined is not None
    return quarantined


# -- delete -> quarantined -> removed ---------------------------------------------------------------


def test_delete_moves_the_directory_into_quarantine_and_the_retention_removes_it(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR, snapshots=2)
    tracked = world.mkreplica(world.disk, TRACKED_DIR)
    world.replica(TRACKED_DIR)
    before = snapshot(orphaned)
    inode, dev = orphaned.stat().st_ino, orphaned.stat().st_dev
    agent = quarantining_agent(world)

    obj = delete_into_quarantine(world, agent)
    held = world.disk / QUARANTINE / ORPHAN_DIR
    assert not orphaned.exists()
    assert (held.stat().st_ino, held.stat().st_dev) == (inode, dev)  # the same directory, one rename
    assert snapshot(held) == before  # the same files, the same inodes: nothing copied
    assert obj["metadata"]["deletionTimestamp"] and obj["metadata"]["finalizers"]
    status = obj["status"]
    since, until = parse_rfc3339(status["quarantinedAt"]), parse_rfc3339(status["removeAfter"])
    assert since is not None and until is not None and until - since == timedelta(hours=2)
    [event] = world.events("DataQuarantined")
    assert str(held) in event["message"] and "nothing copied" in event["message"]
    assert not world.events("DataRemoved")
    # Longhorn's place is replicas/: the agent's own scan does not see the quarantine, nothing is reported
    world.settle(agent)
    assert QUARANTINE not in agent.scan_disks(record=False)[0].entries
    assert [o["metadata"]["uid"] for o in world.orphans()] == [obj["metadata"]["uid"]]

    world.clock.offset = timedelta(hours=1, minutes=59)
    agent.reconcile_all()
    assert agent.controller.wait_idle(10)
    assert held.is_dir() and state_of(world) == "Quarantined"

    world.clock.offset = timedelta(hours=2, seconds=1)
    agent.reconcile_all()
    wait_for(lambda: world.orphan() is None, "the Orphan released once the retention passed")
    assert not held.exists() and not orphaned.exists()
    assert world.events("DataRemoved")
    assert len(list(tracked.iterdir())) == 6 and (tracked / "volume.meta").exists()


def test_a_disk_under_pressure_keeps_quarantined_data_for_the_floor_only(world: World) -> None:
    world.longhorn_node()
    world.mkreplica(world.disk, ORPHAN_DIR)
    agent = quarantining_agent(world, quarantine_pressure_free=0.999999)  # every real disk is "full"
    obj = delete_into_quarantine(world, agent)
    since, until = (parse_rfc3339(obj["status"][k]) for k in ("quarantinedAt", "removeAfter"))
    assert since is not None and until is not None and until - since == timedelta(minutes=30)


def test_auto_deletion_quarantines_too_and_a_restarted_agent_keeps_the_quarantine(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    world.mkreplica(world.disk, TRACKED_DIR)
    world.replica(TRACKED_DIR)  # one owned directory: the disk did not turn orphan at once (the brake)
    inode = orphaned.stat().st_ino
    agent = quarantining_agent(world, orphan_auto_delete=True, orphan_grace_period=0)
    world.settle(agent)
    wait_for(lambda: state_of(world) == "Quarantined", "auto-deletion moved the directory into quarantine")
    held = world.disk / QUARANTINE / ORPHAN_DIR
    assert held.stat().st_ino == inode and not orphaned.exists()
    obj = world.orphan()
    assert obj is not None
    remove_after = obj["status"]["removeAfter"]

    # the agent restarts while the data is in quarantine: the delete predates it, yet nothing is
    # released (the quarantine is the agent's own, read back from the disk and the object)
    world.stop(agent)
    again = quarantining_agent(world)
    world.settle(again)
    assert again.controller.wait_idle(10)
    current = world.orphan()
    assert current is not None and current["status"]["removeAfter"] == remove_after
    assert held.is_dir() and not world.events("DataKept")

    world.clock.offset = timedelta(hours=2, seconds=1)
    again.reconcile_all()
    wait_for(lambda: world.orphan() is None, "removed for good after the retention, by the new agent")
    assert not held.exists()


# -- restore ---------------------------------------------------------------------------------


def restore(kube_api: KubeApi, world: World, name: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(["orphans", "restore", name, "--kubeconfig", str(kube_api.kubeconfig),
               "--kustodian-namespace", world.ns, "--timeout", "30"])
    out, err = capsys.readouterr()
    return rc, out, err


def test_restore_puts_the_directory_back_with_identical_content(world: World, kube_api: KubeApi,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR, snapshots=2)
    before, inode = snapshot(orphaned), orphaned.stat().st_ino
    agent = quarantining_agent(world)
    obj = delete_into_quarantine(world, agent)

    rc, out, err = restore(kube_api, world, obj["metadata"]["name"], capsys)
    assert (rc, err) == (0, ""), err
    assert "restored" in out and len(out.splitlines()) == 1
    assert orphaned.stat().st_ino == inode and snapshot(orphaned) == before
    assert not (world.disk / QUARANTINE / ORPHAN_DIR).exists()
    assert world.events("DataRestored") and not world.events("DataRemoved")
    # released; the next scan reports the directory afresh, as any directory nobody owns
    wait_for(lambda: (o := world.orphan()) is None or o["metadata"]["uid"] != obj["metadata"]["uid"],
             "the quarantined Orphan released")
    world.settle(agent)
    wait_for(lambda: state_of(world) == "Reported", "the restored directory reported afresh")
    fresh = world.orphan()
    assert fresh is not None and fresh["metadata"]["uid"] != obj["metadata"]["uid"]


def test_restore_onto_a_path_now_in_use_is_refused(world: World, kube_api: KubeApi,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    world.longhorn_node()
    world.mkreplica(world.disk, ORPHAN_DIR)
    agent = quarantining_agent(world)
    obj = delete_into_quarantine(world, agent)
    held = world.disk / QUARANTINE / ORPHAN_DIR
    before = snapshot(held)
    squatter = world.disk / "replicas" / ORPHAN_DIR
    squatter.mkdir()
    (squatter / "new-data").write_bytes(b"someone else's")

    rc, out, err = restore(kube_api, world, obj["metadata"]["name"], capsys)
    assert rc == 1 and out == ""
    [line] = err.splitlines()
    assert "refused" in line and "something now lives there" in line, line
    assert snapshot(held) == before and sorted(p.name for p in squatter.iterdir()) == ["new-data"]
    current = world.orphan()
    assert current is not None and current["status"]["state"] == "Quarantined"
    assert current["status"]["restore"]["result"] == "Refused"
    assert current["metadata"]["annotations"][ANNOTATION_RESTORE] == current["status"]["restore"]["request"]
    assert world.events("RestoreRefused")


def test_restore_of_an_orphan_that_is_not_quarantined_is_one_line_and_exit_1(
        world: World, kube_api: KubeApi, capsys: pytest.CaptureFixture[str]) -> None:
    world.longhorn_node()
    world.mkreplica(world.disk, ORPHAN_DIR)
    agent = quarantining_agent(world)
    world.settle(agent)
    wait_for(lambda: state_of(world) == "Reported", "the Orphan reported")
    obj = world.orphan()
    assert obj is not None
    rc, out, err = restore(kube_api, world, obj["metadata"]["name"], capsys)
    assert rc == 1 and out == "" and len(err.splitlines()) == 1 and "not quarantined" in err
    rc, _, err = restore(kube_api, world, "no-such-ordir", capsys)
    assert rc == 3 and len(err.splitlines()) == 1 and "not found" in err


# -- refused before any rename -------------------------------------------------------------------


def quarantine_entries(disk: Path) -> list[str]:
    q = disk / QUARANTINE
    return sorted(p.name for p in q.iterdir()) if q.exists() else []


def test_a_mount_inside_the_directory_is_refused_before_any_rename(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    live = world.mkreplica(world.disk, TRACKED_DIR)
    world.replica(TRACKED_DIR)
    (orphaned / "mnt").mkdir()
    settled(orphaned)
    proc = subprocess.run(["mount", "--bind", str(live), str(orphaned / "mnt")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, f"mount --bind (the agent tests run as root): {proc.stderr}"
    try:
        agent = quarantining_agent(world)
        world.settle(agent)
        obj = world.orphan()
        assert obj is not None
        world.delete_orphan(obj["metadata"]["name"], wait=False)
        wait_for(lambda: bool(world.events("RemoveRefused")), "the refusal")
        assert "MountInside" in world.events("RemoveRefused")[0]["message"]
        assert (orphaned / "volume.meta").exists() and quarantine_entries(world.disk) == []
        assert state_of(world) == "Reported"  # not quarantined: the status was never moved on
    finally:
        subprocess.run(["umount", "-l", str(orphaned / "mnt")], check=False)
    assert len(list(live.iterdir())) == 6


def test_a_live_replica_is_never_quarantined(world: World) -> None:
    """A Replica names the directory again once the delete was asked: the data is kept in place."""
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR)
    agent = quarantining_agent(world)
    world.settle(agent)
    obj = world.orphan()
    assert obj is not None
    world.replica(ORPHAN_DIR)
    world.delete_orphan(obj["metadata"]["name"])
    assert (orphaned / "volume.meta").exists() and quarantine_entries(world.disk) == []
    assert world.events("DataKept") and not world.events("DataQuarantined")


def test_the_move_itself_refuses_symlinks_live_data_and_an_unusable_quarantine(tmp_path: Path,
                                                                               mkreplica: Path) -> None:
    disk = make_disk(tmp_path / "disk")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def replica(at: Path, name: str) -> Path:
        subprocess.run([str(mkreplica), "-dir", str(at / name), "-size", str(16 << 20)], check=True,
                       capture_output=True)
        return at / name

    real = replica(elsewhere, ORPHAN_DIR)
    os.symlink(real, disk / "replicas" / ORPHAN_DIR)
    result = quarantine_replica_dir(str(disk), ORPHAN_DIR, UUID)
    assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "NotADirectory")
    assert (disk / "replicas" / ORPHAN_DIR).is_symlink() and quarantine_entries(disk) == []
    (disk / "replicas" / ORPHAN_DIR).unlink()

    fresh = replica(disk / "replicas", ORPHAN_DIR)  # written just now: live data
    result = quarantine_replica_dir(str(disk), ORPHAN_DIR, UUID, quiet_for=600)
    assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "RecentlyWritten")
    assert fresh.is_dir() and quarantine_entries(disk) == []

    settled(fresh)
    os.symlink(elsewhere, disk / QUARANTINE)  # the quarantine folder leads elsewhere: never followed
    result = quarantine_replica_dir(str(disk), ORPHAN_DIR, UUID, quiet_for=600)
    assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "QuarantineUnusable")
    assert fresh.is_dir() and sorted(p.name for p in elsewhere.iterdir()) == [ORPHAN_DIR]
    (disk / QUARANTINE).unlink()

    result = quarantine_replica_dir(str(disk), ORPHAN_DIR, "another-uuid", quiet_for=600)
    assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "DiskUUIDMismatch")
    result = quarantine_replica_dir(str(disk), ORPHAN_DIR, UUID, quiet_for=600)
    assert result.outcome == RemovalOutcome.QUARANTINED, result
    assert restore_quarantined(str(disk), ORPHAN_DIR, "another-uuid").reason == "DiskUUIDMismatch"
    assert purge_quarantined(str(disk), ORPHAN_DIR, "another-uuid").reason == "DiskUUIDMismatch"
    assert (disk / QUARANTINE / ORPHAN_DIR / "volume.meta").exists()


def test_a_bind_mount_on_the_quarantine_folder_is_never_renamed_across(tmp_path: Path, mkreplica: Path) -> None:
    disk = make_disk(tmp_path / "disk")
    subprocess.run([str(mkreplica), "-dir", str(disk / "replicas" / ORPHAN_DIR), "-size", str(16 << 20)],
                   check=True, capture_output=True)
    settled(disk / "replicas" / ORPHAN_DIR)
    other = tmp_path / "other"
    other.mkdir()
    (disk / QUARANTINE).mkdir()
    proc = subprocess.run(["mount", "--bind", str(other), str(disk / QUARANTINE)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, f"mount --bind (the agent tests run as root): {proc.stderr}"
    try:
        assert os.stat(disk / QUARANTINE).st_dev == os.stat(disk).st_dev  # st_dev alone cannot tell
        result = quarantine_replica_dir(str(disk), ORPHAN_DIR, UUID)
        assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "QuarantineOtherMount")
        assert (disk / "replicas" / ORPHAN_DIR / "volume.meta").exists() and list(other.iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(disk / QUARANTINE)], check=False)


def test_restore_checks_the_quarantined_directory_again(tmp_path: Path, mkreplica: Path) -> None:
    """A mount that appeared inside the quarantined directory, or a volume.meta that no longer parses,
    stops the restore before its rename; a clean one goes back, same inode."""
    disk = make_disk(tmp_path / "disk")
    made = disk / "replicas" / ORPHAN_DIR
    subprocess.run([str(mkreplica), "-dir", str(made), "-size", str(16 << 20)], check=True, capture_output=True)
    settled(made)
    inode = made.stat().st_ino
    assert quarantine_replica_dir(str(disk), ORPHAN_DIR, UUID).outcome == RemovalOutcome.QUARANTINED
    held = disk / QUARANTINE / ORPHAN_DIR
    other = tmp_path / "other"
    other.mkdir()
    (held / "mnt").mkdir()
    proc = subprocess.run(["mount", "--bind", str(other), str(held / "mnt")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, f"mount --bind (the agent tests run as root): {proc.stderr}"
    try:
        result = restore_quarantined(str(disk), ORPHAN_DIR, UUID)
        assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "MountInside")
        assert held.is_dir() and not made.exists()
        result = purge_quarantined(str(disk), ORPHAN_DIR, UUID)  # nor removed across it
        assert (result.outcome, result.reason) == (RemovalOutcome.REFUSED, "MountInside")
    finally:
        subprocess.run(["umount", "-l", str(held / "mnt")], check=False)
    (held / "mnt").rmdir()
    meta = (held / "volume.meta").read_bytes()
    (held / "volume.meta").write_bytes(b"{corrupt")
    assert restore_quarantined(str(disk), ORPHAN_DIR, UUID).reason == "MetaInvalid"
    (held / "volume.meta").write_bytes(meta)
    result = restore_quarantined(str(disk), ORPHAN_DIR, UUID)
    assert result.outcome == RemovalOutcome.RESTORED, result
    assert made.stat().st_ino == inode and not held.exists()


# -- size -------------------------------------------------------------------------------------


def test_size_on_the_object_and_in_the_metrics_is_what_du_sb_says(world: World) -> None:
    world.longhorn_node()
    orphaned = world.mkreplica(world.disk, ORPHAN_DIR, snapshots=2)
    (orphaned / "extra").mkdir()
    (orphaned / "extra" / "notes").write_bytes(b"x" * 12345)
    os.link(orphaned / "extra" / "notes", orphaned / "extra" / "notes-link")  # counted once, as du does
    os.symlink("volume.meta", orphaned / "extra" / "meta-link")
    settled(orphaned)
    agent = quarantining_agent(world)
    manager = world.agents[id(agent)][1]
    world.settle(agent)

    def metric(state_label: str) -> float | None:
        return manager.registry.get_sample_value("kustodian_orphan_bytes", {
            "node": world.node, "disk": "disk1", "state": state_label})

    expected = du_sb(orphaned)
    assert expected == apparent_size(str(world.disk), ORPHAN_DIR, quarantined=False)
    wait_for(lambda: agent.measure_sizes().get(("disk1", "reported")) == expected, "the sizer's pass")
    obj = world.orphan()
    assert obj is not None and obj["status"]["sizeBytes"] == expected
    assert (metric("reported"), metric("quarantined")) == (expected, 0)

    delete_into_quarantine(world, agent)
    held = world.disk / QUARANTINE / ORPHAN_DIR
    assert du_sb(held) == expected
    wait_for(lambda: agent.measure_sizes().get(("disk1", "quarantined")) == expected, "the sizer's pass")
    assert (metric("reported"), metric("quarantined")) == (0, expected)
    # kubectl get ordir: the chart's printer columns
    table = world.api.kubectl("get", "ordir", "-n", world.ns).stdout.splitlines()
    header = table[0].split()
    assert header[5:8] == ["STATE", "SIZE", "REMOVEAFTER"], header
    assert table[1].split()[5:7] == ["Quarantined", str(expected)]
