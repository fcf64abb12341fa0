"""``kustodian node-cleanup plan`` against the real API server: a Node deleted with a local PV and
its PVC, a PV of a live Node beside it; and the plan's deadline is the one the running controller
keeps (its own stamp on the PV plus the delay), so the dry run cannot drift from what it does."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.errors import EXIT_CONFIG
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import NODES, PERSISTENT_VOLUMES
from kustodian.policy.node_cleanup import parse_rfc3339
from tests.cli.support import run
from tests.conftest import KubeApi
from tests.controllers.node_cleanup.test_node_cleanup_e2e import MISSING, pv_annotations, start, world
from tests.support import wait_for

__all__ = ["world"]  # a fixture

DELAY = timedelta(minutes=10)


@pytest.fixture
def live_pv(kube_api: KubeApi, world: dict[str, Any]) -> Iterator[str]:
    """A second Node that stays, with a local PV of the same class pinned to it."""
    client = kube_api.client
    node = f"live-{uuid.uuid4().hex[:6]}"
    client.create(NODES, {"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}})
    client.create(PERSISTENT_VOLUMES, {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{node}"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": world["sc"],
                 "persistentVolumeReclaimPolicy": "Delete", "local": {"path": "/mnt/disks/ssd1"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}})
    yield f"pv-{node}"
    for res, name in ((PERSISTENT_VOLUMES, f"pv-{node}"), (NODES, node)):
        with contextlib.suppress(NotFound):
            client.delete(res, name)


def plan(kube_api: KubeApi, tmp_path: Path, sc: str, *extra: str) -> dict[str, dict[str, Any]]:
    proc = run(tmp_path, "node-cleanup", "plan", "--kubeconfig", str(kube_api.kubeconfig),
               "--storageclass-names", sc, "--pvc-deletion-delay", "10m", "-o", "json", *extra)
    assert proc.returncode == 0, proc.stderr
    return {v["name"]: v for v in json.loads(proc.stdout)["volumes"]}


@pytest.mark.api
def test_the_plan_lists_the_lost_nodes_volume_with_its_eligible_time(
        kube_api: KubeApi, world: dict[str, Any], live_pv: str, tmp_path: Path) -> None:
    alive = plan(kube_api, tmp_path, world["sc"])
    assert alive[world["pv"]]["claimAction"] == "Keep" and alive[world["pv"]]["reason"] == "NodeExists"

    kube_api.client.delete(NODES, world["node"])
    before = datetime.now(UTC)
    rows = plan(kube_api, tmp_path, world["sc"])
    after = datetime.now(UTC)
    lost = rows[world["pv"]]
    assert lost["claim"] == {"namespace": world["ns"], "name": "data-0"}
    assert (lost["claimAction"], lost["volumeAction"], lost["reason"]) == ("Wait", "AfterClaim", "NodeMissing")
    # no controller has stamped the PV: the delay would start now (the stamp rounds up to a second)
    eligible = parse_rfc3339(lost["eligibleAt"])
    assert eligible is not None and lost["timerStartsNow"] is True
    assert before.replace(microsecond=0) + DELAY <= eligible <= after + DELAY + timedelta(seconds=1)
    kept = rows[live_pv]
    assert (kept["claimAction"], kept["volumeAction"], kept["eligibleAt"]) == ("Keep", "Keep", None)
    assert kept["reason"] == "NodeExists"
    # the plan wrote nothing: no stamp on the PV, the PVC still there
    assert MISSING not in pv_annotations(kube_api, world["pv"])
    # another class is none of this run's business: the PV is listed as not opted in
    other = plan(kube_api, tmp_path, "someone-else")
    assert other[world["pv"]]["reason"] == "NotOptedIn" and other[world["pv"]]["claimAction"] == "Keep"

    table = run(tmp_path, "node-cleanup", "plan", "--kubeconfig", str(kube_api.kubeconfig),
                "--storageclass-names", world["sc"], "--pvc-deletion-delay", "10m")
    assert table.returncode == 0, table.stderr
    line = next(r for r in table.stdout.splitlines() if r.startswith(world["pv"]))
    assert f"{world['ns']}/data-0" in line and "Wait" in line and "(timer starts now)" in line


@pytest.mark.api
def test_the_plan_gives_the_running_controllers_deadline(kube_api: KubeApi, world: dict[str, Any],
                                                         tmp_path: Path) -> None:
    app = start(kube_api, world, lambda: datetime.now(UTC), delay="10m")
    try:
        kube_api.client.delete(NODES, world["node"])
        wait_for(lambda: MISSING in pv_annotations(kube_api, world["pv"]), "the controller's missing-since stamp")
        stamped = parse_rfc3339(pv_annotations(kube_api, world["pv"])[MISSING])
        assert stamped is not None
        row = plan(kube_api, tmp_path, world["sc"])[world["pv"]]
        assert row["claimAction"] == "Wait" and row["timerStartsNow"] is False
        assert parse_rfc3339(row["eligibleAt"]) == stamped + DELAY
    finally:
        app.stop()


def test_the_plan_reads_a_directory_and_names_a_missing_class(tmp_path: Path, upstream: Path) -> None:
    # the PV the local static provisioner itself creates (its node is not in the manifests: gone),
    # as the API server stores it (with the uid it assigns) and Available, as the PV controller
    # makes it once no claim binds it
    pv = yaml.safe_load((upstream / "local-static-provisioner" / "derived" / "local-pv.yaml").read_text())
    pv["metadata"]["uid"] = str(uuid.uuid4())
    pv["status"] = {"phase": "Available"}
    sc = pv["spec"]["storageClassName"]  # nvme-ssd-block
    manifests = tmp_path / "m"
    manifests.mkdir()
    (manifests / "pv.yaml").write_text(yaml.safe_dump(pv))
    proc = run(tmp_path, "node-cleanup", "plan", "--from", str(manifests), "--storageclass-names", sc,
               "-o", "yaml")
    assert proc.returncode == 0, proc.stderr
    (row,) = yaml.safe_load(proc.stdout)["volumes"]
    assert (row["name"], row["claimAction"], row["volumeAction"]) == (pv["metadata"]["name"], "Keep", "Delete")
    missing = run(tmp_path, "node-cleanup", "plan", "--from", str(manifests))
    assert missing.returncode == EXIT_CONFIG
    assert missing.stderr.startswith("kustodian node-cleanup plan: --storageclass-names")
    assert len(missing.stderr.splitlines()) == 1
