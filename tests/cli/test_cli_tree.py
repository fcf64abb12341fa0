"""``explain-delete --tree`` and ``report --tree`` over Rook's own example manifests: provider ->
dependents, nested where a dependent has dependents, named and capped exactly as the guard's
message is; ASCII into a pipe, box drawing only on a UTF-8 terminal."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.cli.tree import ASCII, UNICODE, Node, charset_for, decision_tree, draw
from kustodian.policy.deletion import ObjectRef, decide_namespace_delete, rook_rules
from kustodian.policy.store import ListView, kind_key
from tests.ceph_csi import cephfs_pv, rbd_pv

from .support import run

UUID_PV = "pvc-{0:08x}-0000-4000-8000-{0:012x}"  # as long as the provisioner's pvc-<uid> names


def _class_parameters(path: Path) -> dict[str, str]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return dict(next(d for d in docs if d["kind"] == "StorageClass")["parameters"])


def rook_examples(upstream: Path, into: Path, rbd_volumes: int, cephfs_volumes: int = 2) -> Path:
    """Rook's example cluster, filesystem, NFS and both CSI StorageClasses (the rbd one carries
    the CephBlockPool replicapool), as written upstream, and PVs as ceph-csi makes them from
    those classes."""
    rook = upstream / "rook"
    into.mkdir()
    for name in ("cluster.yaml", "filesystem.yaml", "nfs.yaml"):
        shutil.copy(rook / name, into / name)
    shutil.copy(rook / "csi" / "rbd" / "storageclass.yaml", into / "rbd-storageclass.yaml")
    shutil.copy(rook / "csi" / "cephfs" / "storageclass.yaml", into / "cephfs-storageclass.yaml")
    rbd = _class_parameters(rook / "csi" / "rbd" / "storageclass.yaml")
    cephfs = _class_parameters(rook / "csi" / "cephfs" / "storageclass.yaml")
    pvs = [rbd_pv(UUID_PV.format(i), rbd) for i in range(rbd_volumes)]
    pvs += [cephfs_pv(f"pvc-fs-{i}", cephfs) for i in range(cephfs_volumes)]
    (into / "pvs.yaml").write_text(yaml.safe_dump_all(pvs))
    return into


def tree_of(stdout: str) -> list[str]:
    """The drawing: from the root line up to the blank line before the note."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line and not line.startswith(("|", "`", " "))
                 and i > 0 and not lines[i - 1])
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


CLUSTER_TREE = """\
CephCluster "rook-ceph/rook-ceph"
|-- CephBlockPools (1)
|   `-- replicapool
|       `-- PersistentVolumes (3)
|           |-- pvc-00000000-0000-4000-8000-000000000000
|           |-- pvc-00000001-0000-4000-8000-000000000001
|           `-- pvc-00000002-0000-4000-8000-000000000002
|-- CephFilesystemSubVolumeGroups (1)
|   `-- myfs-csi
|-- CephFilesystems (1)
|   `-- myfs
|       |-- CephFilesystemSubVolumeGroups (1)
|       |   `-- myfs-csi
|       `-- PersistentVolumes (2)
|           |-- pvc-fs-0
|           `-- pvc-fs-1
|-- CephNFSes (1)
|   `-- my-nfs
`-- PersistentVolumes (5)
    |-- pvc-00000000-0000-4000-8000-000000000000
    |-- pvc-00000001-0000-4000-8000-000000000001
    |-- pvc-00000002-0000-4000-8000-000000000002
    |-- pvc-fs-0
    `-- pvc-fs-1"""


def test_explain_delete_draws_the_cluster_with_its_pool_and_filesystem_nested(tmp_path: Path,
                                                                              upstream: Path) -> None:
    manifests = rook_examples(upstream, tmp_path / "rook", rbd_volumes=3)
    proc = run(tmp_path, "explain-delete", "CephCluster", "rook-ceph", "-n", "rook-ceph", "--from", str(manifests),
               "--tree")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == ('CephCluster "rook-ceph/rook-ceph" cannot be deleted: it has dependents: '
                        "CephBlockPools: [replicapool]; CephFilesystemSubVolumeGroups: [myfs-csi]; "
                        "CephFilesystems: [myfs]; CephNFSes: [my-nfs]; PersistentVolumes: ["
                        + ", ".join([*(UUID_PV.format(i) for i in range(3)), "pvc-fs-0", "pvc-fs-1"]) + "]")
    assert lines[1] == ""
    assert "\n".join(tree_of(proc.stdout)) == CLUSTER_TREE
    assert lines[len(CLUSTER_TREE.splitlines()) + 2] == ""
    assert lines[-1].startswith("note: not in the manifests, so not checked: ")
    assert "\x1b" not in proc.stdout  # no escape codes into a pipe


def message_groups(message: str) -> dict[str, list[str]]:
    """``Title: [a, b and N more]`` groups of a refusal: title -> the names and the ``and N more``."""
    out: dict[str, list[str]] = {}
    for title, body in re.findall(r"(\w+): \[([^\]]*)\]", message):
        names, _, more = body.partition(" and ")
        out[title] = [*names.split(", "), f"and {more}"] if more else names.split(", ")
    return out


def test_a_capped_group_names_what_the_message_names(tmp_path: Path, upstream: Path) -> None:
    """30 PVs of 40 characters do not fit the guard's 1 KiB message: the tree stops where the
    message stops and says how many more, at every level, each level as its own DELETE's message."""
    manifests = rook_examples(upstream, tmp_path / "rook", rbd_volumes=30)
    pool = run(tmp_path, "explain-delete", "CephBlockPool", "replicapool", "-n", "rook-ceph", "--from",
               str(manifests), "--tree")
    assert pool.returncode == 1, pool.stderr
    shown = 21
    assert tree_of(pool.stdout) == [
        'CephBlockPool "rook-ceph/replicapool"',
        "`-- PersistentVolumes (30)",
        *(f"    |-- {UUID_PV.format(i)}" for i in range(shown)),
        f"    `-- and {30 - shown} more",
    ]
    assert message_groups(pool.stdout.splitlines()[0]) == {
        "PersistentVolumes": [*(UUID_PV.format(i) for i in range(shown)), f"and {30 - shown} more"]}

    cluster = run(tmp_path, "explain-delete", "CephCluster", "rook-ceph", "-n", "rook-ceph", "--from",
                  str(manifests), "--tree")
    tree = tree_of(cluster.stdout)
    # the pool's branch under the cluster is the pool's own tree, moved right
    at = tree.index("|   `-- replicapool")
    assert [line[8:] for line in tree[at + 1:at + 2 + shown + 1]] == tree_of(pool.stdout)[1:]
    # the cluster's own PersistentVolumes group stops where the cluster's message stops
    cut = message_groups(cluster.stdout.splitlines()[0])["PersistentVolumes"]
    assert cut[-1] == "and 13 more" and len(cut) == 20
    last = tree.index("`-- PersistentVolumes (32)")
    assert [line[8:] for line in tree[last + 1:]] == cut


def test_report_draws_one_tree_per_provider_no_other_tree_holds(tmp_path: Path, upstream: Path) -> None:
    manifests = rook_examples(upstream, tmp_path / "rook", rbd_volumes=3)
    proc = run(tmp_path, "report", "--from", str(manifests), "--tree")
    assert proc.returncode == 0, proc.stderr
    # the pool and the filesystem are protected too, and both are drawn under the cluster
    assert proc.stdout == CLUSTER_TREE + "\n"
    flat = run(tmp_path, "report", "--from", str(manifests))
    assert [line.split()[0] for line in flat.stdout.splitlines()[1:]] == [
        "CephBlockPool/replicapool", "CephCluster/rook-ceph", "CephFilesystem/myfs"]


def test_report_gives_a_provider_only_reached_through_a_cycle_its_own_tree(tmp_path: Path,
                                                                          upstream: Path) -> None:
    """Rook's multisite example: realm -> zone group -> zone -> store -> the store's zone group
    again. Nothing is drawn twice along one path, and the walk ends."""
    (tmp_path / "rook").mkdir()
    for name in ("cluster.yaml", "object-multisite.yaml"):
        shutil.copy(upstream / "rook" / name, tmp_path / "rook" / name)
    proc = run(tmp_path, "report", "--from", str(tmp_path / "rook"), "--tree", timeout=30)
    assert proc.returncode == 0, proc.stderr
    roots = [line for line in proc.stdout.splitlines() if line and line[0] not in "|` "]
    assert roots == ['CephCluster "rook-ceph/rook-ceph"']
    tree = proc.stdout.splitlines()
    assert tree[1:9] == [
        "|-- CephObjectRealms (1)",
        "|   `-- realm-a",
        "|       `-- CephObjectZoneGroups (1)",
        "|           `-- zonegroup-a",
        "|               `-- CephObjectZones (1)",
        "|                   `-- zone-a",
        "|                       `-- CephObjectStores (1)",
        "|                           `-- multisite-store",
    ]
    assert tree[10] == "|                                   `-- zonegroup-a"  # and not its zones again


def test_tree_with_json_or_yaml_is_one_line_naming_the_flags(tmp_path: Path) -> None:
    for command in (["explain-delete", "CephBlockPool", "replicapool", "-n", "rook-ceph"], ["report"]):
        proc = run(tmp_path, *command, "--from", str(tmp_path), "--tree", "-o", "json")
        assert proc.returncode == 2, proc.stdout
        assert proc.stderr.count("\n") == 1 and "--tree with -o json" in proc.stderr, proc.stderr
        assert proc.stdout == ""


class _Terminal(io.TextIOWrapper):
    def isatty(self) -> bool:
        return True


def test_box_drawing_only_on_a_utf8_terminal() -> None:
    assert charset_for(_Terminal(io.BytesIO(), encoding="utf-8")) is UNICODE
    assert charset_for(_Terminal(io.BytesIO(), encoding="latin-1")) is ASCII
    assert charset_for(io.TextIOWrapper(io.BytesIO(), encoding="utf-8")) is ASCII  # a pipe or a file
    tree = Node("CephBlockPool \"rook-ceph/replicapool\"", (
        Node("CephNFSes (1)", (Node("nfs-a"),)), Node("PersistentVolumes (2)", (Node("pv-1"), Node("pv-2")))))
    assert draw(tree, UNICODE) == [
        'CephBlockPool "rook-ceph/replicapool"',
        "├── CephNFSes (1)",
        "│   └── nfs-a",
        "└── PersistentVolumes (2)",
        "    ├── pv-1",
        "    └── pv-2",
    ]


def _view(docs: list[dict[str, Any]]) -> ListView:
    objects: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        objects.setdefault(kind_key(doc["apiVersion"], doc["kind"]), []).append(doc)
    return ListView(objects, rook_rules().indexers())


def test_a_namespace_tree_has_a_branch_per_blocking_provider() -> None:
    """A Namespace's DELETE is refused for the providers in it whose dependents live outside it."""
    from tests.ceph_csi import RBD_CLASS

    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "rook-ceph"}},
        {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
         "metadata": {"name": "replicapool", "namespace": "rook-ceph"}, "spec": {"replicated": {"size": 3}}},
        rbd_pv("pv-a", RBD_CLASS), rbd_pv("pv-b", RBD_CLASS),
    ]
    view = _view(docs)
    decision = decide_namespace_delete("rook-ceph", view, rook_rules())
    assert not decision.allowed
    tree = decision_tree(ObjectRef("Namespace", "", "rook-ceph"), decision, view, rook_rules(), None)
    assert draw(tree) == [
        'Namespace "rook-ceph"',
        "`-- CephBlockPool replicapool",
        "    `-- PersistentVolumes (2)",
        "        |-- pv-a",
        "        `-- pv-b",
    ]


@pytest.mark.parametrize("names", [1, 200])
def test_the_named_groups_are_the_message_s_names(names: int) -> None:
    """The counts a decision keeps are the ones its message rendered (the tree draws from them)."""
    from tests.ceph_csi import RBD_CLASS

    pool = {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
            "metadata": {"name": "replicapool", "namespace": "rook-ceph"}, "spec": {}}
    view = _view([pool, *(rbd_pv(UUID_PV.format(i), RBD_CLASS) for i in range(names))])
    from kustodian.policy.deletion import decide_delete

    decision = decide_delete("CephBlockPool.ceph.rook.io", pool, view, rook_rules())
    ((provider, (group,)),) = decision.named
    assert provider == ObjectRef("CephBlockPool.ceph.rook.io", "rook-ceph", "replicapool")
    shown = [r.name for r in group.refs[:group.shown]]
    more = [f"and {names - group.shown}"] if names > group.shown else []
    expected = [*shown, *(f"{m} more" for m in more)]
    assert message_groups(decision.message)["PersistentVolumes"] == expected
    assert len(decision.message.encode()) <= 1024
