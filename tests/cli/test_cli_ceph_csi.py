"""The CLI knows ceph-csi-operator's kinds (issue 43): ``explain-delete`` takes them as kubectl does
(kind, resource, ``resource/NAME``, ``resource.group``), ``--tree`` nests a CephConnection's profiles
and their volumes, ``report`` lists them, completion offers them; over Rook's own ``operator.yaml``
(its two Drivers) and ClientProfiles as Rook's ``csi/config.go`` writes them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.ceph_csi import CEPHFS_CLASS, RBD_CLASS, cephfs_pv, rbd_pv

from .support import run
from .test_cli_completion_values import complete
from .test_cli_tree import tree_of

NS = "rook-ceph"
RBD = "rook-ceph.rbd.csi.ceph.com"
LOSES_CLUSTER_ID = ("PersistentVolumes (deleting it removes their clusterID from ceph-csi's configuration: they "
                    "could no longer be mounted, unmounted or deleted)")
CONNECTED = ("ClientProfiles (their monitors: ceph-csi-operator reads it to update them, and to finish deleting "
             "them; volumes under their clusterIDs would be stranded)")


@pytest.fixture
def manifests(tmp_path: Path, upstream: Path) -> Path:
    into = tmp_path / "manifests"
    into.mkdir()
    shutil.copy(upstream / "ceph-csi-operator" / "rook" / "operator.yaml", into / "operator.yaml")
    docs = [{"apiVersion": "csi.ceph.io/v1", "kind": "CephConnection", "metadata": {"name": NS, "namespace": NS},
             "spec": {"monitors": ["10.0.0.1:6789"]}},
            {"apiVersion": "csi.ceph.io/v1", "kind": "ClientProfile", "metadata": {"name": NS, "namespace": NS},
             "spec": {"cephConnectionRef": {"name": NS}}},
            rbd_pv("pvc-a", RBD_CLASS), cephfs_pv("pvc-b", CEPHFS_CLASS)]
    (into / "csi.yaml").write_text(yaml.safe_dump_all(docs))
    return into


@pytest.mark.parametrize("spelling", [("ClientProfile", NS), ("clientprofiles", NS), (f"clientprofiles/{NS}",),
                                      ("clientprofiles.csi.ceph.io", NS), ("ClientProfile.csi.ceph.io", NS)],
                         ids=["kind", "resource", "resource/NAME", "resource.group", "kind-key"])
def test_explain_delete_takes_a_client_profile_as_kubectl_does(
        tmp_path: Path, manifests: Path, spelling: tuple[str, ...]) -> None:
    proc = run(tmp_path, "explain-delete", *spelling, "-n", NS, "--from", str(manifests))
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (f'ClientProfile "{NS}/{NS}" cannot be deleted: it has dependents: '
                        f"{LOSES_CLUSTER_ID}: [pvc-a, pvc-b]")
    assert [line.split() for line in lines[2:5]] == [["KIND", "NAMESPACE", "NAME"], ["PersistentVolume", "pvc-a"],
                                                     ["PersistentVolume", "pvc-b"]]


def test_the_tree_nests_a_connections_profiles_and_their_volumes(tmp_path: Path, manifests: Path) -> None:
    proc = run(tmp_path, "explain-delete", "cephconnection", NS, "-n", NS, "--from", str(manifests), "--tree")
    assert proc.returncode == 1, proc.stderr
    assert tree_of(proc.stdout) == [
        f'CephConnection "{NS}/{NS}"',
        f"`-- {CONNECTED} (1)",
        f"    `-- {NS}",
        f"        `-- {LOSES_CLUSTER_ID} (2)",
        "            |-- pvc-a",
        "            `-- pvc-b",
    ]


def test_report_lists_the_drivers_and_profiles_in_use(tmp_path: Path, manifests: Path) -> None:
    proc = run(tmp_path, "report", "--from", str(manifests))
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[1:] if line.strip()}
    assert {"CephConnection/rook-ceph", "ClientProfile/rook-ceph", f"Driver/{RBD}",
            "Driver/rook-ceph.cephfs.csi.ceph.com"} <= set(rows)
    assert rows[f"Driver/{RBD}"].endswith("they could no longer be mounted, unmounted or deleted): 1")


def test_completion_offers_the_ceph_csi_kinds(tmp_path: Path) -> None:
    script = tmp_path / "kustodian.bash"
    made = run(tmp_path, "completion", "bash")
    assert made.returncode == 0, made.stderr
    script.write_text(made.stdout)
    offered = set(complete(script, tmp_path, "explain-delete", ""))
    assert {"ClientProfile", "clientprofiles", "Driver", "drivers", "CephConnection", "cephconnections",
            "ClientProfileMapping", "clientprofilemappings"} <= offered
    assert complete(script, tmp_path, "explain-delete", "ClientP") == ["ClientProfile", "ClientProfileMapping"]
